"""A GPU arm's meta-evaluation beside the bundled model's, set by set, with paired intervals (issue 67, PLAN.md).

    PYTHONPATH=. python results/experiments/gpu-schedule/compare.py E1 runs/gpu-E1/meta/human_correlation \
        > results/experiments/gpu-schedule/E1/COMPARE.md

Reads two ``benchmarks.human_correlation`` folders (``human_correlation.json`` and ``scores.safetensors``): the arm's
and the bundled model's committed ``results/bundled-default/``. For every judgment set, on the `paper` protocol's
rows where the set has one (DailyDialog-Zhao: its last 80 %) and on every row otherwise, the DEnsity Pearson and
Spearman of both and the arm's minus the bundled model's with its 95 % interval over 10,000 paired resamples of the
rows (seed 0; ``density_metric.comparison.significance``); then the probes of both reports. It computes nothing
from a checkpoint, and checks that the saved per-row scores reproduce each report's correlations.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

from benchmarks.paired_bootstrap import resampled_correlations
from density_metric.comparison.significance import bootstrap_indices, percentile_ci
from density_train.data.judgments import apply_protocol, has_protocol, load_sets

BUNDLED = Path(__file__).resolve().parents[2] / "bundled-default"
RESAMPLES = 10_000
PROBES = ("echo", "speaker_confused", "random", "repetition", "shuffled", "generic_yes", "generic_okay")


def column(name: str) -> str:
    return "DEnsity dialogue (mean)" if name == "fed_dialogue" else "DEnsity"


def rows_of(folder: Path) -> tuple[dict, dict]:
    return json.loads((folder / "human_correlation.json").read_text()), load_file(str(folder / "scores.safetensors"))


def compare(label: str, folder: Path, data_dir: str = "../shared/data") -> list[str]:
    (arm, arm_scores), (bundled, bundled_scores) = rows_of(folder), rows_of(BUNDLED)
    lines = [
        f"# {label} beside the bundled model: DEnsity on every judgment set, paired\n",
        f"Written by `PYTHONPATH=. python results/experiments/gpu-schedule/compare.py {label} {folder}`.",
        f"{RESAMPLES:,} paired resamples of each set's rows (seed 0); Pearson / Spearman x100; the interval is the "
        f"arm's minus the bundled model's.\n",
        f"- {label}: `{arm['command']}` ({arm['date']})",
        f"- bundled: `{bundled['command']}` ({bundled['date']})\n",
        f"| set | protocol | n | {label} | bundled | Pearson diff, 95 % interval | Spearman diff, 95 % interval |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    names = [name for name in arm["sets"] if name in bundled["sets"]]
    for judgments in load_sets(data_dir, names):
        name = judgments.name
        protocol = "paper" if has_protocol(judgments, "paper") else "full"
        index, human = apply_protocol(judgments, protocol)
        key = f"{name}/{column(name)}"
        points, boots = [], []
        draws = bootstrap_indices(len(human), RESAMPLES, seed=0)
        for report, scores in ((arm, arm_scores), (bundled, bundled_scores)):
            if not np.array_equal(scores[f"{name}/human"], apply_protocol(judgments, "full")[1]):  # row order
                raise ValueError(f"{name}: the saved ratings are not those of {data_dir}")
            values = scores[key][index]
            pearson, spearman = resampled_correlations(values, human, np.arange(len(human))[None])
            reported = report["sets"][name][protocol][column(name)]
            if not np.allclose([pearson[0], spearman[0]], [reported["pearson"], reported["spearman"]], atol=1e-6):
                raise ValueError(f"{name}: the saved per-row scores do not reproduce the report's correlations")
            points.append(np.array([pearson[0], spearman[0]]))
            boots.append(np.stack(resampled_correlations(values, human, draws), axis=1))
        interval = percentile_ci(boots[0] - boots[1])
        difference = points[0] - points[1]
        cells = [f"{difference[k]:+.2f} [{interval[k, 0]:+.2f}, {interval[k, 1]:+.2f}]" for k in (0, 1)]
        mine, theirs = (f"{p[0]:.2f} / {p[1]:.2f}" for p in points)
        lines.append(f"| {name} | {protocol} | {len(human)} | {mine} | {theirs} | {cells[0]} | {cells[1]} |")
    n_arm, n_bundled = arm["probes"]["n"], bundled["probes"]["n"]
    lines += [
        "",
        f"Probes: the share of DailyDialog test cases where the gold outscores the variant ({label}: {n_arm} cases, "
        f"bundled: {n_bundled}; seed {arm['probes']['seed']} and {bundled['probes']['seed']}).",
        "",
        f"| probe | {label} | bundled |",
        "| --- | --- | --- |",
    ]
    for probe in PROBES:
        shares = [report["probes"]["accuracy"].get(probe, {}).get("DEnsity") for report in (arm, bundled)]
        lines.append(f"| {probe} | " + " | ".join("–" if s is None else f"{100 * s:.1f} %" for s in shares) + " |")
    return lines


if __name__ == "__main__":
    print("\n".join(compare(sys.argv[1], Path(sys.argv[2]), *sys.argv[3:])))
