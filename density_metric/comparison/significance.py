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

Scores are equal within a tolerance. The same rows scored with another batch size, order or split
move by a few 1e-6 relative under the float32 default (``benchmarks/batch_invariance_cpu.json``;
the tests hold it to :data:`SCORE_RTOL` = 1e-5), and with ``>=`` an exact tie (swapping every row
gives exactly ``|delta|``) was counted or not by the last bit of a sum: 5 rows gave p 0.062 at one
batch size and 0.033 at another. So each score is taken as known to ``rtol`` (default
:data:`SCORE_RTOL`, named in the signature as ``rtol:1e-05``) relative: a row's difference
``d_i = a_i - b_i`` to ``e_i = (rtol + n eps) (|a_i| + |b_i|)`` (``n eps`` bounds float64 rounding of a
sum of n terms). Every statistic either test compares with ``|delta|`` is a mean of +-d_i over rows,
of resampled d_i, or a difference of two such, so ``statistic - |delta|`` is known to
``3 max_i e_i``, the pair's ``tolerance``: a null statistic counts when it is at least
``|delta| - tolerance`` (:func:`p_value`). A row is a tie when ``|d_i| <= e_i``, a win beyond it.
Noise below the tolerance then moves no exact tie; it can still move a null statistic that happens to
lie within the noise of ``|delta| - tolerance`` (no threshold can avoid that), which is rare: none of the
792 five-row subsets of ``examples/`` scored at batch sizes 1 and 64 flips a p-value (with a plain ``>=``, 99
did on the bundled model of the time, 132 on the one of 2026-12-03).
bfloat16 scores move by about 2e-2 relative with the batch: pass ``rtol`` to match.

