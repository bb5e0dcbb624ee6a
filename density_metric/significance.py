"""Which system is better, and is it significant? Paired tests on per-row scores, in numpy.

The tests are sacrebleu's (``sacrebleu/significance.py``), on the mean of per-row scores:

- **Paired bootstrap** (Koehn, 2004): ``resamples`` (default 1,000) sets of n row indices, drawn
  with replacement, the same for every system. For a pair (a, b) with observed difference of
  means ``delta``, the resampled differences ``d_k`` give
  ``p = (c + 1) / (resamples + 1)``, where c counts resamples whose centred absolute difference
  ``|d_k| - mean_k |d_k|`` is at least ``|delta|``.
- **Approximate randomization** (Noreen, 1989; Riezler and Maxwell, 2005): ``trials`` (default
  10,000) random swaps of a's and b's score within each row, the same for every pair;
  ``p = (c + 1) / (trials + 1)``, where c counts trials whose absolute difference of means is at
  least ``|delta|``.

Both draw from ``numpy.random.default_rng(seed)`` exactly as sacrebleu does
(``rng.choice(n, (resamples, n))`` and ``rng.integers(2, (trials, n), dtype=bool)``), seed 12345
by default, so a seed reproduces every number. One difference: sacrebleu counts only resamples
*beyond* the observed difference (``>``), which gives two identical systems p = 1 / (n + 1), a
"significant" difference from nothing; here ties count (``>=``, as Noreen and Riezler and
Maxwell define the test), so identical systems get p = 1.

Which test decides: approximate randomization, by default. sacrebleu's bootstrap statistic centres
``|d_k|`` on its own mean, so for a real difference it asks how often a resample exceeds the
observed difference *in its own direction*: its p is close to a one-sided p, about half the
two-sided paired t-test's (``scipy.stats.ttest_rel``), and at p < 0.05 it calls about twice as
many differences of nothing significant (of 200 pairs of equal systems of 200 rows: 9 % under the
bootstrap, 4 % under randomization). Randomization's p is two-sided and agrees with
``scipy.stats.permutation_test``. Both p-values are reported; ``test="bs"`` lets the bootstrap
decide, as sacrebleu's ``--paired-bs`` does.

Confidence intervals (95 %) are sacrebleu's bootstrap percentiles: of the sorted resampled means
(or differences), the values at ``resamples // 40`` and ``resamples - resamples // 40 - 1``.

Because the score of a set of rows is their mean, every resampled mean of every system is one
matrix product: the (resamples, n) index matrix, as counts of each row, times the (n, systems)
scores. Memory is bounded by doing that ``chunk`` rows of the matrix at a time.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

DEFAULT_SEED = 12345
DEFAULT_RESAMPLES = 1000
DEFAULT_TRIALS = 10000
TESTS = {"bs": "paired bootstrap", "ar": "approximate randomization"}
ALPHA = 0.05
_CHUNK_VALUES = 1 << 20  # entries of one (rows, n) block of the resampling matrices: 8 MB as float64


def _check_count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _block_rows(n: int, multiple: int = 1) -> int:
    """Rows of one block of a (k, n) matrix: about _CHUNK_VALUES entries, a multiple of ``multiple``."""
    rows = max(1, _CHUNK_VALUES // max(n, 1))
    return max(multiple, rows // multiple * multiple)


def bootstrap_indices(n: int, resamples: int = DEFAULT_RESAMPLES, seed: int | None = DEFAULT_SEED) -> np.ndarray:
    """The paired bootstrap's row indices: (resamples, n) int32, equal to sacrebleu's
    ``default_rng(seed).choice(n, size=(resamples, n), replace=True)``."""
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n), dtype=np.int32)


def resampled_means(scores: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Mean of every system over every resample.

    Args:
        scores: (n, s) float64, one column per system.
        indices: (resamples, n) row indices (:func:`bootstrap_indices`).

    Returns:
        (resamples, s) float64: ``out[k, j] == scores[indices[k], j].mean()``.
    """
    resamples, n = indices.shape
    out = np.empty((resamples, scores.shape[1]))
    step = _block_rows(n)
    offsets = (np.arange(step) * n)[:, None]
    counts = np.empty((step, n))  # reused: a fresh block each time costs more than the product
    for start in range(0, resamples, step):
        block = indices[start : start + step]
        rows = len(block)
        # How often each row is drawn in each resample: (rows, n) counts, then one product for all systems.
        np.copyto(counts[:rows], np.bincount((block + offsets[:rows]).ravel(), minlength=rows * n).reshape(rows, n))
        out[start : start + rows] = counts[:rows] @ scores / n
    return out


