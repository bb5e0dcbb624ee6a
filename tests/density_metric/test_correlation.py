"""density_metric.correlation, the one implementation of correlations and AUCs, against scipy and scikit-learn:
ranks with ties, every statistic on (n,) rows and on (k, n) arrays row by row, NaN for a constant row."""

import numpy as np
import pytest
from scipy.stats import kendalltau, pearsonr, rankdata, spearmanr
from sklearn.metrics import roc_auc_score

from density_metric.correlation import auc, average_ranks, kendall_tau, pair_signs, pearson, spearman


def tied_rows(seed: int, shape):
    """Rows with many ties (small integers), as human ratings and rounded scores have."""
    return np.random.default_rng(seed).integers(0, 5, size=shape).astype(float)


def test_average_ranks_are_scipys_rankdata_on_rows_and_arrays():
    for shape in ((1,), (9,), (30,), (6, 30), (2, 3, 11)):
        values = tied_rows(sum(shape), shape)
        np.testing.assert_array_equal(average_ranks(values), rankdata(values, axis=-1))
    continuous = np.random.default_rng(0).normal(size=(4, 50))
    np.testing.assert_array_equal(average_ranks(continuous), rankdata(continuous, axis=-1))


def test_statistics_of_rows_are_scipys():
    rng = np.random.default_rng(1)
    for _ in range(20):
        x, y = tied_rows(rng.integers(1 << 30), 25), rng.normal(size=25)
        assert isinstance(pearson(x, y), float) and isinstance(kendall_tau(x, y), float)
        assert pearson(x, y) == pytest.approx(pearsonr(x, y).statistic, abs=1e-12)
        assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
        assert kendall_tau(x, y) == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)


def test_statistics_of_arrays_are_those_of_each_row():
    x, y = tied_rows(2, (8, 40)), tied_rows(3, (8, 40))
    for function, reference in ((pearson, pearsonr), (spearman, spearmanr), (kendall_tau, kendalltau)):
        expected = [reference(a, b).statistic for a, b in zip(x, y)]
        np.testing.assert_allclose(function(x, y), expected, rtol=0, atol=1e-12)


def test_a_constant_row_has_no_correlation():
    constant, varied = np.ones(6), np.arange(6.0)
    for function in (pearson, spearman, kendall_tau):
        assert np.isnan(function(constant, varied)) and np.isnan(function(varied, constant))
    assert np.isnan(pearson(np.stack([constant, varied]), np.stack([varied, varied]))[0])


def test_pair_signs_are_a_loops():
    values = np.array([3.0, 1.0, 3.0, 2.0])
    loop = [np.sign(values[i] - values[j]) for i in range(4) for j in range(i + 1, 4)]
    assert pair_signs(values).tolist() == loop


def test_auc_is_scikit_learns_with_ties_and_nan_without_a_side():
    rng = np.random.default_rng(4)
    for n_pos, n_neg in ((1, 1), (3, 17), (40, 55)):
        positive, negative = tied_rows(rng.integers(1 << 30), n_pos), tied_rows(rng.integers(1 << 30), n_neg)
        labels = np.r_[np.ones(n_pos), np.zeros(n_neg)]
        expected = roc_auc_score(labels, np.r_[positive, negative])
        assert auc(positive, negative) == pytest.approx(expected, abs=1e-12)
    assert np.isnan(auc([], [1.0])) and np.isnan(auc([1.0], []))