Tiny samples: randomization's p is at least ``(m + 1) / (trials + 1)``, m the trials that swap every
row or none (they give exactly ``|delta|``; for rows whose differences have one sign no other swap
reaches it), about ``trials * 2^(1 - n)``: at the defaults p < 0.05 needs 6 rows
(:func:`smallest_significant_n`, exact for the seed's draws). Below that, :func:`compare` warns
(``ComparisonResult.warnings``, logged, and printed by ``compare``), whichever test decides: the
bootstrap's p of one row is 1 / (resamples + 1), "significant" from nothing.

Confidence intervals (95 %) are sacrebleu's bootstrap percentiles: of the sorted resampled means
(or differences), the values at ``resamples // 40`` and ``resamples - resamples // 40 - 1``.

Because the score of a set of rows is their mean, every resampled mean of every system is one
matrix product: the (resamples, n) index matrix, as counts of each row, times the (n, systems)
scores. Memory is bounded by doing that ``chunk`` rows of the matrix at a time: about ``_CHUNK_VALUES`` entries a
block, and never fewer than 32 rows (so 32 n entries from n = 32,768 rows on).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import positive_int
from ..signature import Signature
from .result import ALPHA, TESTS, ComparisonResult

__all__ = [
    "bootstrap_blocks",
    "bootstrap_indices",
    "check_baseline",
    "compare",
    "holm",
    "p_value",
    "percentile_ci",
    "randomized_differences",
    "resampled_means",
    "smallest_randomization_p",
    "smallest_significant_n",
]

logger = logging.getLogger(__name__)

DEFAULT_SEED = 12345
DEFAULT_RESAMPLES = 1000
DEFAULT_TRIALS = 10000
# Relative tolerance of a score: what the tests hold the float32 default's batch invariance to (see above).
SCORE_RTOL = 1e-5
_CHUNK_VALUES = 1 << 20  # entries of one (rows, n) block of the resampling matrices: 8 MB as float64


def _block_rows(n: int, multiple: int = 1) -> int:
    """Rows of one block of a (k, n) matrix: about _CHUNK_VALUES entries, a multiple of ``multiple`` and at least
    ``multiple`` rows (more entries than _CHUNK_VALUES where n is above _CHUNK_VALUES / ``multiple``)."""
    rows = max(1, _CHUNK_VALUES // max(n, 1))
    return max(multiple, rows // multiple * multiple)


def _drawn_blocks(n: int, count: int, seed: int | None, dtype: type, high: int, multiple: int = 1):
    """``default_rng(seed).integers(high, size=(count, n), dtype=dtype)`` in (rows, n) blocks of about
    ``_CHUNK_VALUES`` entries (rows a multiple of ``multiple``), drawn one after the other from one generator."""
    rng = np.random.default_rng(seed)
    step = _block_rows(n, multiple)
    for start in range(0, count, step):
        yield rng.integers(high, size=(min(step, count - start), n), dtype=dtype)


def bootstrap_blocks(
    n: int, resamples: int = DEFAULT_RESAMPLES, seed: int | None = DEFAULT_SEED
) -> Iterator[np.ndarray]:
    """The paired bootstrap's row indices in (rows, n) int32 blocks of about ``_CHUNK_VALUES`` entries, drawn one
    after the other from one generator: together they are :func:`bootstrap_indices`, and a file of a million rows
    never holds the (resamples, n) matrix (4 GB at 1,000 resamples)."""
    return _drawn_blocks(n, resamples, seed, np.int32, high=n)


def bootstrap_indices(n: int, resamples: int = DEFAULT_RESAMPLES, seed: int | None = DEFAULT_SEED) -> np.ndarray:
    """The paired bootstrap's row indices: (resamples, n) int32, equal to sacrebleu's
    ``default_rng(seed).choice(n, size=(resamples, n), replace=True)``."""
    return np.concatenate(list(bootstrap_blocks(n, resamples, seed)))


def resampled_means(scores: np.ndarray, indices: np.ndarray | Iterable[np.ndarray]) -> np.ndarray:
    """Mean of every system over every resample.

    Args:
        scores: (n, s) float64, one column per system.
        indices: (resamples, n) row indices (:func:`bootstrap_indices`), or the same rows in blocks of at most
            ``_block_rows(n)`` rows (:func:`bootstrap_blocks`).

    Returns:
        (resamples, s) float64: ``out[k, j] == scores[indices[k], j].mean()``.
    """
    n = scores.shape[0]
    step = _block_rows(n)
    blocks = indices
    if isinstance(indices, np.ndarray):
        blocks = (indices[start : start + step] for start in range(0, len(indices), step))
    offsets = (np.arange(step) * n)[:, None]
    counts = np.empty((step, n))  # reused: a fresh block each time costs more than the product
    out = []
    for block in blocks:
        rows = len(block)
        if rows > step or block.shape[1:] != (n,):
            raise ValueError(f"an index block of shape {block.shape} for {n} rows: at most {step} rows of {n}")
        # How often each row is drawn in each resample: (rows, n) counts, then one product for all systems.
        np.copyto(counts[:rows], np.bincount((block + offsets[:rows]).ravel(), minlength=rows * n).reshape(rows, n))
        out.append(counts[:rows] @ scores / n)
    return np.concatenate(out)


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
    out = np.empty((trials, differences.shape[1]))
    total = differences.sum(axis=0)
    swapped = np.empty((_block_rows(n, multiple=32), n))
    start = 0
    for block in _swap_blocks(n, trials, seed):
        rows = len(block)
        np.copyto(swapped[:rows], block)
        # sum(sign * d) with sign -1 where swapped = sum(d) - 2 * sum(swapped * d).
        out[start : start + rows] = np.abs(total - 2.0 * (swapped[:rows] @ differences)) / n
        start += rows
    return out


def _swap_blocks(n: int, trials: int, seed: int | None):
    """sacrebleu's swap draw ``default_rng(seed).integers(2, size=(trials, n), dtype=bool)``, in (rows, n) blocks."""
    # Blocks of whole 32-row multiples keep the bit stream the same as one (trials, n) draw.
    return _drawn_blocks(n, trials, seed, bool, high=2, multiple=32)


def smallest_randomization_p(n: int, trials: int = DEFAULT_TRIALS, seed: int | None = DEFAULT_SEED) -> float:
    """The smallest p approximate randomization can give on n rows: ``(m + 1) / (trials + 1)``.

    m counts the trials that swap every row or none: they give exactly the observed ``|delta|``, and for
    rows whose differences all have one sign (and are not 0) every other swap gives less. With a seed, m is
    counted in the seed's draws (:func:`randomized_differences`'); with ``seed=None`` it is its expectation,
    ``trials * 2^(1 - n)`` (each row swapped with probability 1/2; one row: every trial).
    """
    if seed is None:
        constant = trials * min(1.0, 2.0 ** (1 - n))
    else:
        constant = sum(int(np.sum(block.all(axis=1) | ~block.any(axis=1))) for block in _swap_blocks(n, trials, seed))
    return (constant + 1) / (trials + 1)


def smallest_significant_n(
    trials: int = DEFAULT_TRIALS, seed: int | None = DEFAULT_SEED, alpha: float = ALPHA
) -> int | None:
    """The fewest rows on which approximate randomization can give p < ``alpha``
    (:func:`smallest_randomization_p`); None if no number can (``1 / (trials + 1) >= alpha``)."""
    if 1 / (trials + 1) >= alpha:
        return None
    n = 1
    # m shrinks about twofold a row, so this ends near log2(trials * 2 / (alpha * trials)); m = 0 always ends it.
    while smallest_randomization_p(n, trials, seed) >= alpha:
        n += 1
    return n


def p_value(null: np.ndarray, observed: np.ndarray, tolerance: np.ndarray | float = 0.0) -> np.ndarray:
    """``(c + 1) / (k + 1)`` per column, c counting the k null statistics at least ``observed - tolerance``.

    Args:
        null: (k, p) statistics under the null hypothesis.
        observed: (p,) observed statistics.
        tolerance: (p,) or a number: how far a statistic may fall short of ``observed`` and still tie it
            (the scores' float noise; see the module docstring).
    """
    count = np.sum(null >= observed - tolerance, axis=0)
    return (count + 1) / (len(null) + 1)


def percentile_ci(samples: np.ndarray) -> np.ndarray:
    """sacrebleu's 95 % interval per column of (k, p) samples: (p, 2) [lower, upper]."""
    ordered = np.sort(samples, axis=0)
    k = len(ordered)
    lower = k // 40
    return np.stack([ordered[lower], ordered[k - lower - 1]], axis=1)


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
    rtol: float = SCORE_RTOL,
    scorer_signature: str | None = None,
    baseline: str | None = None,
) -> ComparisonResult:
    """Compare systems scored on the same rows: means, 95 % intervals and paired p-values.

    Args:
        scores: per system, n scores (higher is better), row i of every system on the same
            context: a dict ``{name: scores}`` or a list (named by ``names``, else system1, system2...); a 2-D
            array is read one system a row, (systems, n).
        names: the systems' names when ``scores`` is a list.
        calibrated: the calibrated scores, in the same layout, for the table; optional.
        test: the test whose p-value decides: ``"ar"`` (approximate randomization, two-sided; the
            default) or ``"bs"`` (sacrebleu's paired bootstrap, nearly one-sided: see the module
            docstring). Both p-values are reported.
        resamples: bootstrap resamples (also the intervals'); trials: randomization trials.
        seed: of both draws; None draws fresh entropy (then the signature says ``seed:none``).
        rtol: relative tolerance of a score (default :data:`SCORE_RTOL`, 1e-5: the float32 default's
            batch invariance): differences within it are ties, so float noise moves no p-value (module docstring).
        scorer_signature: appended to the signature (``DensityScorer.signature``).
        baseline: a system's name: each other system is tested against it alone (as sacrebleu compares systems
            with a baseline), instead of every pair. Either way the p-values of the tests run are Holm-corrected
            (:func:`holm`) for their number, and a pair is significant on its corrected p-value.

    Returns:
        A :class:`ComparisonResult`.

    Example:
        >>> result = compare({"a": [0.1, 0.5, 0.9, 0.4], "b": [0.0, 0.2, 0.8, 0.1]}, resamples=200, trials=200)
        >>> round(result.pairs[0]["delta"], 6), result.pairs[0]["wins_a"]
        (0.2, 1.0)
    """
    resamples, trials = _checked_options(test, resamples, trials, seed, rtol)
    system_names, matrix, calibrated_matrix = _score_matrices(scores, names, calibrated)
    check_baseline(baseline, system_names)
    n = matrix.shape[0]
    boot = resampled_means(matrix, bootstrap_blocks(n, resamples, seed))
    systems = _system_rows(system_names, matrix, calibrated_matrix, boot)
    pair_index = _pair_index(system_names, baseline)
    pairs, boot_differences = _pair_rows(matrix, boot, pair_index, system_names, test, trials, seed, rtol)
    signature = "|".join(
        [Signature.test(test, trials, resamples, seed, rtol).format(), *filter(None, [scorer_signature])]
    )
    warnings = _small_sample_warnings(n, trials, seed)
    for warning in warnings:
        logger.warning(warning)
    correction = {"method": "holm", "tests": len(pairs), "baseline": baseline}
    return ComparisonResult(systems, pairs, signature, warnings, boot_differences, correction)


def _checked_options(test: str, resamples: int, trials: int, seed: int | None, rtol: float) -> tuple[int, int]:
    """:func:`compare`'s options checked, a ValueError naming the first bad one; the resamples and trials as ints."""
    if test not in TESTS:
        raise ValueError(f"test must be one of {sorted(TESTS)}, got {test!r}")
    resamples = positive_int(resamples, "resamples")
    trials = positive_int(trials, "trials")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float, np.floating)) or not 0 <= rtol < 1:
        raise ValueError(f"rtol must be a number in [0, 1), got {rtol!r}")
    return resamples, trials


