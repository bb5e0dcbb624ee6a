"""Fine-tuning with the density term (train/losses/density_term.py) on a tiny random BERT."""

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from density_train.evaluation.evaluators import SelectionEvaluator, encode_groups
from density_train.loop.trainer import Trainer
from density_train.losses.density_term import draw_copies

from .test_training import assert_same_weights, config_for, dialogue_data, read_log

COPIES = "echo:1,speaker:1,earlier:1,span:1"


@pytest.fixture(scope="module")
def start(backbone, tmp_path_factory):
    """A trained tiny model (a run's best/) to fine-tune from."""
    out = tmp_path_factory.mktemp("start")
    train, valid = dialogue_data()
    Trainer(config_for(backbone, validation_kinds="", epochs=1), train, valid, out).train()
    return out / "best"


def density_config(backbone, start, **overrides):
    base = dict(init_from=str(start), density_weight=1.0, density_copies=2, copy_mix=COPIES, bank_size=16)
    return config_for(backbone, validation_kinds="", **{"dropout": False, **base, **overrides})


def test_init_from_starts_from_the_checkpoints_encoder_and_head(backbone, start, tmp_path):
    train, valid = dialogue_data()
    trainer = Trainer(density_config(backbone, start, density_weight=0.0), train, valid, tmp_path)
    saved = load_file(str(start / "model.safetensors"))
    model = trainer.accelerator.unwrap_model(trainer.model)
    for name, tensor in model.encoder.state_dict().items():
        torch.testing.assert_close(tensor, saved[name], rtol=0, atol=0)
    head = load_file(str(start / "density_head.safetensors"))
    assert torch.equal(model.head.weight.detach()[0], head["weight"].float())