def randomized_differences(
    differences: np.ndarray, trials: int = DEFAULT_TRIALS, seed: int | None = DEFAULT_SEED
) -> np.ndarray:
    """Absolute difference of means of every pair after random swaps within rows.

    Args:
        differences: (n, p) float64, per-row score differences a - b of each pair.
        trials: swaps drawn, the same for every pair: sacrebleu's
            ``default_rng(seed).integers(2, size=(trials, n), dtype=bool)`` (True: swapped).

    Returns:
        (trials, p) float64: ``|mean(sign_k * differences[:, j])|`` with sign -1 where swapped.
    """
    n = differences.shape[0]
    rng = np.random.default_rng(seed)
    out = np.empty((trials, differences.shape[1]))
    # Blocks of whole 32-row multiples keep the bit stream the same as one (trials, n) draw.
    step = _block_rows(n, multiple=32)
    total = differences.sum(axis=0)
    swapped = np.empty((step, n))
    for start in range(0, trials, step):
        rows = min(step, trials - start)
        np.copyto(swapped[:rows], rng.integers(2, size=(rows, n), dtype=bool))
        # sum(sign * d) with sign -1 where swapped = sum(d) - 2 * sum(swapped * d).
        out[start : start + rows] = np.abs(total - 2.0 * (swapped[:rows] @ differences)) / n
    return out


def p_value(null: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """``(c + 1) / (k + 1)`` per column, c counting the k null statistics at least ``observed``.

    Args:
        null: (k, p) statistics under the null hypothesis.
        observed: (p,) observed statistics.
    """
    count = np.sum(null >= observed, axis=0)
    return (count + 1) / (len(null) + 1)


def percentile_ci(samples: np.ndarray) -> np.ndarray:
    """sacrebleu's 95 % interval per column of (k, p) samples: (p, 2) [lower, upper]."""
    ordered = np.sort(samples, axis=0)
    k = len(ordered)
    lower = k // 40
    return np.stack([ordered[lower], ordered[k - lower - 1]], axis=1)


@dataclass
class ComparisonResult:
    """The outcome of :func:`compare`.

    Attributes:
        systems: one dict per system, in input order: ``name``, ``n``, ``mean`` (mean score),
            ``ci`` ([lower, upper] bootstrap 95 % interval of the mean) and ``calibrated_mean``
            (None when no calibrated scores were given).
        pairs: one dict per pair (a, b), a before b in input order: ``a``, ``b``, ``delta``
            (mean(a) - mean(b)), ``ci`` (its paired-bootstrap 95 % interval), ``p_value`` (of
            ``test``), ``test`` (``"bs"`` or ``"ar"``, the test that decides), ``p_bootstrap``,
            ``p_randomization``, ``significant`` (p_value < 0.05), ``winner`` (the better system's
            name if significant, else None), and ``wins_a``, ``wins_b``, ``ties``: the share of
            rows where a scores higher, lower, the same.
        signature: e.g. ``test:ar|ar:10000|bs:1000|seed:12345``, then the scorer's signature if known.
    """

    systems: list[dict[str, Any]]
    pairs: list[dict[str, Any]]
    signature: str
    # The paired bootstrap differences (resamples, pairs), for plots; not written to JSON.
    bootstrap_differences: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, 0)))

    def to_dict(self) -> dict[str, Any]:
        """``{"systems": [...], "pairs": [...], "signature": ...}``, JSON-ready."""
        return {"systems": self.systems, "pairs": self.pairs, "signature": self.signature}

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

    def format(self) -> str:
        """The per-system table and the pairwise grid, as text (what ``compare`` prints)."""
        return "\n".join([system_table(self), "", pairwise_grid(self), "", self.signature])


def _number(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _signed(value: float) -> str:
    return f"{round(value, 4) or 0.0:+.4f}"  # no "-0.0000"


def _text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    lines = [header, ["-" * width for width in widths], *rows]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines)


def system_table(result: ComparisonResult) -> str:
    """One row per system: n, mean score and its 95 % interval, mean calibrated score."""
    header = ["system", "n", "mean", "95% CI", "calibrated"]
    rows = [
        [
            s["name"],
            str(s["n"]),
            _number(s["mean"]),
            f"[{_number(s['ci'][0])}, {_number(s['ci'][1])}]",
            _number(s["calibrated_mean"]),
        ]
        for s in result.systems
    ]
    return _text_table(header, rows)