def _score_matrices(
    scores: Mapping[str, Any] | Sequence[Any],
    names: Sequence[str] | None,
    calibrated: Mapping[str, Any] | Sequence[Any] | None,
) -> tuple[list[str], np.ndarray, np.ndarray | None]:
    """The systems' names, their (n, systems) float64 scores and, if given, their calibrated scores in the same
    column order (a dict may list the systems in another order); a ValueError naming what does not fit."""
    system_names, arrays = _as_systems(scores, names)
    matrix = _as_matrix(arrays, system_names, "scores")
    if calibrated is None:
        return system_names, matrix, None
    calibrated_names, calibrated_arrays = _as_systems(
        calibrated, system_names if not isinstance(calibrated, Mapping) else None
    )
    if sorted(calibrated_names) != sorted(system_names):
        raise ValueError(f"calibrated: systems {calibrated_names} differ from the scores' {system_names}")
    by_name = dict(zip(calibrated_names, calibrated_arrays))
    calibrated_matrix = _as_matrix([by_name[name] for name in system_names], system_names, "calibrated")
    if calibrated_matrix.shape != matrix.shape:
        raise ValueError(f"calibrated has {calibrated_matrix.shape[0]} rows but scores have {matrix.shape[0]}")
    return system_names, matrix, calibrated_matrix


