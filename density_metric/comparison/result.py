"""What :func:`density_metric.comparison.significance.compare` returns, and the tables ``compare`` prints from it.

The statistics are :mod:`density_metric.comparison.significance`'s; this module holds the result (per system, per pair,
the signature and the warnings) and its text: the per-system table, comet-compare's pairwise grid, and a line
per pair with its verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..row_flags import FLOORED, TRUNCATED_CONTEXT, TRUNCATED_REPLY

TESTS = {"bs": "paired bootstrap", "ar": "approximate randomization"}
ALPHA = 0.05  # a pair is significant at p < ALPHA


@dataclass
class ComparisonResult:
    """The outcome of :func:`compare`.

    Attributes:
        systems: one dict per system, in input order: ``name``, ``n``, ``mean`` (mean score),
            ``ci`` ([lower, upper] bootstrap 95 % interval of the mean) and ``calibrated_mean``
            (None when no calibrated scores were given); from ``DensityScorer.compare`` and the ``compare``
            command also ``flagged`` (rows whose reply is degenerate: empty, unreadable or without a letter or
            digit), ``truncated`` (rows the encoder read only in part, counted apart) and ``flag_counts``
            (``{flag: rows}``), all None where unknown (:func:`density_metric.comparison.systems.report_flags`).
        pairs: one dict per pair (a, b) tested: every pair, a before b in input order, or with a baseline each
            other system as a and the baseline as b; ``a``, ``b``, ``delta``
            (mean(a) - mean(b)), ``ci`` (its paired-bootstrap 95 % interval), ``p_value`` (of
            ``test``, uncorrected), ``p_holm`` (Holm-corrected over the pairs tested), ``test`` (``"bs"`` or
            ``"ar"``, the test that decides), ``p_bootstrap``, ``p_randomization`` (both uncorrected),
            ``significant`` (p_holm < 0.05), ``winner`` (the better system's
            name if significant, else None), and ``wins_a``, ``wins_b``, ``ties``: the share of
            rows where a scores higher, lower, the same.
            A row is a tie when its difference is within the scores' tolerance (module docstring).
        signature: e.g. ``test:ar|ar:10000|bs:1000|seed:12345|rtol:1e-05``, then the scorer's signature if known.
        warnings: what makes the p-values unreliable, e.g. fewer rows than can reach p < 0.05; also logged.
        correction: ``{"method": "holm", "tests": m, "baseline": name or None}``: the multiple-testing correction
            over the m pairs tested, and the baseline they were tested against (None: all pairs).
    """

    systems: list[dict[str, Any]]
    pairs: list[dict[str, Any]]
    signature: str
    warnings: list[str] = field(default_factory=list)
    # The paired bootstrap differences (resamples, pairs), for plots; not written to JSON.
    bootstrap_differences: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, 0)))
    correction: dict[str, Any] = field(default_factory=lambda: {"method": "holm", "tests": 0, "baseline": None})

    def to_dict(self) -> dict[str, Any]:
        """``{"systems": [...], "pairs": [...], "signature": ..., "warnings": [...], "correction": {...}}``,
        JSON-ready."""
        return {
            "systems": self.systems,
            "pairs": self.pairs,
            "signature": self.signature,
            "warnings": self.warnings,
            "correction": self.correction,
        }

    def pair(self, a: str, b: str) -> dict[str, Any]:
        """The pair of systems ``a`` and ``b``, with ``delta`` as mean(a) - mean(b) either way round."""
        for entry in self.pairs:
            if (entry["a"], entry["b"]) == (a, b):
                return entry
            if (entry["a"], entry["b"]) == (b, a):
                lower, upper = entry["ci"]
                return {
                    **entry,
                    "a": a,
                    "b": b,
                    "delta": -entry["delta"],
                    "ci": [-upper, -lower],
                    "wins_a": entry["wins_b"],
                    "wins_b": entry["wins_a"],
                }
        raise ValueError(f"no pair of systems {a!r} and {b!r}; systems: {[s['name'] for s in self.systems]}")

    def tested(self, a: str, b: str) -> bool:
        """Whether systems ``a`` and ``b`` were tested against each other (with a baseline, only against it)."""
        return any({entry["a"], entry["b"]} == {a, b} for entry in self.pairs)

    def format(self) -> str:
        """The per-system table and the pairwise grid, as text (what ``compare`` prints)."""
        warnings = [f"warning: {warning}" for warning in self.warnings]
        return "\n".join([system_table(self), "", pairwise_grid(self), "", self.signature, *warnings])


def _number(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _signed(value: float) -> str:
    return f"{round(value, 4) or 0.0:+.4f}"  # no "-0.0000"


def _text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    lines = [header, ["-" * width for width in widths], *rows]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines)


def system_table(result: ComparisonResult) -> str:
    """One row per system: n, mean score and its 95 % interval, mean calibrated score, and where counted its
    degenerate rows (``3 (2 empty, 1 punctuation)``) and its truncated rows apart (``-``: unknown)."""
    header = ["system", "n", "mean", "95% CI", "calibrated"]
    flagged = any("flagged" in s for s in result.systems)
    rows = [
        [
            s["name"],
            str(s["n"]),
            _number(s["mean"]),
            f"[{_number(s['ci'][0])}, {_number(s['ci'][1])}]",
            _number(s["calibrated_mean"]),
        ]
        + ([flagged_cell(s), truncated_cell(s)] if flagged else [])
        for s in result.systems
    ]
    return _text_table(header + (["flagged", "truncated"] if flagged else []), rows)


def flagged_cell(system: dict[str, Any]) -> str:
    """A system's degenerate rows as text: ``0``, ``3 (2 empty, 1 punctuation)``, or ``-`` where unknown; the
    truncated rows are :func:`truncated_cell`'s; ``non-latin`` rows, read and not floored, are counted by a warning."""
    if system.get("flagged") is None:
        return "-"
    counts = {flag: count for flag, count in (system.get("flag_counts") or {}).items() if flag in FLOORED}
    detail = ", ".join(f"{count} {flag}" for flag, count in counts.items())
    return f"{system['flagged']} ({detail})" if detail else str(system["flagged"])


