"""Fit the Gaussian of human responses' features and write a checkpoint (paper, section 3.2)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from safetensors.numpy import load_file, save_file

from density_metric.features import Encoder
from density_metric.gaussian import GaussianAccumulator, GaussianStats

logger = logging.getLogger(__name__)


def accumulate_features(
    encoder: Encoder,
    contexts: Sequence[Sequence[str]],
    responses: Sequence[str],
    batch_size: int = 64,
    chunk_size: int = 8192,
) -> GaussianAccumulator:
    """Mean and covariance of g(c, r) over all pairs, without holding every feature.

    Pairs are encoded ``chunk_size`` at a time (length-sorted inside each chunk).
    """
    accumulator = GaussianAccumulator(encoder.dim)
    for start in range(0, len(responses), chunk_size):
        stop = start + chunk_size
        for _, features in encoder.iter_features(
            contexts[start:stop], responses[start:stop], batch_size, progress=True
        ):
            accumulator.update(features)
        logger.info("fitted %d / %d pairs", min(stop, len(responses)), len(responses))
    return accumulator


def fit_from_moments(
    encoder: Encoder,
    accumulator: GaussianAccumulator,
    heldout_pairs: tuple[Sequence, Sequence],
    *,
    estimator: str = "pinv",
    batch_size: int = 64,
) -> GaussianStats:
    """Precision from accumulated moments; calibration quantiles from held-out gold pairs."""
    stats = GaussianStats.fit(accumulator, estimator=estimator)
    return stats.calibrated(stats.distances(encoder.features(*heldout_pairs, batch_size=batch_size, progress=True)))


def save_moments(path, accumulator: GaussianAccumulator) -> None:
    """Keep the raw moments beside a checkpoint so other estimators can be tried without re-encoding."""
    save_file(accumulator.state_dict(), str(path))


def load_moments(path) -> GaussianAccumulator:
    """An accumulator saved by :func:`save_moments`; a ValueError names the file and the problem."""
    try:
        return GaussianAccumulator.from_state_dict(load_file(str(path)))
    except Exception as err:  # safetensors raises several error types for a bad file
        raise ValueError(f"{path}: not a moments file of this version ({err})") from None
