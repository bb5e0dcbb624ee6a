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


def test_grouping_benchmark_scores_the_same_pairs_and_reads_each_context_once(tiny_shared_checkpoint):
    from benchmarks.grouping import grouping_report, reply_systems

    scorer = DensityScorer(str(tiny_shared_checkpoint), device="cpu", dtype="float32", batch_size=8)
    contexts, responses = synthetic_pairs(6, seed=10)
    systems = reply_systems(contexts, responses)
    report = grouping_report(scorer, contexts, systems)
    assert len(systems) == 5 and report["pairs"] == 30
    assert report["max_rel_score_diff"] < 1e-5
    # Independent count: alone, every pair is a row with its context; grouped, each context once.
    encoder = scorer.encoder
    per_pair = encoder.pair_format.encode_rows(
        encoder.tokenizer, [c for _ in systems for c in contexts], [[r] for s in systems.values() for r in s]
    )
    per_context = encoder.pair_format.encode_rows(
        encoder.tokenizer, contexts, [[systems[name][i] for name in systems] for i in range(6)]
    )
    assert report["alone_tokens"] == sum(len(row.ids) for row in per_pair)
    assert report["grouped_tokens"] == sum(len(row.ids) for row in per_context) < report["alone_tokens"]
