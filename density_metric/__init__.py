"""DEnsity (Park et al., Findings of ACL 2023): how typical a dialogue response is of human conversation."""

from .checkpoint.format import Checkpoint, DensityConfig, load_checkpoint, save_checkpoint
from .checkpoint.sources import resolve_checkpoint
from .comparison.result import ComparisonResult
from .comparison.significance import compare
from .encoding.packing import encode_pairs
from .encoding.pair_format import PairFormat, join_context
from .errors import CheckpointError
from .gaussian import GaussianAccumulator, GaussianStats, calibrate, mahalanobis
from .scoring import DensityResult, DensityScorer, score
from .version import __version__

__all__ = [
    "Checkpoint",
    "CheckpointError",
    "ComparisonResult",
    "DensityConfig",
    "DensityResult",
    "DensityScorer",
    "GaussianAccumulator",
    "GaussianStats",
    "PairFormat",
    "__version__",
    "calibrate",
    "compare",
    "encode_pairs",
    "join_context",
    "load_checkpoint",
    "mahalanobis",
    "resolve_checkpoint",
    "save_checkpoint",
    "score",
]