def _system_rows(
    names: list[str], matrix: np.ndarray, calibrated: np.ndarray | None, boot: np.ndarray
) -> list[dict[str, Any]]:
    """``ComparisonResult.systems``: per system its n, mean, bootstrap 95 % interval (of the resampled means
    ``boot``) and mean calibrated score (None without calibrated scores)."""
    means, system_ci = matrix.mean(axis=0), percentile_ci(boot)
    return [
        {
            "name": name,
            "n": matrix.shape[0],
            "mean": float(means[j]),
            "ci": system_ci[j].tolist(),
            "calibrated_mean": None if calibrated is None else float(calibrated[:, j].mean()),
        }
        for j, name in enumerate(names)
    ]


def _pair_index(names: list[str], baseline: str | None) -> list[tuple[int, int]]:
    """The pairs tested, as column indices (a, b): every pair, a before b; or with a baseline, each other system as
    a and the baseline as b (delta = mean(system) - mean(baseline))."""
    if baseline is None:
        return list(itertools.combinations(range(len(names)), 2))
    return [(j, names.index(baseline)) for j, name in enumerate(names) if name != baseline]


def _pair_rows(
    matrix: np.ndarray,
    boot: np.ndarray,
    pair_index: list[tuple[int, int]],
    names: list[str],
    test: str,
    trials: int,
    seed: int | None,
    rtol: float,
) -> tuple[list[dict[str, Any]], np.ndarray]:
    """``ComparisonResult.pairs`` (p-values of both tests, Holm-corrected over the pairs on ``test``'s, wins and ties
    within the scores' tolerance: module docstring) and the (resamples, pairs) bootstrap differences."""
    n = matrix.shape[0]
    differences = np.stack([matrix[:, a] - matrix[:, b] for a, b in pair_index], axis=1)  # (n, pairs)
    delta = differences.mean(axis=0)
    # How far each row's difference may move with the scores' float noise, and every test statistic with it.
    row_tolerance = (rtol + n * np.finfo(np.float64).eps) * np.stack(
        [np.abs(matrix[:, a]) + np.abs(matrix[:, b]) for a, b in pair_index], axis=1
    )
    tolerance = 3 * row_tolerance.max(axis=0)
    boot_differences = np.stack([boot[:, a] - boot[:, b] for a, b in pair_index], axis=1)
    spread = np.abs(boot_differences)
    p_bootstrap = p_value(spread - spread.mean(axis=0), np.abs(delta), tolerance)
    p_randomization = p_value(randomized_differences(differences, trials, seed), np.abs(delta), tolerance)
    deciding = p_bootstrap if test == "bs" else p_randomization
    adjusted, pair_ci = holm(deciding), percentile_ci(boot_differences)
    pairs = []
    for j, (a, b) in enumerate(pair_index):
        significant = bool(adjusted[j] < ALPHA)
        winner = None
        if significant and abs(delta[j]) > tolerance[j]:
            winner = names[a] if delta[j] > 0 else names[b]
        d, e = differences[:, j], row_tolerance[:, j]
        pairs.append(
            {
                "a": names[a],
                "b": names[b],
                "delta": float(delta[j]),
                "ci": pair_ci[j].tolist(),
                "p_value": float(deciding[j]),
                "p_holm": float(adjusted[j]),
                "test": test,
                "p_bootstrap": float(p_bootstrap[j]),
                "p_randomization": float(p_randomization[j]),
                "significant": significant,
                "winner": winner,
                "wins_a": float(np.mean(d > e)),
                "wins_b": float(np.mean(d < -e)),
                "ties": float(np.mean(np.abs(d) <= e)),
            }
        )
    return pairs, boot_differences


