"""The meta-evaluation's report: its Markdown (a headline table, one table per protocol, the probes, the gold against
random share) and its figures (scatter plots, the gold-against-random histogram), from the report dict that
:mod:`benchmarks.human_correlation` computes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from density_metric.correlation import spearman

from .sets import PAPER_DENSITY, PUBLISHED

DEFAULT_PROTOCOLS = ("full", "paper")


def plot_scatter(name: str, human, metric, path: Path, label: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    human, metric = np.asarray(human), np.asarray(metric)
    fig, ax = plt.subplots(figsize=(4.5, 3.6), dpi=120)
    ax.scatter(metric, human, s=8, alpha=0.5)
    slope, intercept = np.polyfit(metric, human, 1)
    xs = np.linspace(metric.min(), metric.max(), 50)
    ax.plot(xs, slope * xs + intercept, color="C3")
    rho = 100 * spearman(metric, human)
    ax.set(xlabel=label, ylabel="human score", title=f"{name}, all rows (Spearman {rho:.1f})")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_histogram(gold, random_, path: Path, label: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.4), dpi=120)
    histogram_panel(ax, gold, random_, label, "DailyDialog validation: gold vs random")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def histogram_panel(ax, gold, random_, label: str, title: str) -> None:
    """One panel of the gold-against-random histogram (the paper's Figure 5): both on the same 50 bins."""
    bins = np.histogram_bin_edges(np.concatenate([gold, random_]), bins=50)
    ax.hist(gold, bins=bins, alpha=0.6, label="gold response")
    ax.hist(random_, bins=bins, alpha=0.6, label="random response")
    ax.set(xlabel=label, ylabel="pairs", title=title)
    ax.legend()


def headline(report: dict, protocol: str = "paper") -> list[str]:
    """Markdown lines of one compact table: metrics as rows, turn-level sets as columns, r / rho under
    ``protocol``; supervised metrics and published numbers in rows of their own, marked so."""
    sets = [name for name, result in report["sets"].items() if protocol in result and "DEnsity" in result[protocol]]
    if not sets:
        return []
    supervised = set(report.get("supervised_columns", []))
    shown = [
        m for m in dict.fromkeys(m for name in sets for m in report["sets"][name][protocol]) if "calibrated" not in m
    ]
    rows = [(m, m) for m in shown if m not in supervised] + [
        (m, m if "supervised" in m else f"{m} (supervised)") for m in shown if m in supervised
    ]

    def cell(c: dict | None) -> str:
        if not c:
            return "–"
        return f"{c['pearson']:.2f} / {c['spearman']:.2f}" if "pearson" in c else f"– / {c['spearman']:.2f}"

    lines = [
        f"## Headline ({protocol} protocol, Pearson / Spearman x100)",
        "",
        "| metric | " + " | ".join(sets) + " |",
        "| --- |" + " --- |" * len(sets),
    ]
    for metric, label in rows:
        lines.append(f"| {label} | " + " | ".join(cell(report["sets"][n][protocol].get(metric)) for n in sets) + " |")
    for metric, values in PUBLISHED.items():
        lines.append(f"| {metric} (published) | " + " | ".join(cell(values.get(n)) for n in sets) + " |")
    lines += [
        "",
        "Published rows are the papers' numbers, not measurements here; – where our sources have none",
        "(the DEnsity paper's BERT-RUBER numbers are not among them). A supervised metric learned from",
        "human ratings; it is never reported on the rows it learned from.",
        "",
    ]
    return lines


def markdown(report: dict) -> str:
    lines = [
        f"# Meta-evaluation of `{report['checkpoint']}`",
        "",
        f"- revision: `{report['revision']}`",
        f"- date: {report['date']}; command: `{report['command']}`",
        f"- signature: `{report['signature']}`",
        f"- persona/fact lines in front of the context: {report['with_facts']}",
        "",
        *[f"- note: {note}" for note in report["notes"]],
        "",
        "Pearson r / Spearman rho (x100) with human ratings. `paper`: ground-truth rows dropped;",
        "Zhao sets use the MAD-filtered rating and their last 80 % of rows. `full`: every row.",
        "`dev` (if asked for): the Zhao sets' first 20 % of rows, filtered and rated as in `paper`.",
        "The `paper DEnsity` column is the published value (bert-base, trained), not a measurement;",
        "it is filled in the `paper` protocol only, the rows the paper measured.",
        "",
        *headline(report),
    ]
    for protocol in report.get("protocols", DEFAULT_PROTOCOLS):
        lines += [
            f"## Protocol: {protocol}",
            "",
            "| set | n | metric | r | rho | paper DEnsity r / rho |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for name, result in report["sets"].items():
            if protocol not in result:  # not defined for this set (dev: only the Zhao sets)
                continue
            paper = PAPER_DENSITY.get(name, {}) if protocol == "paper" else {}
            published = f"{paper.get('pearson', '–')} / {paper.get('spearman', '–')}" if paper else ""
            for metric, c in result[protocol].items():
                r = f"{c['pearson']:.2f}" + ("*" if c["pearson_p"] < 0.05 else "")
                rho = f"{c['spearman']:.2f}" + ("*" if c["spearman_p"] < 0.05 else "")
                lines.append(f"| {name} | {c['n']} | {metric} | {r} | {rho} | {published} |")
                published = ""
        lines += ["", "`*`: p < 0.05.", ""]
    probes = report["probes"]
    lines += [
        f"## Robustness probes (DailyDialog test, {probes['n']} cases, seed {probes['seed']})",
        "",
        "Share of cases where the gold response outscores the variant; a probe that does not apply",
        "to a case (no pronoun to swap, a one-word gold to truncate) leaves it out.",
        "",
    ]
    metrics = list(next(iter(probes["accuracy"].values())))
    lines += ["| probe | " + " | ".join(metrics) + " |", "| --- |" + " --- |" * len(metrics)]
    for probe, accuracy in probes["accuracy"].items():
        shown = (
            probe
            if probes.get("n_per_probe", {}).get(probe, probes["n"]) == probes["n"]
            else (f"{probe} ({probes['n_per_probe'][probe]} cases)")
        )
        lines.append(f"| {shown} | " + " | ".join(f"{accuracy[m]:.3f}" for m in metrics) + " |")
    validation = report.get("gold_vs_random_validation")
    if validation and "share_gold_higher_by_metric" in validation:
        shares = validation["share_gold_higher_by_metric"]
        lines += [
            "",
            f"## Gold against a random reply (DailyDialog validation, {validation['n']} cases, seed {probes['seed']})",
            "",
            "Share of cases where the gold response outscores a reply from another dialogue (the histogram's pairs).",
            "",
            "| " + " | ".join(shares) + " |",
            "|" + " --- |" * len(shares),
            "| " + " | ".join(f"{v:.3f}" for v in shares.values()) + " |",
        ]
    if report.get("row_scores"):
        lines += ["", f"Per-row scores of the checkpoint's columns: `{report['row_scores']}`."]
    lines += ["", "## Figures", ""] + [f"![{p}]({p})" for p in report["figures"]]
    return "\n".join(lines) + "\n"
