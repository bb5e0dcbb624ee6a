"""Shared fixtures: a tiny random-weight DEnsity checkpoint built in code."""

from __future__ import annotations

import pytest

from density_metric.checkpoint import DensityConfig, load_encoder, save_checkpoint
from density_metric.gaussian import GaussianAccumulator, GaussianStats

from .tiny import build_tiny_encoder, synthetic_pairs


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory):
    """A complete DEnsity checkpoint directory with a tiny random encoder and fitted statistics."""
    directory = tmp_path_factory.mktemp("tiny_checkpoint")
    model, tokenizer = build_tiny_encoder(directory / "encoder_src")
    config = DensityConfig(max_length=64, max_response_length=24, name="tiny-test")
    model.save_pretrained(directory / "encoder_src")
    tokenizer.save_pretrained(directory / "encoder_src")
    encoder = load_encoder(directory / "encoder_src", config, device="cpu", dtype="float32")
    accumulator = GaussianAccumulator(encoder.dim)
    accumulator.update(encoder.features(*synthetic_pairs(300, seed=1)))
    heldout = synthetic_pairs(200, seed=2)
    stats = GaussianStats.fit(accumulator, lambda s: s.distances(encoder.features(*heldout)))
    out = directory / "checkpoint"
    save_checkpoint(out, stats, config, model=encoder.model, tokenizer=encoder.tokenizer, card="# tiny test checkpoint\n")
    return out


@pytest.fixture(scope="session")
def tiny_scorer(tiny_checkpoint):
    from density_metric import DensityScorer

    return DensityScorer(str(tiny_checkpoint), device="cpu", dtype="float32", batch_size=8)
