"""The batches of a training epoch: a seeded shuffle, length-sorted windows, and pool rows in every batch."""

import numpy as np
import pytest

from density_train.data.examples import epoch_batches


def test_epoch_batches_are_todays_slices_without_buckets_and_length_sorted_windows_with():
    n, size, seed = 103, 8, 7
    plain = epoch_batches(n, size, seed)
    order = np.random.default_rng(seed).permutation(n)
    assert plain.tolist() == [order[i * size : (i + 1) * size].tolist() for i in range(n // size)]
    lengths = np.random.default_rng(1).integers(1, 200, n)
    bucketed = epoch_batches(n, size, seed, lengths, bucket_batches=4)
    assert sorted(bucketed.flatten().tolist()) == sorted(plain.flatten().tolist())  # the same rows
    spread = lambda batches: np.mean([np.ptp(lengths[b]) for b in batches])  # noqa: E731
    assert spread(bucketed) < 0.5 * spread(plain)
    assert np.array_equal(bucketed, epoch_batches(n, size, seed, lengths, bucket_batches=4))


def test_epoch_batches_give_every_batch_its_pool_rows_in_their_last_places():
    n, size, seed, pool = 103, 8, 7, np.array([5, 17, 40])
    plain, pooled = epoch_batches(n, size, seed), epoch_batches(n, size, seed, pool=pool, pool_rows=2)
    assert pooled.shape == plain.shape == (n // size, size)
    np.testing.assert_array_equal(pooled[:, :6], plain[:, :6])  # the plain shuffle, cut short
    picks = pooled[:, 6:].flatten()
    assert set(picks) == set(pool.tolist())  # 24 places from 3 rows: the pool repeats
    assert np.bincount(picks, minlength=41)[pool].tolist() == [8, 8, 8]  # in whole rounds of its shuffle
    np.testing.assert_array_equal(pooled, epoch_batches(n, size, seed, pool=pool, pool_rows=2))
    with pytest.raises(ValueError, match="pool_rows must be in"):
        epoch_batches(n, size, seed, pool=pool, pool_rows=8)
