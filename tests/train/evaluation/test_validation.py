"""Validation signals: AUC and rank correlations against scikit-learn and scipy; the trainer logs them."""

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr
from sklearn.metrics import roc_auc_score

from density_metric.correlation import auc, average_ranks, pearson, spearman
from density_train.evaluation.validation import last_turn_overlap


def test_auc_equals_scikit_learn_with_ties():
    rng = np.random.default_rng(0)
    positive, negative = rng.integers(0, 6, 40).astype(float), rng.integers(0, 6, 55).astype(float)
    labels = np.r_[np.ones(40), np.zeros(55)]
    assert auc(positive, negative) == pytest.approx(roc_auc_score(labels, np.r_[positive, negative]), abs=1e-12)


def test_rank_correlations_equal_scipy_with_ties():
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 8, 70).astype(float), rng.normal(size=70)
    assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    assert pearson(x, y) == pytest.approx(pearsonr(x, y).statistic, abs=1e-12)
    assert average_ranks([3.0, 1.0, 3.0]).tolist() == [2.5, 1.0, 2.5]


def test_last_turn_overlap_is_the_share_of_reply_words_found_in_the_last_turn():
    contexts = [["Where is it?", "Is it in the kitchen?"], ["hello"], [], ["a b"]]
    responses = ["It is in the KITCHEN, yes.", "bye", "anything", "?!"]
    # "it is in the kitchen yes": it, is, in, the, kitchen found (5 of 6); nothing else overlaps.
    expected = [5 / 6, 0.0, 0.0, 0.0]
    np.testing.assert_allclose(last_turn_overlap(contexts, responses), expected)
