"""benchmarks.paired_bootstrap against scipy, one resample at a time."""

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from benchmarks.paired_bootstrap import resampled_correlations
from density_metric.comparison.significance import bootstrap_indices


def test_resampled_correlations_are_scipys_on_each_resample_ties_included():
    rng = np.random.default_rng(3)
    human = rng.integers(1, 6, size=40).astype(float)  # ratings with many ties, as human scores have
    values = human + rng.normal(size=40)
    values[:5] = values[0]  # tied scores too
    draws = bootstrap_indices(40, 25, seed=1)
    pearson, spearman = resampled_correlations(values, human, draws)
    assert pearson.shape == spearman.shape == (25,)
    for k, rows in enumerate(draws):
        assert pearson[k] == pytest.approx(100 * pearsonr(values[rows], human[rows]).statistic, abs=1e-9)
        assert spearman[k] == pytest.approx(100 * spearmanr(values[rows], human[rows]).statistic, abs=1e-9)


def test_resampled_correlations_refuse_arrays_of_different_rows():
    with pytest.raises(ValueError, match=r"values \(3,\) and human \(4,\)"):
        resampled_correlations(np.zeros(3), np.zeros(4), bootstrap_indices(3, 2))
