"""Correlations and AUCs, the one implementation that ``train/`` and ``benchmarks/`` use: numpy float64, no scipy.

- :func:`average_ranks`: 1-based ranks, ties given their average rank (scipy's ``rankdata``, method ``average``);
- :func:`pearson`, :func:`spearman` (Pearson of the average ranks) and :func:`kendall_tau` (tau-b);
- :func:`auc`: P(a positive outscores a negative), ties counted half (Mann-Whitney U / (n_pos n_neg)).

Every function works on the last axis, so a (k, n) array gives k values (a bootstrap's resamples at once); a
statistic of a constant row is NaN. The tests check them against scipy and scikit-learn. They live in
``density_metric/`` because it is below both ``train/`` and ``benchmarks/`` (neither may import the other's way up).
"""

from __future__ import annotations

import numpy as np


def average_ranks(values) -> np.ndarray:
    """1-based ranks of ``values`` (..., n) along the last axis, float64, ties given their average rank."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, axis=-1, kind="stable")
    ordered = np.take_along_axis(values, order, axis=-1)
    n = values.shape[-1]
    positions = np.broadcast_to(np.arange(n), values.shape)
    starts_run = np.ones(values.shape, dtype=bool)
    starts_run[..., 1:] = ordered[..., 1:] != ordered[..., :-1]
    ends_run = np.ones(values.shape, dtype=bool)
    ends_run[..., :-1] = starts_run[..., 1:]
    first = np.maximum.accumulate(np.where(starts_run, positions, 0), axis=-1)  # each run's first position
    last = np.flip(np.minimum.accumulate(np.flip(np.where(ends_run, positions, n - 1), -1), axis=-1), -1)
    ranks = np.empty(values.shape, dtype=np.float64)
    np.put_along_axis(ranks, order, (first + last + 2) / 2, axis=-1)
    return ranks


def pearson(x, y):
    """Pearson r between the last axes of ``x`` and ``y``: a float for two (n,) arrays, an array for (..., n);
    NaN where one is constant."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (a * b).sum(-1) / np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
    return float(r) if np.ndim(r) == 0 else r


def spearman(x, y):
    """Spearman rho: :func:`pearson` of the :func:`average_ranks`."""
    return pearson(average_ranks(x), average_ranks(y))


def pair_signs(values) -> np.ndarray:
    """sign(v_i - v_j) over the pairs i < j of the last axis: (..., n(n-1)/2)."""
    values = np.asarray(values, dtype=np.float64)
    upper = np.triu_indices(values.shape[-1], k=1)
    return np.sign(values[..., upper[0]] - values[..., upper[1]])


def kendall_tau(x, y):
    """Kendall tau-b between the last axes of ``x`` and ``y`` (NaN where one is constant), from all n(n-1)/2 pairs:
    for the few values of a system-level correlation, not for long rows."""
    a, b = pair_signs(x), pair_signs(y)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (a * b).sum(-1) / np.sqrt((a * a).sum(-1) * (b * b).sum(-1))
    return float(tau) if np.ndim(tau) == 0 else tau


def auc(positive, negative) -> float:
    """P(a positive outscores a negative), ties counted half (Mann-Whitney U / (n_pos n_neg)); NaN without a
    positive or a negative."""
    positive, negative = np.asarray(positive, dtype=np.float64), np.asarray(negative, dtype=np.float64)
    if not len(positive) or not len(negative):
        return float("nan")
    ranks = average_ranks(np.concatenate([positive, negative]))
    u = ranks[: len(positive)].sum() - len(positive) * (len(positive) + 1) / 2
    return float(u / (len(positive) * len(negative)))
