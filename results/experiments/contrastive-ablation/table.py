"""The paper's Table 2 and Figure 5 from the two arms' meta-evaluations (issue 62; plan: PLAN.md beside this file).

    PYTHONPATH=. python results/experiments/contrastive-ablation/table.py > results/experiments/contrastive-ablation/TABLE.md

Reads ``cl/`` and ``nocl/`` (each written by ``run.sh``: ``human_correlation.json`` and ``scores.safetensors``) and
the bundled model's ``results/bundled-default/`` as a third reference; an arm not measured yet is left out. Writes
the table (Markdown, stdout), the paired bootstrap of the paper's three claims on DailyDialog-Zhao's test rows
(``paper`` protocol, 10,000 resamples of the rows, seed 0, the same rows for every scoring row:
``benchmarks.paired_bootstrap``) and ``figure5.png`` (s(r) of golds and random replies on DailyDialog validation).
It computes nothing from a checkpoint: everything comes from the saved per-row scores and reports.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from density_train.data.judgments import apply_protocol, load_sets
from safetensors.numpy import load_file
from scipy.stats import pearsonr, spearmanr

from benchmarks.meta_report import histogram_panel
from benchmarks.paired_bootstrap import resampled_correlations
from density_metric.comparison.significance import bootstrap_indices, percentile_ci

HERE = Path(__file__).resolve().parent
MODELS = {  # label: folder of a human_correlation run
    "CL": HERE / "cl",
    "no-CL": HERE / "nocl",
    "bundled": HERE.parents[1] / "bundled-default",
}
SCORINGS = {  # the paper's rows: turn-level column, FED dialogue column (the mean over a dialogue's scored turns)
    "Mahalanobis": ("DEnsity", "DEnsity dialogue (mean)"),
    "Euclidean": ("-Euclidean to mean", "-Euclidean to mean dialogue (mean)"),
    "classifier": ("f(c,r) classifier", "f(c,r) classifier dialogue (mean)"),
}
SETS = {  # set: column; fed_dialogue reads the dialogue-level column of each scoring
    "dailydialog_zhao": "DD-Zhao test",
    "fed_turn": "FED turn",
    "fed_dialogue": "FED dialogue",
    "convai2_usr": "ConvAI2-USR",
    "topicalchat_usr": "TopicalChat-USR",
}
PUBLISHED = {  # Table 2 of Park et al. (2023), bert-base, DailyDialog-Zhao; the other cells are not in our sources
    ("CL", "Mahalanobis"): (56.81, 57.03),
    ("no-CL", "Mahalanobis"): (46.79, 51.97),
}
RESAMPLES = 10_000


def cell(result: dict | None) -> str:
    return f"{result['pearson']:.2f} / {result['spearman']:.2f}" if result else "–"


def table(reports: dict[str, dict]) -> list[str]:
    columns = [*SETS.values(), "echo probe", "random probe"]
    lines = ["| model | scoring | " + " | ".join(columns) + " |", "| --- | --- |" + " --- |" * len(columns)]
    for label, report in reports.items():
        for scoring, (turn, dialogue) in SCORINGS.items():
            cells = [
                cell(report["sets"].get(name, {}).get("paper", {}).get(dialogue if name == "fed_dialogue" else turn))
                for name in SETS
            ]
            for probe in ("echo", "random"):
                share = report["probes"]["accuracy"][probe].get(turn)
                cells.append("–" if share is None else f"{100 * share:.1f} %")
            lines.append(f"| {label} | {scoring} | " + " | ".join(cells) + " |")
    for (label, scoring), (r, rho) in PUBLISHED.items():
        cells = [f"{r:.2f} / {rho:.2f}"] + ["–"] * (len(columns) - 1)
        lines.append(f"| {label}, bert-base (published) | {scoring} | " + " | ".join(cells) + " |")
    return lines


def zhao_rows(data_dir: str, saved: dict[str, dict]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every (model, scoring) row's scores on DailyDialog-Zhao's ``paper`` test rows, and those rows' ratings."""
    (judgments,) = load_sets(data_dir, ["dailydialog_zhao"])
    index, human = apply_protocol(judgments, "paper")
    rows = {}
    for label, scores in saved.items():
        if len(scores["dailydialog_zhao/human"]) != len(judgments.rows):
            raise ValueError(f"{label}: scores.safetensors does not hold every DailyDialog-Zhao row")
        for scoring, (turn, _) in SCORINGS.items():
            rows[f"{label} {scoring}"] = scores[f"dailydialog_zhao/{turn}"][index]
    return rows, human