def check_baseline(baseline: str | None, names: Sequence[str]) -> None:
    """A ValueError naming ``baseline`` and the systems where it is none of ``names`` (None: no baseline)."""
    if baseline is not None and baseline not in names:
        raise ValueError(f"baseline {baseline!r} is not one of the systems {list(names)}")


def holm(p_values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm, 1979) of a family of m tests, in input order: the k-th smallest
    p (k from 0) becomes ``min(1, max_{i <= k} (m - i) p_(i))``. A test is significant at level alpha where its
    adjusted p is below alpha; the family-wise error rate is then at most alpha."""
    p = np.asarray(p_values, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    scaled = (len(p) - np.arange(len(p))) * p[order]
    adjusted = np.empty_like(p)
    adjusted[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return adjusted


def _small_sample_warnings(n: int, trials: int, seed: int | None) -> list[str]:
    """A warning when n rows, or the trials, are fewer than approximate randomization needs to reach p < ALPHA."""
    needed = smallest_significant_n(trials, seed)
    if needed is None:  # the trials are too few, on any number of rows
        return [
            f"{trials} trials: too few for approximate randomization to reach p < {ALPHA} on any number of rows "
            f"(p >= 1/{trials + 1}); give more trials"
        ]
    if n >= needed:
        return []
    rows = f"{n} row{'s' if n != 1 else ''}"
    reach = (
        f"it needs at least {needed} rows (its smallest p on {rows}: {smallest_randomization_p(n, trials, seed):.4f})"
    )
    # Both p-values are reported whichever test decides, so the warning speaks of both.
    bootstrap = "; the bootstrap's p is not meaningful there either" + (
        " (on 1 row every resample is that row)" if n == 1 else ""
    )
    return [f"{rows}: too few for approximate randomization to reach p < {ALPHA}: {reach}{bootstrap}"]
