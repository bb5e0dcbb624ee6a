"""The density term (train/losses/density_term.py) against float64 numpy and scipy references."""

import numpy as np
import pytest
import torch
from scipy.spatial.distance import mahalanobis as scipy_mahalanobis

from density_train.losses.density_term import (
    DensityTerm,
    GoldBank,
    anchor_loss,
    bank_margin_loss,
    mahalanobis_distance,
    margin_loss,
)


def reference_gaussian(features: np.ndarray, shrinkage: float) -> tuple[np.ndarray, np.ndarray]:
    features = np.asarray(features, dtype=np.float64)
    mean = features.mean(axis=0)
    covariance = np.cov(features, rowvar=False, bias=True)
    dim = covariance.shape[0]
    shrunk = (1 - shrinkage) * covariance + shrinkage * np.trace(covariance) / dim * np.eye(dim)
    return mean, np.linalg.inv(shrunk)


def test_bank_gaussian_is_the_shrunk_maximum_likelihood_gaussian_of_its_features():
    rng = np.random.default_rng(0)
    features = rng.normal(size=(50, 6)) * np.arange(1, 7)
    bank = GoldBank(size=64, dim=6, shrinkage=0.1)
    bank.push(torch.from_numpy(features).float())
    mean, precision = bank.gaussian()
    expected_mean, expected_precision = reference_gaussian(features.astype(np.float32), 0.1)
    np.testing.assert_allclose(mean.numpy(), expected_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(precision.numpy(), expected_precision, rtol=1e-4, atol=1e-6)


def test_bank_keeps_only_the_newest_features_in_fifo_order():
    bank = GoldBank(size=4, dim=1, shrinkage=1.0)
    for value in range(7):  # pushes 0..6 one at a time; the bank must hold 3, 4, 5, 6
        bank.push(torch.tensor([[float(value)]]))
    assert len(bank) == 4 and bank.count == 7
    assert sorted(bank.features[:, 0].tolist()) == [3.0, 4.0, 5.0, 6.0]
    mean, _ = bank.gaussian()
    assert mean.item() == pytest.approx(4.5)


def test_bank_push_of_more_than_fits_keeps_the_last_rows():
    bank = GoldBank(size=3, dim=1, shrinkage=1.0)
    bank.push(torch.arange(10, dtype=torch.float32)[:, None])
    assert bank.count == 10
    assert sorted(bank.features[:, 0].tolist()) == [7.0, 8.0, 9.0]


def test_bank_gaussian_follows_a_push():
    bank = GoldBank(size=8, dim=2, shrinkage=0.5)
    bank.push(torch.zeros(4, 2) + torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]]))
    first, _ = bank.gaussian()
    bank.push(torch.full((4, 2), 10.0))
    second, _ = bank.gaussian()
    assert torch.allclose(first, torch.zeros(2)) and torch.allclose(second, torch.full((2,), 5.0))


def test_bank_refuses_a_gaussian_of_fewer_than_two_features_and_bad_settings():
    bank = GoldBank(size=8, dim=2)
    bank.push(torch.ones(1, 2))
    with pytest.raises(ValueError, match="at least 2"):
        bank.gaussian()
    with pytest.raises(ValueError, match="shrinkage"):
        GoldBank(size=8, dim=2, shrinkage=0.0)
    with pytest.raises(ValueError, match=r"features must be \(m, 2\)"):
        bank.push(torch.ones(3, 5))


def test_bank_state_round_trips_and_a_wrong_shape_is_refused():
    bank = GoldBank(size=5, dim=3)
    bank.push(torch.randn(7, 3))
    restored = GoldBank(size=5, dim=3)
    restored.load_state_dict(bank.state_dict())
    assert restored.count == 7 and torch.equal(restored.features, bank.features)
    with pytest.raises(ValueError, match="gold bank state"):
        GoldBank(size=6, dim=3).load_state_dict(bank.state_dict())


def test_distance_matches_scipy_row_by_row():
    rng = np.random.default_rng(1)
    features, mean = rng.normal(size=(9, 5)), rng.normal(size=5)
    root = rng.normal(size=(5, 5))
    precision = root @ root.T + np.eye(5)
    got = mahalanobis_distance(
        torch.from_numpy(features).float(), torch.from_numpy(mean).float(), torch.from_numpy(precision).float()
    )
    expected = [scipy_mahalanobis(row, mean, precision) for row in features]
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5)


def test_distance_has_a_finite_gradient_at_the_mean():
    features = torch.zeros(2, 3, requires_grad=True)
    mahalanobis_distance(features, torch.zeros(3), torch.eye(3)).sum().backward()
    assert torch.isfinite(features.grad).all()


