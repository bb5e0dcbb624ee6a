"""The demo's plots (``app.py``): where candidates fall among held-out human replies, and the paired differences
of a comparison. matplotlib (the ``app`` extra) is imported when a plot is drawn.

Each plot is a ``matplotlib.figure.Figure`` of its own, never made through ``pyplot``: pyplot keeps one list of
open figures and one backend for the process, which two requests served at once would share (matplotlib's advice
for web servers), and gradio renders a figure itself (``Figure.savefig``)."""

from __future__ import annotations

import numpy as np

from .comparison.result import ALPHA, ComparisonResult

DASH = 4.0  # points: the dash of lines that share a place on the histogram


def shared_places(values: np.ndarray, close: float) -> tuple[list[int], list[int]]:
    """Per value, its place among the values within ``close`` of it (0 for the first of them) and how many those
    are (1 where it is alone)."""
    near = [np.flatnonzero(np.abs(values - value) <= close) for value in values]
    return [int(np.sum(rows < i)) for i, rows in enumerate(near)], [len(rows) for rows in near]


def distribution_plot(scorer, labels: list[str], scores: np.ndarray):
    """Where each candidate's raw score falls on the held-out human responses' distribution (the calibration
    quantiles of ``scorer``, a :class:`~density_metric.DensityScorer`): a matplotlib figure."""
    from matplotlib.figure import Figure

    human = -scorer.stats.quantiles[::-1]  # raw scores of held-out human replies, ascending
    density, edges = np.histogram(human, bins=40, weights=np.full(len(human), 1.0 / len(human)))
    fig = Figure(figsize=(7, 3.2), dpi=110)
    ax = fig.subplots()
    ax.fill_between((edges[:-1] + edges[1:]) / 2, density, step="mid", alpha=0.35, label="human replies")
    scores = np.asarray(scores, dtype=np.float64)
    span = max(np.ptp(np.concatenate([human, scores])), 1e-9)
    places, sizes = shared_places(scores, close=0.01 * span)
    for i, (label, value) in enumerate(zip(labels, scores)):
        color = f"C{(i % 9) + 1}"
        # Lines at one place (two floored replies get the same score) share it in turns of dashes, and their
        # numbers stand one under the other, so that none hides another.
        style = "-" if sizes[i] == 1 else (places[i] * DASH, (DASH, DASH * (sizes[i] - 1)))
        ax.axvline(value, color=color, linewidth=2, linestyle=style, label=f"#{i + 1} {label[:30]}")
        ax.annotate(
            f"#{i + 1}",
            (value, 1),
            xycoords=ax.get_xaxis_transform(),
            xytext=(3, -9 - 9 * places[i]),
            textcoords="offset points",
            color=color,
            fontsize=7,
        )
    ax.set(xlabel="DEnsity score s(r) (higher: more human-like)", yticks=[])
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)  # beside: over no line
    fig.tight_layout()
    return fig


def differences_plot(result: ComparisonResult):
    """Each pair's mean paired difference (a - b) with its bootstrap 95 % interval; filled where significant (the
    Holm-corrected p < 0.05)."""
    from matplotlib.figure import Figure

    pairs = result.pairs
    fig = Figure(figsize=(7, 0.6 + 0.45 * len(pairs)), dpi=110)
    ax = fig.subplots()
    for y, pair in enumerate(pairs):
        lower, upper = pair["ci"]
        color = "C3" if pair["significant"] else "C7"
        ax.errorbar(
            pair["delta"],
            y,
            xerr=[[pair["delta"] - lower], [upper - pair["delta"]]],
            fmt="o",
            color=color,
            mfc=color if pair["significant"] else "white",
            capsize=4,
        )
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(pairs)), [f"{p['a']} - {p['b']}" for p in pairs])
    ax.set_ylim(-0.7, len(pairs) - 0.3)
    ax.invert_yaxis()
    # Two lines, wrapped again at the figure's edge: long system names narrow the axes, and one line was cut.
    label = f"mean paired difference of DEnsity scores, 95 % interval\n(filled: Holm-corrected p < {ALPHA})"
    ax.set_xlabel(label, wrap=True)
    fig.tight_layout()
    return fig