def grid_cells(result: ComparisonResult) -> list[list[str]]:
    """comet-compare's grid, one list per row system: its name, then mean(row) - mean(column) per
    column system, marked ``*`` where p < 0.05 (empty on the diagonal)."""
    names = [s["name"] for s in result.systems]
    rows = []
    for a in names:
        cells = [a]
        for b in names:
            if a == b:
                cells.append("")
                continue
            entry = result.pair(a, b)
            cells.append(f"{_signed(entry['delta'])}{'*' if entry['significant'] else ''}")
        rows.append(cells)
    return rows


def pairwise_grid(result: ComparisonResult) -> str:
    """The grid of :func:`grid_cells` and a line per pair, as text."""
    names = [s["name"] for s in result.systems]
    test = TESTS[result.pairs[0]["test"]] if result.pairs else TESTS["ar"]
    grid = _text_table(["row - column", *names], grid_cells(result))
    lines = [grid, f"* p < {ALPHA} ({test}; the test that decides)", ""]
    header = ["a", "b", "delta", "95% CI", "p", "p_bs", "p_ar", "a wins", "b wins", "ties", "verdict"]
    table = [
        [
            p["a"],
            p["b"],
            _signed(p["delta"]),
            f"[{_signed(p['ci'][0])}, {_signed(p['ci'][1])}]",
            f"{p['p_value']:.4f}",
            f"{p['p_bootstrap']:.4f}",
            f"{p['p_randomization']:.4f}",
            f"{p['wins_a']:.1%}",
            f"{p['wins_b']:.1%}",
            f"{p['ties']:.1%}",
            f"{p['winner']} is better" if p["winner"] else "no significant difference",
        ]
        for p in result.pairs
    ]
    lines.append(_text_table(header, table))
    return "\n".join(lines)


def _as_systems(scores: Mapping[str, Any] | Sequence[Any], names: Sequence[str] | None) -> tuple[list[str], list]:
    if isinstance(scores, Mapping):
        given_names, arrays = list(scores), list(scores.values())
        if names is not None and list(names) != given_names:
            raise ValueError("names: give the names as the keys of scores, or scores as a list")
    else:
        if isinstance(scores, (str, bytes, np.ndarray)) and np.ndim(scores) != 2:
            raise ValueError("scores must be a list or dict of score arrays, one per system")
        arrays = list(scores)
        given_names = list(names) if names is not None else [f"system{i + 1}" for i in range(len(arrays))]
    if len(arrays) < 2:
        raise ValueError(f"scores: give at least 2 systems to compare, got {len(arrays)}")
    if len(given_names) != len(arrays):
        raise ValueError(f"names has {len(given_names)} names for {len(arrays)} systems")
    if len(set(given_names)) != len(given_names):
        duplicate = next(name for name in given_names if given_names.count(name) > 1)
        raise ValueError(f"names: {duplicate!r} names two systems; give each system its own name")
    return [str(name) for name in given_names], arrays


def _as_matrix(arrays: list, names: list[str], what: str) -> np.ndarray:
    columns = []
    for name, values in zip(names, arrays):
        column = np.asarray(values, dtype=np.float64)
        if column.ndim != 1:
            raise ValueError(f"{what}[{name!r}] must be one score per row, got shape {column.shape}")
        columns.append(column)
    n = len(columns[0])
    for name, column in zip(names, columns):
        if len(column) != n:
            raise ValueError(
                f"{what}[{name!r}] has {len(column)} rows but {what}[{names[0]!r}] has {n}; "
                "paired tests need the same rows for every system"
            )
        bad = np.flatnonzero(~np.isfinite(column))
        if bad.size:
            raise ValueError(f"{what}[{name!r}][{bad[0]}] is {column[bad[0]]}; every score must be a finite number")
    if n == 0:
        raise ValueError(f"{what}: the systems have no rows")
    return np.stack(columns, axis=1)


