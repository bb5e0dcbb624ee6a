"""The Gaussian of human responses' features, and the DEnsity score (paper, eq. 5-6).

Everything here is float64 numpy. Features arrive as (n, d) arrays of any float dtype.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .repetition import RepetitionTerm

# pinv: the authors' maximum-likelihood covariance; ledoit-wolf / oas: shrunk towards a
# scaled identity (Ledoit & Wolf 2004; Chen et al. 2010), then inverted the same way.
ESTIMATORS = ("pinv", "ledoit-wolf", "oas")
# Eigenvalues of the covariance below this fraction of the largest are dropped by the
# pseudo-inverse. Features are float32 (rounding ~6e-8 relative), so variances that small
# are rounding noise; the main case is the exact null direction of the encoder's final
# LayerNorm (its outputs satisfy one linear constraint), which numpy's default cutoff
# (1e-15) would keep and blow up to ~1e15.
PINV_RTOL = 1e-10
DEFAULT_QUANTILE_LEVELS = np.linspace(0.0, 1.0, 1001)


class GaussianAccumulator:
    """Streaming mean and maximum-likelihood covariance in float64.

    Batches are merged with Chan et al.'s pairwise update, so the features of a large
    corpus never need to be held at once, and accumulators from several processes
    can be merged exactly.
    """

    def __init__(self, dim: int):
        self.n = 0
        self.mean = np.zeros(dim, dtype=np.float64)
        self._scatter = np.zeros((dim, dim), dtype=np.float64)  # sum of centred outer products
        # Raw sums for the fourth moment that Ledoit-Wolf needs, a = ||x||^2: sum a, sum a^2, sum a x.
        self._sum_a = 0.0
        self._sum_a2 = 0.0
        self._sum_ax = np.zeros(dim, dtype=np.float64)

    def update(self, features: np.ndarray) -> None:
        """Add a batch. features: (m, d)."""
        features = np.asarray(features, dtype=np.float64)
        if features.ndim != 2 or features.shape[1] != self.mean.shape[0]:
            raise ValueError(f"features must be (m, {self.mean.shape[0]}), got {features.shape}")
        if len(features):
            other = GaussianAccumulator(features.shape[1])
            other.n = len(features)
            other.mean = features.mean(axis=0)
            centred = features - other.mean
            other._scatter = centred.T @ centred
            squared_norms = np.einsum("nd,nd->n", features, features)
            other._sum_a, other._sum_a2 = squared_norms.sum(), (squared_norms**2).sum()
            other._sum_ax = squared_norms @ features
            self.merge(other)

    def merge(self, other: GaussianAccumulator) -> None:
        """Fold another accumulator's samples into this one."""
        if other.n == 0:
            return
        n = self.n + other.n
        delta = other.mean - self.mean
        self._scatter += other._scatter + np.outer(delta, delta) * (self.n * other.n / n)
        self.mean = self.mean + delta * (other.n / n)
        self.n = n
        self._sum_a += other._sum_a
        self._sum_a2 += other._sum_a2
        self._sum_ax = self._sum_ax + other._sum_ax

    STATE_KEYS = ("n_samples", "mean", "scatter", "sum_a", "sum_a2", "sum_ax")

    def state_dict(self) -> dict[str, np.ndarray]:
        """Everything the accumulator holds, as float64 / int64 arrays (for a safetensors file)."""
        return {
            "n_samples": np.asarray(self.n, dtype=np.int64),
            "mean": self.mean.copy(),
            "scatter": self._scatter.copy(),
            "sum_a": np.asarray(self._sum_a, dtype=np.float64),
            "sum_a2": np.asarray(self._sum_a2, dtype=np.float64),
            "sum_ax": self._sum_ax.copy(),
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, np.ndarray]) -> GaussianAccumulator:
        """The accumulator that :meth:`state_dict` described; a ValueError names a missing or misshapen key."""
        missing = [key for key in cls.STATE_KEYS if key not in state]
        if missing:
            raise ValueError(f"accumulator state lacks {', '.join(missing)}")
        dim = np.shape(state["mean"])[0]
        shapes = {"n_samples": (), "mean": (dim,), "scatter": (dim, dim), "sum_a": (), "sum_a2": (), "sum_ax": (dim,)}
        for key, shape in shapes.items():
            if np.shape(state[key]) != shape:
                raise ValueError(f"accumulator state {key!r} has shape {np.shape(state[key])}, expected {shape}")
        accumulator = cls(dim)
        accumulator.n = int(state["n_samples"])
        accumulator.mean = np.asarray(state["mean"], dtype=np.float64).copy()
        accumulator._scatter = np.asarray(state["scatter"], dtype=np.float64).copy()
        accumulator._sum_a, accumulator._sum_a2 = float(state["sum_a"]), float(state["sum_a2"])
        accumulator._sum_ax = np.asarray(state["sum_ax"], dtype=np.float64).copy()
        return accumulator

    @property
    def covariance(self) -> np.ndarray:
        """Maximum-likelihood covariance (divided by n), (d, d) float64."""
        if self.n == 0:
            raise ValueError("no features were accumulated")
        return self._scatter / self.n

    def centred_fourth_moment(self) -> float:
        """sum_i ||x_i - mean||^4, from the raw sums (expanding the square around the mean)."""
        m, c = self.mean, float(self.mean @ self.mean)
        second = self._scatter + self.n * np.outer(m, m)  # sum x x^T
        return float(
            self._sum_a2
            - 4 * m @ self._sum_ax
            + 4 * m @ second @ m
            + 2 * c * self._sum_a
            - 4 * c * self.n * c
            + self.n * c * c
        )


