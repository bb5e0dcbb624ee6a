"""The speed benchmark's rank() measurement scores the same pairs as score() (no timing is asserted)."""

from benchmarks.speed import rank_speed
from density_metric import DensityScorer

from .tiny import synthetic_pairs


def test_rank_speed_compares_the_same_candidates(tiny_shared_checkpoint):
    scorer = DensityScorer(str(tiny_shared_checkpoint), device="cpu", dtype="float32", batch_size=8)
    contexts, pool = synthetic_pairs(12, seed=9)
    report = rank_speed(scorer, contexts[:5], pool, k=4, repeats=1)
    assert report["layout"] == "shared-context" and report["contexts"] == 5 and report["candidates_per_context"] == 4
    assert report["rank_vs_score_max_rel_diff"] < 1e-5
    assert report["rank_candidates_per_s"] > 0 and report["score_pairs_per_s"] > 0
