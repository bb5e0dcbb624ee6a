"""Issue 31, a validation-only look (plan and reading rule: PLAN.md beside this file): does a density that also sees
the reply's repetition put repeated words far out, and what does that cost on `dev`?

The density of the bundled model over g(c, r) alone (the control) and over g(c, r) with repetition statistics of the
reply's word pieces appended, each Gaussian fitted (pinv, as shipped) on the same 20,000 training golds as the
sharper look (seed 43), judged on the sharper look's 500 validation pairs and one negative of each kind
(density_train.negatives.mix.validation_candidates, seed 43), and on DailyDialog-Zhao `dev` (n = 160). Features are computed
once and kept in runs/repetition-look/features.npz. Nothing here is fitted on all pairs, measured on test or shipped.
Usage, from the repository root, alone on the CPU: PYTHONPATH=. python results/experiments/repetition-term/look.py [CHECKPOINT]
"""

import dataclasses
import sys
from pathlib import Path

import numpy as np
from density_train.commands.train import load_dev_judgments
from density_train.data.corpora import load_dailydialog, response_pairs_with_dialogues
from density_train.data.examples import SelectionData
from density_train.negatives.mix import validation_candidates

from density_metric import DensityScorer
from density_metric.correlation import auc, spearman
from density_metric.encoding.features import Encoder
from density_metric.gaussian import GaussianAccumulator, GaussianStats
from density_metric.repetition import rep2

CHECKPOINT = sys.argv[1] if len(sys.argv) > 1 else "density_metric/default"
SEED, FIT, VALID = 43, 20_000, 500
KINDS = ("random", "echo", "speaker", "repeat", "earlier", "span")
OUT = Path("runs/repetition-look")


def repetition_statistics(pieces: list[list[int]]) -> np.ndarray:
    """(n, 2) per reply: the share of its word pieces that repeat the piece just before (a word said again at once),
    and rep-2, 1 - distinct piece bigrams / bigrams (Welleck et al., ICLR 2020: a span said again); 0 where a reply
    has fewer than 2 pieces."""
    out = np.zeros((len(pieces), 2))
    for row, ids in enumerate(pieces):
        if len(ids) >= 2:
            out[row, 0] = np.mean(np.diff(ids) == 0)
    out[:, 1] = rep2(pieces)  # the library's, as a checkpoint with the term computed it here (before 667ed7f a
    # reply's special-token text was the token there too; DailyDialog has none, so the numbers stand)
    return out


def gaussian_of(features: np.ndarray) -> GaussianStats:
    """The shipped estimator (pinv) fitted on the rows of ``features``, in float64."""
    accumulator = GaussianAccumulator(features.shape[1])
    accumulator.update(features.astype(np.float64))
    return GaussianStats.fit(accumulator)


def look_parts(seed: int) -> tuple[dict, np.ndarray]:
    """The look's (contexts, replies) per part ("fit": FIT training golds drawn with ``seed``; "gold": the first VALID
    validation golds; one part per kind: their negatives of ``seed``; "dev"), and the `dev` human scores."""
    train = SelectionData.from_pairs(
        *response_pairs_with_dialogues(load_dailydialog("../shared/data/dailydialog", "train"))
    )
    valid = SelectionData.from_pairs(
        *response_pairs_with_dialogues(load_dailydialog("../shared/data/dailydialog", "validation"))
    ).select(range(VALID))
    rows = np.sort(np.random.default_rng(seed).choice(len(train), size=FIT, replace=False))
    negatives = validation_candidates(valid, KINDS, seed=seed)
    dev = load_dev_judgments("../shared/data")
    parts = {
        "fit": ([train.contexts[i] for i in rows], [train.responses[i] for i in rows]),
        "gold": (valid.contexts, valid.responses),
        **{kind: (valid.contexts, negatives[kind]) for kind in KINDS},
        "dev": (dev.contexts, dev.responses),
    }
    return parts, np.asarray(dev.human)


def measured(checkpoint: str, seed: int, cache: Path, pooling: str | None = None) -> tuple[dict, dict, np.ndarray]:
    """(features, statistics, dev human scores): per part ("fit": FIT training golds drawn with ``seed``; "gold": the
    first VALID validation golds; one part per kind: their negatives of ``seed``; "dev"), g(c, r) (cached in ``cache``)
    and the repetition statistics of the reply. ``pooling`` reads g with another pooling than the checkpoint's."""
    scorer = DensityScorer(checkpoint, device="cpu", dtype="float32")
    if pooling is not None:
        pair_format = dataclasses.replace(scorer.encoder.pair_format, pooling=pooling)
        scorer.encoder = Encoder.load(scorer.checkpoint.encoder_path, pair_format, device="cpu", dtype="float32")
    tokenizer = scorer.encoder.tokenizer
    parts, human = look_parts(seed)
    cache.parent.mkdir(parents=True, exist_ok=True)
    if cache.is_file():
        features = dict(np.load(cache, allow_pickle=False))
    else:
        features = {name: scorer.features(*pair) for name, pair in parts.items()}
        np.savez(cache, **features)
    stats = {
        name: repetition_statistics(tokenizer(list(pair[1]), add_special_tokens=False)["input_ids"])
        for name, pair in parts.items()
    }
    return features, stats, human


def main() -> None:
    features, stats, human = measured(CHECKPOINT, SEED, OUT / "features.npz")
    variants = {
        "control: g": lambda name: features[name],
        "g + repeated piece": lambda name: np.hstack([features[name], stats[name][:, :1]]),
        "g + repeated piece + rep-2": lambda name: np.hstack([features[name], stats[name]]),
    }
    print(f"{CHECKPOINT}: Gaussian of {FIT:,} training golds, {VALID} validation pairs, dev n = {len(human)}")
    print(
        "share of fit golds with a repeated piece / rep-2 > 0:",
        *(f"{(stats['fit'][:, j] > 0).mean():.4f}" for j in (0, 1)),
    )
    print("| variant | " + " | ".join(f"density AUC {kind}" for kind in KINDS) + " | `dev` Spearman |")
    print("| --- " * (len(KINDS) + 2) + "|")
    for label, view in variants.items():
        gaussian = gaussian_of(view("fit"))
        gold = -gaussian.distances(view("gold"))
        aucs = [auc(gold, -gaussian.distances(view(kind))) for kind in KINDS]
        dev_rho = 100 * spearman(-gaussian.distances(view("dev")), human)
        print(f"| {label} | " + " | ".join(f"{a:.4f}" for a in aucs) + f" | {dev_rho:.2f} |")


if __name__ == "__main__":
    main()
