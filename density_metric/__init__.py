"""DEnsity (Park et al., Findings of ACL 2023): how typical a dialogue response is of human conversation."""

__version__ = "0.1.0"

from .checkpoint import (  # noqa: E402
    Checkpoint,
    CheckpointError,
    DensityConfig,
    load_checkpoint,
    resolve_checkpoint,
    save_checkpoint,
)
from .gaussian import GaussianAccumulator, GaussianStats, calibrate, mahalanobis  # noqa: E402
from .scoring import DensityResult, DensityScorer, score  # noqa: E402
from .text import encode_pairs, join_context  # noqa: E402

__all__ = [
    "Checkpoint",
    "CheckpointError",
    "DensityConfig",
    "DensityResult",
    "DensityScorer",
    "GaussianAccumulator",
    "GaussianStats",
    "calibrate",
    "encode_pairs",
    "join_context",
    "load_checkpoint",
    "mahalanobis",
    "resolve_checkpoint",
    "save_checkpoint",
    "score",
]
