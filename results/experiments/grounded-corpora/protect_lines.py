"""Exploratory, validation only: does the bundled model follow persona use better when the persona lines survive the
cut? (NOTES.md: contexts are cut from the left, so the lines, which come first, go first.)

    PYTHONPATH=. python results/experiments/grounded-corpora/protect_lines.py [--data ../shared/data] [--out FILE]

For the ConvAI2 grounding set (1,200 seeded golds of convai2/valid_unused_by_benchmarks.txt) and the held-out
PersonaChat golds, each with its echo and 4 distractors (train/evaluation/grounding_validation.py), the signals with every
context as it is, and with the oldest dialogue turns dropped (never the last turn) until the "your persona:" lines and
the remaining turns fit the checkpoint's context budget, so that the encoder reads the lines whole where it can. The
same scorer and Gaussian (the bundled checkpoint's); nothing is trained or fitted. Not a scoring option: a look at
whether one is worth building.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from density_train.data.grounded_corpora import load_personachat
from density_train.evaluation.grounding_validation import GroundingSet, evaluate_scores

from density_metric import DensityScorer

KEYS = ("persona_spearman", "last_turn_spearman", "echo_win", "recall_at_1")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    scorer = DensityScorer("default")
    tokenizer, pair_format = scorer.encoder.tokenizer, scorer.encoder.pair_format
    sets = {
        "convai2": GroundingSet.load(args.data / "convai2" / "valid_unused_by_benchmarks.txt"),
        "personachat": GroundingSet.from_dialogues(
            load_personachat(args.data / "personachat_train_subset", "validation"), name="grounding_personachat"
        ),
    }
    report = {}
    print("| set | contexts | context as it is | persona lines kept whole where they fit |")
    print("| --- | --- | --- | --- |")
    for name, data in sets.items():

        def score(contexts, responses):
            return -scorer.distances(contexts, responses)

        before = evaluate_scores(score, data)
        kept = data.with_lines_kept(tokenizer, pair_format)  # PairFormat.keep_lines, the lines known per gold
        changed = sum(new != old for new, old in zip(kept.contexts, data.contexts))
        after = evaluate_scores(score, kept)
        prefix = data.name + "/"
        row = {key: (before[prefix + key], after[prefix + key]) for key in KEYS}
        report[name] = {"n": len(data), "changed": changed, **row}
        cells = "; ".join(f"{key} {b:.3f}" if abs(b) <= 1 else f"{key} {b:.2f}" for key, (b, _) in row.items())
        cells_after = "; ".join(f"{key} {a:.3f}" if abs(a) <= 1 else f"{key} {a:.2f}" for key, (_, a) in row.items())
        print(f"| {name} | {len(data)} ({changed} cut differently) | {cells} | {cells_after} |")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