def truncated_cell(system: dict[str, Any]) -> str:
    """A system's truncated rows as text, with the cap that cut them where known (``5 (4 reply, 2 context)``: a
    row cut at both counts in both), or ``-`` where unknown."""
    if system.get("truncated") is None:
        return "-"
    counts = system.get("flag_counts") or {}
    caps = ((TRUNCATED_REPLY, "reply"), (TRUNCATED_CONTEXT, "context"))
    detail = ", ".join(f"{counts[flag]} {word}" for flag, word in caps if counts.get(flag))
    return f"{system['truncated']} ({detail})" if detail else str(system["truncated"])


def grid_cells(result: ComparisonResult) -> list[list[str]]:
    """comet-compare's grid, one list per row system: its name, then mean(row) - mean(column) per
    column system, marked ``*`` where p < 0.05 (empty on the diagonal)."""
    names = [s["name"] for s in result.systems]
    rows = []
    for a in names:
        cells = [a]
        for b in names:
            if a == b or not result.tested(a, b):
                cells.append("")
                continue
            entry = result.pair(a, b)
            cells.append(f"{_signed(entry['delta'])}{'*' if entry['significant'] else ''}")
        rows.append(cells)
    return rows


def correction_text(result: ComparisonResult, detail: str = "") -> str:
    """The correction, its number of tests and their family, e.g. ``Holm's correction for 15 tests (against the
    baseline 'base')``; ``detail`` goes inside the brackets after the family."""
    tests, baseline = result.correction["tests"], result.correction.get("baseline")
    family = f"against the baseline {baseline!r}" if baseline else "all pairs"
    return f"Holm's correction for {tests} test{'' if tests == 1 else 's'} ({family}{f'; {detail}' if detail else ''})"


def verdict(pair: dict[str, Any]) -> str:
    """A tested pair's verdict: ``a is better``, or ``no significant difference``, which says which test decided
    where the bootstrap's interval does not hold 0 (the interval is uncorrected; the test, Holm-corrected, decides)."""
    if pair["winner"]:
        return f"{pair['winner']} is better"
    lower, upper = pair["ci"]
    if lower <= 0 <= upper:
        return "no significant difference"
    return (
        f"no significant difference by {TESTS[pair['test']]} (p_holm {pair['p_holm']:.4f}); the 95% CI, the "
        "bootstrap's and uncorrected, excludes 0 but does not decide"
    )


def pairwise_grid(result: ComparisonResult) -> str:
    """The grid of :func:`grid_cells` and a line per pair, as text."""
    names = [s["name"] for s in result.systems]
    test = TESTS[result.pairs[0]["test"]] if result.pairs else TESTS["ar"]
    grid = _text_table(["row - column", *names], grid_cells(result))
    lines = [
        grid,
        f"* p < {ALPHA} after {correction_text(result, f'{test} decides')}; p, p_bs and p_ar are uncorrected, and the "
        "95% CI is the paired bootstrap's, uncorrected: it does not decide",
        "",
    ]
    header = ["a", "b", "delta", "95% CI", "p", "p_holm", "p_bs", "p_ar", "a wins", "b wins", "ties", "verdict"]
    table = [
        [
            p["a"],
            p["b"],
            _signed(p["delta"]),
            f"[{_signed(p['ci'][0])}, {_signed(p['ci'][1])}]",
            f"{p['p_value']:.4f}",
            f"{p['p_holm']:.4f}",
            f"{p['p_bootstrap']:.4f}",
            f"{p['p_randomization']:.4f}",
            f"{p['wins_a']:.1%}",
            f"{p['wins_b']:.1%}",
            f"{p['ties']:.1%}",
            verdict(p),
        ]
        for p in result.pairs
    ]
    lines.append(_text_table(header, table))
    return "\n".join(lines)
