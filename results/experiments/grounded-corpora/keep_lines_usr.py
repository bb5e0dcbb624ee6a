"""The scoring-time cut on the two judgment sets with grounding lines (NOTES.md, selected on validation before this ran).

    PYTHONPATH=. python results/experiments/grounded-corpora/keep_lines_usr.py [--checkpoint default] [--data ../shared/data]

ConvAI2-USR and TopicalChat-USR with the bundled checkpoint and the README's protocol (``paper``, through
benchmarks.human_correlation.evaluate_turn_set, persona or fact lines in front of the context as there): the DEnsity
column with the contexts as the benchmark gives them, and with ``PairFormat.keep_lines`` (the lines read whole where
they fit, the oldest turns dropped instead). Writes keep_lines_usr.json beside this file and prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from density_train.data.judgments import facts_of, load_sets

from benchmarks.human_correlation import ModelColumns, evaluate_turn_set
from density_metric import DensityScorer

SETS = ["convai2_usr", "topicalchat_usr"]
PROTOCOL = "paper"


class LinesKept:
    """ModelColumns on the contexts cut by keep_lines; ``lines`` (per row of the set being scored) is set before."""

    supervised = False

    def __init__(self, columns: ModelColumns):
        self.columns, self.lines = columns, []
        self.cut = 0

    def reports(self, set_name: str, protocol: str) -> bool:
        return True

    def __call__(self, contexts, responses, references=None):
        encoder = self.columns.scorer.encoder
        kept = encoder.pair_format.keep_lines(encoder.tokenizer, contexts, self.lines)
        self.cut = sum(new != old for new, old in zip(kept, contexts))
        return {f"{name} (lines kept)": column for name, column in self.columns(kept, responses, references).items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", default="default")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    args = parser.parse_args()
    scorer = DensityScorer(args.checkpoint)
    plain = ModelColumns(scorer, "")
    kept = LinesKept(plain)
    report = {"checkpoint": args.checkpoint, "signature": scorer.signature, "protocol": PROTOCOL, "sets": {}}
    print(f"| set (rows, {PROTOCOL}) | contexts changed | DEnsity as today | lines kept |")
    print("| --- | --- | --- | --- |")
    for judgments in load_sets(args.data, SETS):
        kept.lines = [len(facts_of(row)) for row in judgments.rows]
        result = evaluate_turn_set(judgments, [plain, kept], with_facts=True, protocols=(PROTOCOL,))[PROTOCOL]
        before, after = result["DEnsity"], result["DEnsity (lines kept)"]
        rows = result["DEnsity"].get("n")
        report["sets"][judgments.name] = {
            "changed": kept.cut,
            "rows": len(judgments.rows),
            "as_today": before,
            "lines_kept": after,
        }
        cells = [f"{r['pearson']:.1f} / {r['spearman']:.1f}" for r in (before, after)]
        print(f"| {judgments.name} ({rows}) | {kept.cut} of {len(judgments.rows)} | {cells[0]} | {cells[1]} |")
    (Path(__file__).parent / "keep_lines_usr.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
