"""The copy-direction arm's validation grid (plan: PLAN.md beside this file).

    PYTHONPATH=. python results/experiments/gaussian-copy-direction/grid.py release=<35dcd63's density_metric/default> \
        bundled=<6cf7ce3's density_metric/default> > results/experiments/gaussian-copy-direction/grid.md

("bundled": the parrot release, the bundled default when this ran; now in git history.)

The first checkpoint is the arm's (its u is made from its features, the beta grid applied to its precision);
the others are measured at beta = 0 for comparison. Writes the table to stdout and u to
runs/copy-direction/u.npy.
"""

import sys
import time
from pathlib import Path

import numpy as np
from density_train.commands.train import load_dev_judgments
from density_train.data.corpora import load_dailydialog, response_pairs_with_dialogues
from density_train.data.examples import SelectionData
from density_train.evaluation.validation import last_turn_overlap
from density_train.negatives.mix import validation_candidates

from benchmarks.checkpoints import named_checkpoints
from density_metric.correlation import auc, pearson, spearman
from density_metric.gaussian import mahalanobis
from density_metric.scoring import DensityScorer

DATA = "../shared/data/dailydialog"
COPY_KINDS = ["echo", "speaker", "earlier"]
VALID_KINDS = ["random", "echo", "speaker", "repeat", "earlier", "span"]
BETAS = [0, 1, 3, 10, 30, 100, 300]
SHRINKAGE = 0.1


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def validation_pairs() -> SelectionData:
    """The first 500 DailyDialog validation pairs, as every run's evaluation reads them."""
    valid = SelectionData.from_pairs(*response_pairs_with_dialogues(load_dailydialog(DATA, "validation")))
    return valid.select(range(500))


def training_sample() -> SelectionData:
    """The 3,000 training pairs that u is made from (numpy default_rng(0))."""
    train = SelectionData.from_pairs(*response_pairs_with_dialogues(load_dailydialog(DATA, "train")))
    return train.select(np.sort(np.random.default_rng(0).choice(len(train), size=3000, replace=False)))


def fisher_direction(golds: np.ndarray, copies: np.ndarray) -> np.ndarray:
    """The Fisher direction from copies towards golds, S_w^-1 (m_gold - m_copy), S_w the mean of the two
    covariances shrunk as the density term's bank is, scaled so that the golds' projections have variance 1."""
    within = 0.5 * (np.cov(golds, rowvar=False) + np.cov(copies, rowvar=False))
    d = within.shape[0]
    within = (1 - SHRINKAGE) * within + SHRINKAGE * np.trace(within) / d * np.eye(d)
    u = np.linalg.solve(within, golds.mean(0) - copies.mean(0))
    return u / (golds @ u).std()


def copy_direction(scorer: DensityScorer) -> np.ndarray:
    """u: the Fisher direction between the training sample's golds and their copies."""
    data = training_sample()
    copies = validation_candidates(data, COPY_KINDS, seed=0, fallback=False)
    golds = scorer.features(data.contexts, data.responses).astype(np.float64)
    pairs = [(data.contexts[i], copies[k][i]) for k in COPY_KINDS for i in range(len(data)) if copies[k][i]]
    copy_features = scorer.features([c for c, _ in pairs], [r for _, r in pairs]).astype(np.float64)
    log(f"u from {len(golds)} golds and {len(copy_features)} copies")
    return fisher_direction(golds, copy_features)


def main() -> None:
    named = list(named_checkpoints(sys.argv[1:]).items())
    valid = validation_pairs()
    candidates = validation_candidates(valid, VALID_KINDS, seed=42)
    dev = load_dev_judgments("../shared/data")
    overlap = last_turn_overlap(dev.contexts, dev.responses)
    columns = [f"AUC {k}" for k in VALID_KINDS] + ["mean echo/speaker/repeat", "dev r", "dev rho", "dev overlap rho"]
    print(f"| checkpoint | beta | {' | '.join(columns)} |")
    print("|" + " --- |" * (len(columns) + 2))
    u = None
    for number, (name, path) in enumerate(named):
        scorer = DensityScorer(path, device="cpu", dtype="float32", progress=False)
        log(f"{name}: features")
        groups = [valid.responses] + [candidates[k] for k in VALID_KINDS]
        feats = [scorer.features(valid.contexts, responses).astype(np.float64) for responses in groups]
        dev_feats = scorer.features(dev.contexts, dev.responses).astype(np.float64)
        if number == 0:
            u = copy_direction(scorer)
            Path("runs/copy-direction").mkdir(parents=True, exist_ok=True)
            np.save("runs/copy-direction/u.npy", u)
        mean, precision = scorer.stats.mean, scorer.stats.precision
        for beta in BETAS if number == 0 else [0]:
            tightened = precision + beta * np.outer(u, u)
            scores = [-mahalanobis(f, mean, tightened) for f in feats]
            aucs = {k: auc(scores[0], scores[i]) for i, k in enumerate(VALID_KINDS, start=1)}
            dev_scores = -mahalanobis(dev_feats, mean, tightened)
            cells = [aucs[k] for k in VALID_KINDS] + [np.mean([aucs[k] for k in ("echo", "speaker", "repeat")])]
            cells += [100 * pearson(dev_scores, dev.human), 100 * spearman(dev_scores, dev.human)]
            cells += [100 * spearman(dev_scores, overlap)]
            print(
                f"| {name} | {beta} | "
                + " | ".join([f"{c:.3f}" for c in cells[:-3]] + [f"{c:.2f}" for c in cells[-3:]])
                + " |"
            )
            sys.stdout.flush()
    log("done")


if __name__ == "__main__":
    main()