@pytest.mark.parametrize("against", ["gold", "bank"])
def test_the_density_term_equals_a_float64_reference(backbone, start, tmp_path, against):
    """Margin relu(m + d(gold) - d(copy)) against the bank's shrunk Gaussian, recomputed in numpy, with
    each copy's own gold or with every gold of the bank; the anchor's drift is 0 at the start (the
    model is its anchor); copies enter no cross-entropy."""
    train, valid = dialogue_data()
    trainer = Trainer(density_config(backbone, start, margin_against=against), train, valid, tmp_path)
    bank = trainer.density_term.bank.features.double().numpy()
    assert len(trainer.density_term.bank) == 16
    rows = [0, 1, 2, 3]
    drawn = trainer._draw(rows, epoch=0)
    copies = draw_copies(train, rows, trainer.config, epoch=0)
    drawn_kinds = [kind for row in rows for kind, _ in copies[row]]
    assert set(drawn_kinds) - {"random"}, drawn_kinds  # real copies were drawn
    assert "random" in drawn_kinds, drawn_kinds  # and a fallback, which the margin must leave out
    contexts = [train.contexts[i] for i in rows]
    candidates = [[train.responses[i], *(t for _, t in drawn[i]), *(t for _, t in copies[i])] for i in rows]
    kinds = [[k for k, _ in drawn[i]] + [k for k, _ in copies[i]] for i in rows]
    trainer.model.eval()
    with torch.no_grad():
        loss, ce, scl, margin, drift, golds = trainer._micro_batch_loss(contexts, candidates, kinds)
        features, logits = trainer.model(encode_groups(trainer.tokenizer, trainer.config, contexts, candidates))
    features, logits = features.double().numpy(), logits.double().numpy()
    group = len(candidates[0])  # gold + 3 negatives + 2 copies
    mean = bank.mean(axis=0)
    covariance = np.cov(bank, rowvar=False, bias=True)
    shrunk = 0.9 * covariance + 0.1 * np.trace(covariance) / len(mean) * np.eye(len(mean))
    precision = np.linalg.inv(shrunk)

    def distance(x):
        return np.sqrt((x - mean) @ precision @ (x - mean))

    bank_distances = [distance(x) for x in bank]

    def hinge(g, copy):
        if against == "gold":
            return max(0.0, 3.0 + distance(features[g * group]) - distance(copy))
        return np.mean([max(0.0, 3.0 + d - distance(copy)) for d in bank_distances])

    hinges = [  # random fallbacks (e.g. an earlier turn of a one-turn context) are not copies: left out
        hinge(g, features[g * group + 4 + j])
        for g in range(4)
        for j, (kind, _) in enumerate(copies[rows[g]])
        if kind != "random"
    ]
    assert margin.item() == pytest.approx(np.mean(hinges), rel=1e-4, abs=1e-5)
    assert drift.item() == pytest.approx(0.0, abs=1e-3)
    cross_entropy = np.mean(
        [np.log(np.exp(logits[g * group : g * group + 4]).sum()) - logits[g * group] for g in range(4)]
    )
    assert ce.item() == pytest.approx(cross_entropy, rel=1e-4)
    np.testing.assert_allclose(golds.double().numpy(), features[::group], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("anchor_negatives", [False, True])
def test_the_anchor_holds_the_golds_or_also_the_negatives_a_float64_reference(
    backbone, start, tmp_path, anchor_negatives
):
    """The drift is the mean Mahalanobis length, under the bank's shrunk Gaussian, of each held feature's
    move from the starting model's: the golds', and with --anchor-negatives the cross-entropy negatives'
    too (never the copies'). The model is moved off its anchor first, so that the drift is not 0."""
    train, valid = dialogue_data()
    config = density_config(backbone, start, anchor_negatives=anchor_negatives)
    trainer = Trainer(config, train, valid, tmp_path)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in trainer.model.encoder.parameters():
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
    rows = [0, 1, 2, 3]
    drawn, copies = trainer._draw(rows, epoch=0), draw_copies(train, rows, trainer.config, epoch=0)
    contexts = [train.contexts[i] for i in rows]
    candidates = [[train.responses[i], *(t for _, t in drawn[i]), *(t for _, t in copies[i])] for i in rows]
    kinds = [[k for k, _ in drawn[i]] + [k for k, _ in copies[i]] for i in rows]
    trainer.model.eval()
    group, held = len(candidates[0]), (4 if anchor_negatives else 1)  # gold + 3 negatives + 2 copies
    # the anchor reads the held candidates alone: with fewer blocks, less of a long context is cut
    alone = encode_groups(trainer.tokenizer, trainer.config, contexts, [row[:held] for row in candidates])
    with torch.no_grad():
        drift = trainer._micro_batch_loss(contexts, candidates, kinds)[4]
        now = trainer.model(encode_groups(trainer.tokenizer, trainer.config, contexts, candidates))[0]
        with trainer.accelerator.autocast():  # as the run reads it (bf16 on a CPU that has it)
            then = trainer.density_term.anchor(alone)[0].double().numpy()
    bank = trainer.density_term.bank.features.double().numpy()
    covariance = np.cov(bank, rowvar=False, bias=True)
    precision = np.linalg.inv(0.9 * covariance + 0.1 * np.trace(covariance) / bank.shape[1] * np.eye(bank.shape[1]))
    index = [g * group + j for g in range(4) for j in range(held)]
    moves = now.double().numpy()[index] - then
    expected = np.mean(np.sqrt(np.einsum("nd,de,ne->n", moves, precision, moves)))
    assert expected > 0.1
    assert drift.item() == pytest.approx(expected, rel=1e-4)


def test_anchor_negatives_needs_an_anchor(backbone, start):
    with pytest.raises(ValueError, match="needs --anchor-weight > 0"):
        density_config(backbone, start, anchor_negatives=True, anchor_weight=0.0)


def test_a_density_run_logs_its_parts_and_resumes_to_the_same_weights(backbone, start, tmp_path):
    train, valid = dialogue_data()
    config = density_config(backbone, start)
    Trainer(config, train, valid, tmp_path / "straight").train()
    Trainer(config, train, valid, tmp_path / "resumed").train(stop_after_steps=4)
    Trainer(config, train, valid, tmp_path / "resumed").train()
    assert_same_weights(tmp_path / "straight", tmp_path / "resumed")
    steps = [r for r in read_log(tmp_path / "straight") if r["type"] == "train"]
    assert all({"margin", "drift"} <= set(r) for r in steps) and steps[-1]["drift"] > 0


def test_the_anchor_needs_a_starting_checkpoint(backbone, start, tmp_path):
    train, valid = dialogue_data()
    with pytest.raises(ValueError, match="needs --init-from"):
        Trainer(density_config(backbone, start, init_from=""), train, valid, tmp_path)


def test_eval_at_start_logs_the_starting_model_as_step_0(backbone, start, tmp_path):
    train, valid = dialogue_data()
    config = density_config(backbone, start, eval_at_start=True, epochs=1, max_steps_per_epoch=1)
    Trainer(config, train, valid, tmp_path).train()
    evaluations = [r for r in read_log(tmp_path) if r["type"] == "eval"]
    assert [r["step"] for r in evaluations] == [0, 1]


def test_recall_is_measured_over_valid_negatives_when_given(backbone, start, tmp_path):
    train, valid = dialogue_data()
    trainer = Trainer(density_config(backbone, start, valid_negatives=7), train, valid, tmp_path)
    assert {len(row) for row in trainer.evaluator(SelectionEvaluator).negatives} == {7}
    assert trainer.config.negatives == 3
    assert 0.0 <= trainer.evaluate()["recall_at_1"] <= 1.0


def test_a_density_term_needs_every_dropout_off(backbone, start):
    with pytest.raises(ValueError, match="needs --no-dropout"):
        density_config(backbone, start, dropout=True)