def compare(
    scores: Mapping[str, Any] | Sequence[Any],
    *,
    names: Sequence[str] | None = None,
    calibrated: Mapping[str, Any] | Sequence[Any] | None = None,
    test: str = "ar",
    resamples: int = DEFAULT_RESAMPLES,
    trials: int = DEFAULT_TRIALS,
    seed: int | None = DEFAULT_SEED,
    scorer_signature: str | None = None,
) -> ComparisonResult:
    """Compare systems scored on the same rows: means, 95 % intervals and paired p-values.

    Args:
        scores: per system, n scores (higher is better), row i of every system on the same
            context: a dict ``{name: scores}`` or a list (named by ``names``, else system1, system2...).
        names: the systems' names when ``scores`` is a list.
        calibrated: the calibrated scores, in the same layout, for the table; optional.
        test: the test whose p-value decides: ``"ar"`` (approximate randomization, two-sided; the
            default) or ``"bs"`` (sacrebleu's paired bootstrap, nearly one-sided: see the module
            docstring). Both p-values are reported.
        resamples: bootstrap resamples (also the intervals'); trials: randomization trials.
        seed: of both draws; None draws fresh entropy (then the signature says ``seed:none``).
        scorer_signature: appended to the signature (``DensityScorer.signature``).

    Returns:
        A :class:`ComparisonResult`.

    Example:
        >>> result = compare({"a": [0.1, 0.5, 0.9, 0.4], "b": [0.0, 0.2, 0.8, 0.1]}, resamples=200, trials=200)
        >>> round(result.pairs[0]["delta"], 6), result.pairs[0]["wins_a"]
        (0.2, 1.0)
    """
    if test not in TESTS:
        raise ValueError(f"test must be one of {sorted(TESTS)}, got {test!r}")
    resamples = _check_count(resamples, "resamples")
    trials = _check_count(trials, "trials")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
    system_names, arrays = _as_systems(scores, names)
    matrix = _as_matrix(arrays, system_names, "scores")
    calibrated_matrix = None
    if calibrated is not None:
        calibrated_names, calibrated_arrays = _as_systems(
            calibrated, system_names if not isinstance(calibrated, Mapping) else None
        )
        if calibrated_names != system_names:
            raise ValueError(f"calibrated: systems {calibrated_names} differ from the scores' {system_names}")
        calibrated_matrix = _as_matrix(calibrated_arrays, system_names, "calibrated")
        if calibrated_matrix.shape != matrix.shape:
            raise ValueError(f"calibrated has {calibrated_matrix.shape[0]} rows but scores have {matrix.shape[0]}")
    n = matrix.shape[0]

    means = matrix.mean(axis=0)
    boot = resampled_means(matrix, bootstrap_indices(n, resamples, seed))
    system_ci = percentile_ci(boot)
    systems = [
        {
            "name": name,
            "n": n,
            "mean": float(means[j]),
            "ci": system_ci[j].tolist(),
            "calibrated_mean": None if calibrated_matrix is None else float(calibrated_matrix[:, j].mean()),
        }
        for j, name in enumerate(system_names)
    ]

    pair_index = list(itertools.combinations(range(len(system_names)), 2))
    differences = np.stack([matrix[:, a] - matrix[:, b] for a, b in pair_index], axis=1)  # (n, pairs)
    delta = differences.mean(axis=0)
    boot_differences = np.stack([boot[:, a] - boot[:, b] for a, b in pair_index], axis=1)
    spread = np.abs(boot_differences)
    p_bootstrap = p_value(spread - spread.mean(axis=0), np.abs(delta))
    p_randomization = p_value(randomized_differences(differences, trials, seed), np.abs(delta))
    pair_ci = percentile_ci(boot_differences)
    pairs = []
    for j, (a, b) in enumerate(pair_index):
        p = float(p_bootstrap[j] if test == "bs" else p_randomization[j])
        significant = p < ALPHA
        winner = None
        if significant and delta[j] != 0:
            winner = system_names[a] if delta[j] > 0 else system_names[b]
        pairs.append(
            {
                "a": system_names[a],
                "b": system_names[b],
                "delta": float(delta[j]),
                "ci": pair_ci[j].tolist(),
                "p_value": p,
                "test": test,
                "p_bootstrap": float(p_bootstrap[j]),
                "p_randomization": float(p_randomization[j]),
                "significant": significant,
                "winner": winner,
                "wins_a": float(np.mean(differences[:, j] > 0)),
                "wins_b": float(np.mean(differences[:, j] < 0)),
                "ties": float(np.mean(differences[:, j] == 0)),
            }
        )
    seed_text = "none" if seed is None else str(seed)
    signature = f"test:{test}|ar:{trials}|bs:{resamples}|seed:{seed_text}"
    if scorer_signature:
        signature += f"|{scorer_signature}"
    return ComparisonResult(systems, pairs, signature, boot_differences)
