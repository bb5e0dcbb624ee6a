"""Scoring across processes or GPUs with ``torch.distributed``.

evaluate's own ``num_process`` gathers every input on process 0 and computes there, which
parallelises nothing for a GPU metric. Here each rank scores a strided shard of the rows
(rank r takes rows r, r + world, ...) and the distances are all-gathered, so every rank
returns the full, input-ordered result.

Launch with ``torchrun --nproc_per_node N your_script.py``; the script calls
``torch.distributed.init_process_group`` (``"nccl"`` on GPUs, ``"gloo"`` on CPU) and, on
GPUs, gives each rank its own device (``DensityScorer(device=f"cuda:{local_rank}")``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch.distributed as dist

from .io.inputs import check_pairs
from .row_flags import warn_flags
from .scoring import DensityResult, DensityScorer


def is_distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def score_distributed(
    scorer: DensityScorer, contexts: Sequence, responses: Sequence, *, first_row: int = 0, warn: bool = True
) -> DensityResult:
    """Score on every rank of the initialised process group; equal to ``scorer.score`` on one process (``warn``:
    log one warning with the counts of flagged rows, as ``scorer.score`` does; on every rank). Each rank scores its
    shard as ``scorer.score`` scores its input (one encoding gives the features and the flags), and the ranks
    gather the distances, ratings and flags."""
    contexts, responses = check_pairs(contexts, responses, first_row=first_row)
    if not is_distributed():
        return scorer.score(contexts, responses, warn=warn)
    rank, world = dist.get_rank(), dist.get_world_size()
    mine, mine_responses = contexts[rank::world], responses[rank::world]
    features, local_flags = scorer.features_and_flags(mine, mine_responses)
    local_distances = scorer.distances_of(features, mine_responses, local_flags)
    local = (local_distances, scorer.ratings(local_distances, features), local_flags)
    gathered: list = [None] * world
    dist.all_gather_object(gathered, local)
    distances = np.empty(len(responses), dtype=np.float64)
    ratings = np.empty(len(responses), dtype=np.float64) if local[1] is not None else None
    flags: list = [None] * len(responses)
    for shard_rank, (shard, shard_ratings, shard_flags) in enumerate(gathered):
        distances[shard_rank::world] = shard
        flags[shard_rank::world] = shard_flags
        if ratings is not None:
            ratings[shard_rank::world] = shard_ratings
    result = scorer.result(distances, flags=flags)
    result.ratings = ratings
    if warn:
        warn_flags(result.flags)
    return result