def shrunk_covariance(accumulator: GaussianAccumulator, estimator: str) -> tuple[np.ndarray, float]:
    """(covariance, shrinkage): (1 - s) S + s (tr(S) / d) I for ``ledoit-wolf`` and ``oas``; S itself for ``pinv``."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator must be one of {ESTIMATORS}, got {estimator!r}")
    covariance, n = accumulator.covariance, accumulator.n
    if estimator == "pinv":
        return covariance, 0.0
    dim = covariance.shape[0]
    scale = np.trace(covariance) / dim
    target_distance = np.sum((covariance - scale * np.eye(dim)) ** 2) / dim  # d^2 (Ledoit & Wolf, lemma 3.2)
    if estimator == "ledoit-wolf":
        # b^2 = 1/n^2 sum_i ||x_i x_i^T - S||_F^2 / d, with sum_i x_i x_i^T = n S for centred x.
        spread = (accumulator.centred_fourth_moment() - n * np.sum(covariance**2)) / (n * n * dim)
        shrinkage = 0.0 if target_distance == 0 else min(spread, target_distance) / target_distance
    else:  # Chen et al. (2010), eq. 23, with the trace forms of S
        mean_square = np.sum(covariance**2) / dim**2
        denominator = (n + 1) * (mean_square - scale**2 / dim)
        shrinkage = 1.0 if denominator == 0 else min((mean_square + scale**2) / denominator, 1.0)
    shrunk = (1 - shrinkage) * covariance
    shrunk[np.diag_indices(dim)] += shrinkage * scale
    return shrunk, float(shrinkage)


def precision_matrix(covariance: np.ndarray) -> np.ndarray:
    """Precision P used in the score: the symmetric pseudo-inverse (the authors' pinvh)."""
    precision = np.linalg.pinv(covariance, rtol=PINV_RTOL, hermitian=True)
    return (precision + precision.T) / 2


def mahalanobis(features: np.ndarray, mean: np.ndarray, precision: np.ndarray) -> np.ndarray:
    """Mahalanobis distance sqrt((h - mu) P (h - mu)^T) of every row, (n,) float64.

    One einsum over rows; no (n, n) matrix is formed.
    """
    centred = np.asarray(features, dtype=np.float64) - mean
    squared = np.einsum("nd,de,ne->n", centred, precision, centred, optimize=True)
    # A pseudo-inverse is PSD up to rounding; tiny negatives would give NaN.
    return np.sqrt(np.maximum(squared, 0.0))


def calibrate(distances: np.ndarray, quantiles: np.ndarray) -> np.ndarray:
    """Share of held-out human responses whose distance is larger, in [0, 1].

    Args:
        distances: (n,) Mahalanobis distances.
        quantiles: (k,) distances of held-out human responses at evenly spaced
            levels 0, 1/(k-1), ..., 1 (their empirical quantile function).
    """
    levels = np.linspace(0.0, 1.0, len(quantiles))
    return 1.0 - np.interp(distances, quantiles, levels)


@dataclass
class GaussianStats:
    """What the score needs: mean (d,), precision (d, d), and the calibration quantiles (k,).

    ``quantiles`` is None until :meth:`calibrated` adds them; a checkpoint needs them. ``repetition``:
    the optional term beside the density (:mod:`density_metric.repetition`); the quantiles are then
    those of the distances with the term.
    """

    mean: np.ndarray
    precision: np.ndarray
    n_samples: int
    estimator: str
    quantiles: np.ndarray | None = None
    repetition: RepetitionTerm | None = None

    @classmethod
    def fit(cls, accumulator: GaussianAccumulator, estimator: str = "pinv") -> GaussianStats:
        """Mean and precision from an accumulator (paper, section 3.2), not yet calibrated."""
        covariance, _ = shrunk_covariance(accumulator, estimator)
        return cls(
            mean=accumulator.mean.copy(),
            precision=precision_matrix(covariance),
            n_samples=accumulator.n,
            estimator=estimator,
        )

    def calibrated(self, heldout_distances: np.ndarray) -> GaussianStats:
        """These statistics with calibration quantiles: the distances (n,) of held-out human
        responses at levels 0, 0.001, ..., 1."""
        heldout_distances = np.asarray(heldout_distances, dtype=np.float64)
        if heldout_distances.ndim != 1 or len(heldout_distances) < 2:
            raise ValueError(f"calibration needs at least 2 held-out distances, got shape {heldout_distances.shape}")
        return replace(self, quantiles=np.quantile(heldout_distances, DEFAULT_QUANTILE_LEVELS))

    @property
    def dim(self) -> int:
        return self.mean.shape[0]

    def euclidean(self, features: np.ndarray) -> np.ndarray:
        """The Euclidean distance ||h - mu|| of each row of ``features`` (n, d) to the mean: (n,) float64. The paper's
        Table 2 ablation: the density's mean without its covariance (not calibrated, no floor: not the score)."""
        return np.linalg.norm(np.asarray(features, dtype=np.float64) - self.mean, axis=1)

    def distances(self, features: np.ndarray, reply_rep2: np.ndarray | None = None) -> np.ndarray:
        """The score's distance of each row, (n,) float64: the Mahalanobis distance of the features (n, d),
        with the repetition term if these statistics carry one, which then needs the replies' rep-2 (n,)."""
        distances = mahalanobis(features, self.mean, self.precision)
        if self.repetition is None:
            return distances
        if reply_rep2 is None:
            raise ValueError("these statistics carry a repetition term: pass the replies' rep-2 too")
        return self.repetition.distances(distances, reply_rep2)
