"""The speed benchmark's rank() measurement scores the same pairs as score() (no timing is asserted)."""

from benchmarks.speed import rank_speed
from density_metric import DensityScorer
from density_metric.encoding.packing import pack

from ..tiny import synthetic_pairs


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
    per_pair = pack(
        encoder.pair_format,
        encoder.tokenizer,
        [c for _ in systems for c in contexts],
        [[r] for s in systems.values() for r in s],
    ).rows
    per_context = pack(
        encoder.pair_format, encoder.tokenizer, contexts, [[systems[name][i] for name in systems] for i in range(6)]
    ).rows
    assert report["alone_tokens"] == sum(len(row.ids) for row in per_pair)
    assert report["grouped_tokens"] == sum(len(row.ids) for row in per_context) < report["alone_tokens"]


def test_train_speed_times_the_optimizer_steps_of_a_trainer(backbone, tmp_path):
    # time_steps unpacked three values from Trainer._micro_batch_loss, which returns six since the density term:
    # every arm of python -m benchmarks.train_speed stopped with a ValueError.
    import math

    from benchmarks.train_speed import time_steps
    from density_metric.encoding.pair_format import PairFormat
    from density_train.config.recipe import TrainConfig
    from density_train.data.examples import SelectionData, epoch_negatives
    from density_train.loop.trainer import Trainer

    train = SelectionData.from_pairs(*synthetic_pairs(40, seed=0))
    config = TrainConfig(
        backbone=str(backbone),
        negatives=15,
        batch_size=4,
        pair_format=PairFormat(max_length=48, max_response_length=16),
    )
    trainer = Trainer(config, train, train, tmp_path)
    seconds = time_steps(trainer, epoch_negatives(train, 15, 42, 0, False), steps=1, micro=2)
    assert math.isfinite(seconds) and seconds > 0