def claims(rows: dict[str, np.ndarray], human: np.ndarray, reports: dict[str, dict]) -> list[str]:
    draws = bootstrap_indices(len(human), RESAMPLES, seed=0)
    point, boot = {}, {}
    for name, values in rows.items():
        point[name] = np.array([100 * pearsonr(values, human).statistic, 100 * spearmanr(values, human).statistic])
        boot[name] = np.stack(resampled_correlations(values, human, draws), axis=1)  # (k, 2)
        label, scoring = name.split(" ", 1)
        reported = reports[label]["sets"]["dailydialog_zhao"]["paper"][SCORINGS[scoring][0]]
        if not np.allclose(point[name], [reported["pearson"], reported["spearman"]], atol=1e-6):
            raise ValueError(f"{name}: the saved per-row scores do not reproduce the report's correlations")

    def contrast(plus: list[str], minus: list[str]) -> tuple[np.ndarray, np.ndarray]:
        return (
            sum(point[n] for n in plus) - sum(point[n] for n in minus),
            sum(boot[n] for n in plus) - sum(boot[n] for n in minus),
        )

    best = "CL Mahalanobis"
    tests = [
        ("1", f"{best} - {other}", *contrast([best], [other]))
        for other in rows
        if other != best and "bundled" not in other
    ]
    for other in ("Euclidean", "classifier"):
        tests.append(
            (
                "2",
                f"drop of Mahalanobis - drop of {other} (drop: CL - no-CL)",
                *contrast(["CL Mahalanobis", f"no-CL {other}"], ["no-CL Mahalanobis", f"CL {other}"]),
            )
        )
    for other in ("Mahalanobis", "Euclidean"):
        tests.append(("3", f"no-CL classifier - no-CL {other}", *contrast(["no-CL classifier"], [f"no-CL {other}"])))
    lines = [
        f"DailyDialog-Zhao, `paper` protocol (the last 80 %), n = {len(human)}; {RESAMPLES:,} paired resamples of the "
        "rows (seed 0). Each claim's contrasts should be above 0.",
        "",
        "| claim | contrast | Pearson, 95 % interval | Spearman, 95 % interval |",
        "| --- | --- | --- | --- |",
    ]
    lows: dict[str, list] = {}
    for claim, name, value, samples in tests:
        low_high = percentile_ci(samples)
        cells = [f"{value[k]:+.2f} [{low_high[k, 0]:+.2f}, {low_high[k, 1]:+.2f}]" for k in (0, 1)]
        lines.append(f"| {claim} | {name} | {cells[0]} | {cells[1]} |")
        lows.setdefault(claim, []).append((value, low_high[:, 0]))
    lines += ["", "Verdicts, by the rule of PLAN.md's addendum of 07:25 (written before any result):", ""]
    for claim, contrasts in lows.items():
        lines.append(f"- claim {claim}: {verdict(contrasts)}")
    return lines


def verdict(contrasts: list[tuple[np.ndarray, np.ndarray]]) -> str:
    """A claim is reproduced when every contrast is above 0 in Pearson and Spearman with its 95 % interval above 0,
    in direction only when every point estimate is above 0, and not reproduced otherwise."""
    if any((value <= 0).any() for value, _ in contrasts):
        return "not reproduced"
    return "reproduced" if all((low > 0).all() for _, low in contrasts) else "in direction only"


def figure(saved: dict[str, dict], path: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(saved), figsize=(4.4 * len(saved), 3.6), squeeze=False)
    lines = []
    for axis, (label, scores) in zip(axes[0], saved.items()):
        gold = scores["validation_gold_vs_random/gold/DEnsity"]
        random_ = scores["validation_gold_vs_random/random/DEnsity"]
        share = float(np.mean(gold > random_))
        histogram_panel(axis, gold, random_, "DEnsity s(r)", f"{label}: gold > random in {100 * share:.1f} %")
        axis.grid(alpha=0.3)
        lines.append(f"- {label}: gold > random in {100 * share:.1f} % of {len(gold)} DailyDialog validation contexts")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return lines


def main(data_dir: str = "../shared/data") -> None:
    reports = {
        label: json.loads((folder / "human_correlation.json").read_text())
        for label, folder in MODELS.items()
        if (folder / "human_correlation.json").is_file()
    }
    saved = {
        label: load_file(str(folder / "scores.safetensors"))
        for label, folder in MODELS.items()
        if (folder / "scores.safetensors").is_file()
    }
    print("# The contrastive ablation (issue 62): Table 2 and Figure 5\n")
    print("Written by `PYTHONPATH=. python results/experiments/contrastive-ablation/table.py`; plan: PLAN.md.\n")
    for label, report in reports.items():
        print(f"- {label}: `{report['command']}` ({report['date']}; `{report['signature']}`)")
    print("\n## Table 2 (Pearson / Spearman x100, `paper` protocol; probes: gold beats the variant, 500 cases)\n")
    print("\n".join(table(reports)))
    if {"CL", "no-CL"} <= set(saved):
        print("\n## The paper's claims, paired bootstrap\n")
        print("\n".join(claims(*zhao_rows(data_dir, {k: saved[k] for k in MODELS if k in saved}), reports)))
    if saved:
        print("\n## Figure 5\n")
        print("\n".join(figure(saved, HERE / "figure5.png")))
        print("\n![Figure 5](figure5.png)")


if __name__ == "__main__":
    main(*sys.argv[1:])
