"""The few-shot rating head under Zhao et al.'s protocol on DailyDialog-Zhao.

    python -m benchmarks.few_shot --checkpoint default --out results/bundled-default/few-shot

The head (``python -m train calibrate``) learns from the set's first 20 % of rows (the
``dev`` protocol of :mod:`density_train.data.judgments`: the authors' validation rows, ground truth dropped,
MAD-filtered ratings) and is tested on the last 80 % (the ``paper`` protocol), as Zhao et al.
(ACL 2020) did with 720 training ratings. Writes ``few_shot.json`` and ``few_shot.md``: Pearson and
Spearman (x100) of the predicted ratings, of the plain DEnsity score on the same rows, and Zhao
et al.'s published numbers beside them. Supervised: never mix it into the unsupervised rows.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from density_metric.io.outputs import write_json, write_text
from density_train.data.judgments import apply_protocol, context_of

from .command_line import check_checkpoint, check_counts, check_out_folder, check_sets
from .human_correlation import correlation
from .sets import PUBLISHED

SET = "dailydialog_zhao"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.few_shot", description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default="default")
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    check_counts(parser, args, "--folds", least=2)  # cross-validation needs two
    check_out_folder(parser, "--out", args.out)
    [judgments] = check_sets(parser, args.data_dir, [SET])
    check_checkpoint(parser, args.checkpoint)

    from density_metric import DensityScorer
    from density_train.commands.calibrate import calibrate

    dev, dev_ratings = apply_protocol(judgments, "dev")
    test, test_ratings = apply_protocol(judgments, "paper")
    rows = judgments.rows
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        ratings = Path(scratch) / "dev_ratings.jsonl"
        ratings.write_text(
            "".join(
                json.dumps({"context": context_of(rows[i], False), "response": rows[i]["response"], "score": float(s)})
                + "\n"
                for i, s in zip(dev, dev_ratings)
            ),
            encoding="utf-8",
        )
        fit = calibrate(
            args.checkpoint, ratings, Path(scratch) / "rated", folds=args.folds, seed=args.seed, dtype="float32"
        )
        result = DensityScorer(str(Path(scratch) / "rated"), dtype="float32").score(
            [context_of(rows[i], False) for i in test], [rows[i]["response"] for i in test]
        )
    report = {
        "checkpoint": fit["checkpoint"],
        "revision": fit["revision"],
        "command": "python -m benchmarks.few_shot "
        + " ".join(argv if argv is not None else __import__("sys").argv[1:]),
        "train": {"set": SET, "protocol": "dev", "ratings": len(dev)},
        "test": {"set": SET, "protocol": "paper", "rows": len(test)},
        "head": {k: fit[k] for k in ("inputs", "alpha", "cv_mse", "train_mse")},
        "rating head": correlation(result.ratings, test_ratings),
        "DEnsity (no ratings)": correlation(result.scores, test_ratings),
        "published": PUBLISHED["Zhao et al. 2020, RoBERTa, supervised"][SET],
    }
    write_json(args.out / "few_shot.json", report)
    lines = [
        f"# Few-shot rating head on {SET} (supervised)",
        "",
        f"`{report['command']}`; checkpoint `{report['checkpoint']}@{report['revision']}`.",
        f"Trained on the {len(dev)} `dev` ratings (first 20 %), tested on the {len(test)} `paper` rows (last 80 %).",
        "",
        "| metric | n test rows | Pearson | Spearman |",
        "| --- | --- | --- | --- |",
    ]
    for name in ("rating head", "DEnsity (no ratings)"):
        c = report[name]
        lines.append(f"| {name} | {c['n']} | {c['pearson']:.2f} | {c['spearman']:.2f} |")
    published = report["published"]
    lines.append(
        f"| Zhao et al. 2020 (published; RoBERTa, 720 ratings) | – | {published['pearson']:.2f} | {published['spearman']:.2f} |"
    )
    write_text(args.out / "few_shot.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
