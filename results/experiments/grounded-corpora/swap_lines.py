"""Exploratory, validation only: does the bundled model read the grounding lines at all? Each held-out gold that uses
its lines is scored twice, after its own lines and after another dialogue's lines (the same turns); a model that
reads them scores the first higher.

    PYTHONPATH=. python results/experiments/grounded-corpora/swap_lines.py [--checkpoint default] [--data ../shared/data] [--out FILE]

Sets: the ConvAI2 grounding set (1,200 seeded golds of convai2/valid_unused_by_benchmarks.txt) and the held-out golds
of PersonaChat and Topical-Chat (train/evaluation/grounding_validation.py's GroundingSet). Only golds whose content-word overlap
with their own lines is at least USES_LINES (0.2) count (they use them). The other lines come from a seeded derangement over
the set's golds, so each gold gets the lines of another one (Topical-Chat: another turn's knowledge, possibly of the
same conversation, so a swap of the same text is skipped). Reported per set and per cut (contexts as they are, and
with ``PairFormat.keep_lines``): the share of golds scoring higher with their own lines (ties half), and the mean
score difference. The checkpoint's scorer and Gaussian (the bundled one by default); nothing is trained or fitted.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from density_train.data.grounded_corpora import load_personachat, load_topical_chat
from density_train.evaluation.grounding_validation import USES_LINES, GroundingSet

from density_metric import DensityScorer

SEED = 0


def swapped(data: GroundingSet) -> tuple[list[list[str]], list[list[str]], list[str], list[int]]:
    """(own contexts, swapped contexts, golds, line counts) of the golds that use their lines."""
    used = np.flatnonzero(data.persona >= USES_LINES)
    rng = np.random.default_rng(SEED)
    order = used[rng.permutation(len(used))]
    other = np.roll(order, 1)  # a derangement of the used golds: each takes the lines of the one before it
    own, swap, golds, lines = [], [], [], []
    for i, j in zip(order, other):
        mine, theirs = data.contexts[i][: data.lines[i]], data.contexts[j][: data.lines[j]]
        if mine == theirs:
            continue
        turns = data.contexts[i][data.lines[i] :]
        own.append(mine + turns)
        swap.append(theirs + turns)
        golds.append(data.golds[i])
        lines.append((data.lines[i], data.lines[j]))
    return own, swap, golds, lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", default="default")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    scorer = DensityScorer(args.checkpoint)
    tokenizer, pair_format = scorer.encoder.tokenizer, scorer.encoder.pair_format
    sets = {
        "convai2": GroundingSet.load(args.data / "convai2" / "valid_unused_by_benchmarks.txt"),
        "personachat": GroundingSet.from_dialogues(
            load_personachat(args.data / "personachat_train_subset", "validation"), name="personachat"
        ),
        "topical_chat": GroundingSet.from_dialogues(
            load_topical_chat(args.data / "topical_chat_valid", "validation"), name="topical_chat"
        ),
    }
    report = {
        "checkpoint": args.checkpoint,
        "signature": scorer.signature,
        "min_use": USES_LINES,
        "seed": SEED,
        "sets": {},
    }
    print("| set | golds using their lines | cut | own lines score higher | mean score difference |")
    print("| --- | --- | --- | --- | --- |")
    for name, data in sets.items():
        own, swap, golds, lines = swapped(data)
        report["sets"][name] = {"n": len(golds)}
        for cut in ("as it is", "lines kept"):
            a, b = own, swap
            if cut == "lines kept":
                a = pair_format.keep_lines(tokenizer, own, [n for n, _ in lines])
                b = pair_format.keep_lines(tokenizer, swap, [n for _, n in lines])
            first, second = -scorer.distances(a, golds), -scorer.distances(b, golds)
            win = float(np.mean((first > second) + 0.5 * (first == second)))
            diff = float(np.mean(first - second))
            report["sets"][name][cut] = {"own_wins": win, "mean_difference": diff}
            print(f"| {name} | {len(golds)} | {cut} | {win:.3f} | {diff:+.3f} |")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