def test_margin_loss_matches_a_plain_loop():
    gold = torch.tensor([1.0, 4.0])
    copies = torch.tensor([[2.0, 9.0, 3.5], [0.0, 8.0, 6.0]])
    expected = np.mean([max(0.0, 3.0 + g - c) for g, row in zip([1.0, 4.0], copies.tolist()) for c in row])
    assert margin_loss(gold, copies, margin=3.0).item() == pytest.approx(expected)
    with pytest.raises(ValueError, match=r"\(B, M\)"):
        margin_loss(gold, copies[:1])


def test_margin_loss_pushes_copies_out_and_golds_in():
    gold = torch.tensor([2.0], requires_grad=True)
    copies = torch.tensor([[1.0]], requires_grad=True)
    margin_loss(gold, copies).backward()
    assert gold.grad.item() > 0 and copies.grad.item() < 0  # descent lowers d(gold), raises d(copy)


def test_anchor_loss_is_the_mean_mahalanobis_length_of_the_drift():
    rng = np.random.default_rng(2)
    now, anchor = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    precision = np.diag([1.0, 2.0, 3.0])
    expected = np.mean([scipy_mahalanobis(a, b, precision) for a, b in zip(now, anchor)])
    got = anchor_loss(
        torch.from_numpy(now).float(), torch.from_numpy(anchor).float(), torch.from_numpy(precision).float()
    )
    assert got.item() == pytest.approx(expected, rel=1e-5)


def test_margin_loss_leaves_out_masked_copies_and_is_zero_without_any():
    gold = torch.tensor([1.0, 4.0])
    copies = torch.tensor([[2.0, 9.0], [0.0, 8.0]])
    mask = torch.tensor([[True, False], [False, False]])
    assert margin_loss(gold, copies, margin=3.0, mask=mask).item() == pytest.approx(2.0)  # only 3 + 1 - 2
    assert margin_loss(gold, copies, margin=3.0, mask=torch.zeros(2, 2, dtype=torch.bool)).item() == 0.0


def test_bank_distances_match_scipy_under_the_banks_own_gaussian():
    rng = np.random.default_rng(3)
    features = rng.normal(size=(40, 5)) * np.arange(1, 6)
    bank = GoldBank(size=64, dim=5, shrinkage=0.2)
    bank.push(torch.from_numpy(features).float())
    mean, precision = reference_gaussian(features.astype(np.float32), 0.2)
    expected = [scipy_mahalanobis(row, mean, precision) for row in features.astype(np.float32)]
    np.testing.assert_allclose(bank.distances().numpy(), expected, rtol=1e-4)
    bank.push(torch.zeros(1, 5))  # a push renews them
    assert len(bank.distances()) == 41


def test_bank_margin_loss_matches_a_plain_loop_over_copies_and_bank_golds():
    bank = [1.0, 4.0, 10.0]
    copies = torch.tensor([[2.0, 9.0], [0.0, 12.0]])
    mask = torch.tensor([[True, True], [False, True]])
    hinge = lambda c: np.mean([max(0.0, 3.0 + b - c) for b in bank])  # noqa: E731
    assert bank_margin_loss(torch.tensor(bank), copies, 3.0).item() == pytest.approx(
        np.mean([hinge(c) for c in [2.0, 9.0, 0.0, 12.0]])
    )
    assert bank_margin_loss(torch.tensor(bank), copies, 3.0, mask).item() == pytest.approx(
        np.mean([hinge(c) for c in [2.0, 9.0, 12.0]])
    )
    assert bank_margin_loss(torch.tensor(bank), copies, 3.0, torch.zeros(2, 2, dtype=torch.bool)).item() == 0.0
    with pytest.raises(ValueError, match=r"\(B, M\)"):
        bank_margin_loss(torch.tensor(bank), copies[0])


def test_against_the_bank_only_the_copies_move_and_the_value_is_the_loop_over_the_bank():
    rng = np.random.default_rng(4)
    held = rng.normal(size=(30, 4))
    bank = GoldBank(size=32, dim=4, shrinkage=0.1)
    bank.push(torch.from_numpy(held).float())
    gold = torch.from_numpy(rng.normal(size=(2, 4))).float().requires_grad_(True)
    copies = torch.from_numpy(rng.normal(size=(2, 3, 4)) * 0.3).float().requires_grad_(True)
    total, margin, _ = DensityTerm(bank, margin=2.0, weight=1.5, against="bank").loss(gold, copies)
    mean, precision = reference_gaussian(held.astype(np.float32), 0.1)
    distance = lambda h: scipy_mahalanobis(h, mean, precision)  # noqa: E731
    bank_d = [distance(h) for h in held.astype(np.float32)]
    expected = np.mean(
        [max(0.0, 2.0 + b - distance(c)) for c in copies.detach().numpy().reshape(-1, 4) for b in bank_d]
    )
    assert margin.item() == pytest.approx(expected, rel=1e-4)
    assert total.item() == pytest.approx(1.5 * expected, rel=1e-4)
    total.backward()
    assert gold.grad is None or torch.count_nonzero(gold.grad) == 0
    assert copies.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="against"):
        DensityTerm(bank, margin=2.0, weight=1.0, against="batch")
