"""Gaussian maths against independent float64 numpy references."""

import numpy as np
import pytest

from density_metric.gaussian import (
    GaussianAccumulator,
    GaussianStats,
    calibrate,
    mahalanobis,
    precision_matrix,
    shrunk_covariance,
)


def reference_distance(features, mean, precision):
    """Row by row, the textbook formula in float64."""
    out = []
    for row in np.asarray(features, dtype=np.float64):
        diff = row - mean
        out.append(np.sqrt(max(diff @ precision @ diff, 0.0)))
    return np.array(out)


def test_streaming_accumulator_equals_numpy_mean_and_ml_covariance():
    rng = np.random.default_rng(0)
    features = rng.normal(3.0, 2.0, size=(1000, 7)).astype(np.float32)
    accumulator = GaussianAccumulator(7)
    for chunk in np.array_split(features, [3, 10, 400, 401]):
        accumulator.update(chunk)
    assert accumulator.n == 1000
    np.testing.assert_allclose(accumulator.mean, features.astype(np.float64).mean(0), rtol=1e-12)
    np.testing.assert_allclose(accumulator.covariance, np.cov(features.astype(np.float64).T, bias=True), rtol=1e-10)


def test_merging_accumulators_equals_one_accumulator():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(50, 4)), rng.normal(5, 1, size=(70, 4))
    left, right, whole = GaussianAccumulator(4), GaussianAccumulator(4), GaussianAccumulator(4)
    left.update(a)
    right.update(b)
    whole.update(np.vstack([a, b]))
    left.merge(right)
    np.testing.assert_allclose(left.covariance, whole.covariance, rtol=1e-12)
    np.testing.assert_allclose(left.mean, whole.mean, rtol=1e-12)


def test_precision_is_pseudo_inverse_of_singular_covariance():
    rng = np.random.default_rng(2)
    basis = rng.normal(size=(3, 6))
    covariance = np.cov((rng.normal(size=(200, 3)) @ basis).T, bias=True)  # rank 3 of 6
    precision = precision_matrix(covariance)
    np.testing.assert_allclose(precision, np.linalg.pinv(covariance), atol=1e-8)
    np.testing.assert_allclose(precision, precision.T)


def test_mahalanobis_equals_rowwise_float64_reference():
    rng = np.random.default_rng(3)
    features = rng.normal(size=(40, 5)).astype(np.float32)
    mean = rng.normal(size=5)
    a = rng.normal(size=(5, 5))
    precision = a @ a.T
    np.testing.assert_allclose(
        mahalanobis(features, mean, precision), reference_distance(features, mean, precision), rtol=1e-12
    )


def test_calibrated_is_share_of_heldout_distances_that_are_larger():
    rng = np.random.default_rng(4)
    heldout = rng.gamma(4.0, 2.0, size=20000)
    quantiles = np.quantile(heldout, np.linspace(0, 1, 1001))
    queries = np.array([0.0, 2.0, 8.0, 15.0, 1e6])
    expected = np.array([(heldout > q).mean() for q in queries])
    np.testing.assert_allclose(calibrate(queries, quantiles), expected, atol=2e-3)
    assert calibrate(np.array([0.0]), quantiles)[0] == 1.0
    assert calibrate(np.array([1e6]), quantiles)[0] == 0.0


def test_fit_stores_quantiles_of_heldout_distances():
    rng = np.random.default_rng(5)
    accumulator = GaussianAccumulator(3)
    accumulator.update(rng.normal(size=(500, 3)))
    heldout = rng.normal(size=(300, 3))
    stats = GaussianStats.fit(accumulator)
    assert stats.quantiles is None  # calibration is its own step
    stats = stats.calibrated(stats.distances(heldout))
    distances = reference_distance(heldout, stats.mean, stats.precision)
    np.testing.assert_allclose(stats.quantiles[[0, 500, 1000]], np.quantile(distances, [0, 0.5, 1]), rtol=1e-10)
    assert stats.n_samples == 500 and stats.estimator == "pinv"


def test_unknown_estimator_is_rejected():
    accumulator = GaussianAccumulator(2)
    accumulator.update(np.eye(2))
    with pytest.raises(ValueError, match="estimator"):
        shrunk_covariance(accumulator, "ledoit-wolf-typo")


def streamed(features, chunks=(7, 100, 101)):
    """Two accumulators over the chunks, merged, as a distributed fit would."""
    left, right = GaussianAccumulator(features.shape[1]), GaussianAccumulator(features.shape[1])
    parts = np.array_split(features, chunks)
    for part in parts[:2]:
        left.update(part)
    for part in parts[2:]:
        right.update(part)
    left.merge(right)
    return left


def test_streamed_fourth_moment_equals_direct_computation_far_from_the_origin():
    rng = np.random.default_rng(6)
    features = rng.normal(0, 1, size=(500, 6)) * [1, 2, 3, 0.5, 1, 1] + 40.0
    centred = features - features.mean(0)
    expected = np.sum(np.sum(centred**2, axis=1) ** 2)
    assert streamed(features).centred_fourth_moment() == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("estimator", ["ledoit-wolf", "oas"])
def test_shrunk_covariance_equals_scikit_learn(estimator):
    from sklearn.covariance import ledoit_wolf, oas

    rng = np.random.default_rng(7)
    features = rng.normal(size=(300, 20)) @ rng.normal(size=(20, 20)) + 3.0
    expected, expected_shrinkage = (ledoit_wolf if estimator == "ledoit-wolf" else oas)(features)
    covariance, shrinkage = shrunk_covariance(streamed(features), estimator)
    assert shrinkage == pytest.approx(expected_shrinkage, rel=1e-7)
    np.testing.assert_allclose(covariance, expected, rtol=1e-8, atol=1e-10)


def test_shrinkage_estimators_give_a_full_rank_precision_where_pinv_cannot():
    rng = np.random.default_rng(8)
    features = rng.normal(size=(10, 30))  # fewer samples than dimensions
    accumulator = streamed(features, chunks=(5,))
    assert np.linalg.matrix_rank(GaussianStats.fit(accumulator).precision) < 30
    assert np.linalg.matrix_rank(GaussianStats.fit(accumulator, estimator="ledoit-wolf").precision) == 30


def test_saved_moments_reload_to_the_same_shrunk_covariance(tmp_path):
    from density_train.commands.fit import load_moments, save_moments

    rng = np.random.default_rng(9)
    accumulator = streamed(rng.normal(size=(200, 5)) + 2.0)
    save_moments(tmp_path / "m.safetensors", accumulator)
    reloaded = load_moments(tmp_path / "m.safetensors")
    for estimator in ("pinv", "ledoit-wolf", "oas"):
        np.testing.assert_allclose(
            shrunk_covariance(reloaded, estimator)[0], shrunk_covariance(accumulator, estimator)[0]
        )


def test_accumulator_state_round_trips_and_keeps_merging_exactly():
    rng = np.random.default_rng(11)
    first, second = rng.normal(size=(40, 4)), rng.normal(size=(25, 4))
    accumulator = GaussianAccumulator(4)
    accumulator.update(first)
    restored = GaussianAccumulator.from_state_dict(accumulator.state_dict())
    restored.update(second)
    accumulator.update(second)
    for key, value in accumulator.state_dict().items():
        np.testing.assert_array_equal(restored.state_dict()[key], value)
    both = np.vstack([first, second])
    np.testing.assert_allclose(restored.covariance, np.cov(both.T, bias=True), rtol=1e-12)


def test_accumulator_state_with_a_missing_or_misshapen_key_is_named():
    state = GaussianAccumulator(3).state_dict()
    with pytest.raises(ValueError, match="lacks scatter"):
        GaussianAccumulator.from_state_dict({k: v for k, v in state.items() if k != "scatter"})
    with pytest.raises(ValueError, match=r"'sum_ax' has shape \(2,\), expected \(3,\)"):
        GaussianAccumulator.from_state_dict({**state, "sum_ax": np.zeros(2)})
