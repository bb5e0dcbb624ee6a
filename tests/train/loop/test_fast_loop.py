"""The training loop without per-step text work (train/loop/step_batches.py, train/loop/token_store.py): its float32 losses
equal those of the text loop it replaced, kept here as a reference, for the paper's recipe and the release recipe's
kinds; no step of those recipes encodes a text; the learning-rate rule; one state write at an epoch's last step."""

import numpy as np
import pytest
import torch

import density_train.loop.step_batches as step_batches
import density_train.loop.trainer as loop
from density_metric.encoding.pair_format import PairFormat
from density_train.config.recipe import TrainConfig, scaled_lr
from density_train.data.examples import epoch_batches, epoch_negatives
from density_train.loop.trainer import Trainer
from density_train.losses.density_term import draw_copies

from .test_density_training import density_config, start  # noqa: F401  (start: the fixture)
from .test_training import config_for, data, dialogue_data, read_log

STEPS = 20


def reference_losses(trainer: Trainer, steps: int) -> list[float]:
    """The loop as it was: each step's negatives and copies drawn as texts, every candidate encoded from its
    text (``encode_groups``), the loss read back after each step."""
    config, data_ = trainer.config, trainer.train_data
    batches = epoch_batches(
        len(data_),
        config.batch_size,
        config.seed,
        trainer.context_lengths,
        config.length_buckets,
        trainer.overlap_pool,
        config.overlap_rows,
    )
    table = None
    if trainer.mix.random_only:
        table = epoch_negatives(data_, config.negatives, config.negatives_seed, 0, config.resample_negatives)
    trainer.model.train()
    losses = []
    for step in range(steps):
        rows = batches[step]
        if table is not None:
            drawn = {int(i): [("random", text) for text in table[i]] for i in rows}
        else:
            drawn = trainer._draw(rows, 0)
        if config.density_weight:
            for row, copies in draw_copies(data_, rows, config, 0).items():
                drawn[row] = [*drawn[row], *copies]
        contexts = [data_.contexts[i] for i in rows]
        candidates = [[data_.responses[i], *(text for _, text in drawn[int(i)])] for i in rows]
        kinds = [[kind for kind, _ in drawn[int(i)]] for i in rows]
        loss, *_, golds = trainer._micro_batch_loss(contexts, candidates, kinds)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainer.model.parameters(), config.max_grad_norm)
        trainer.optimizer.step()
        trainer.scheduler.step()
        trainer.optimizer.zero_grad()
        if trainer.density_term is not None:
            trainer.density_term.push(golds.float())
        losses.append(loss.item())
    return losses


def losses_of(run) -> list[float]:
    return [record["loss"] for record in read_log(run) if record["type"] == "train"]


def assert_fast_losses_equal_the_reference(config, train, valid, tmp_path, monkeypatch):
    reference = reference_losses(Trainer(config, train, valid, tmp_path / "reference"), STEPS)
    encoded = []
    monkeypatch.setattr(step_batches, "encode_groups", lambda *args: encoded.append(1))
    Trainer(config, train, valid, tmp_path / "fast").train(stop_after_steps=STEPS)
    assert not encoded  # no step encoded a text
    np.testing.assert_allclose(losses_of(tmp_path / "fast"), reference, rtol=0, atol=1e-5)


@pytest.mark.parametrize("layout", ["paper", "shared-context"])
def test_the_papers_recipe_loses_as_the_text_loop_did(backbone, tmp_path, monkeypatch, layout):
    train, valid = data()
    pair_format = PairFormat(max_length=48, max_response_length=16, layout=layout)
    config = config_for(
        backbone,
        epochs=1,
        max_steps_per_epoch=STEPS,
        validation_kinds="",
        pair_format=pair_format,
        mixed_precision="no",
    )
    assert_fast_losses_equal_the_reference(config, train, valid, tmp_path, monkeypatch)


def test_without_the_contrastive_term_the_loss_is_the_cross_entropy(backbone, tmp_path):
    """Lambda 0 (the paper's ablation without the contrastive term): each step logs the term as 0 and the loss as
    its cross-entropy, exactly."""
    train, valid = data()
    config = config_for(backbone, epochs=1, max_steps_per_epoch=3, validation_kinds="", contrastive_weight=0.0)
    Trainer(config, train, valid, tmp_path).train()
    steps = [record for record in read_log(tmp_path) if record["type"] == "train"]
    assert len(steps) == 3
    assert all(step["contrastive"] == 0.0 and step["loss"] == step["ce"] > 0 for step in steps)


@pytest.mark.parametrize("pooling", ["feature-token", "mean"])
def test_the_release_recipes_kinds_lose_as_the_text_loop_did(backbone, start, tmp_path, monkeypatch, pooling):  # noqa: F811
    """Random negatives drawn afresh each epoch, copies echo:1,speaker:2, overlap rows, the anchor on the golds
    and negatives."""
    train, valid = dialogue_data()
    layout = "shared-context" if pooling == "mean" else "paper"
    config = density_config(
        backbone,
        start,
        epochs=1,
        max_steps_per_epoch=STEPS,
        negatives=2,
        resample_negatives=True,
        density_copies=3,
        copy_mix="echo:1,speaker:2",
        overlap_rows=1,
        anchor_negatives=True,
        mixed_precision="no",
        pair_format=PairFormat(max_length=48, max_response_length=16, layout=layout, pooling=pooling),
    )
    assert_fast_losses_equal_the_reference(config, train, valid, tmp_path, monkeypatch)


def test_a_kind_made_afresh_is_encoded_from_its_text_with_the_same_losses(backbone, tmp_path, monkeypatch):
    train, valid = dialogue_data()
    config = config_for(
        backbone, epochs=1, max_steps_per_epoch=4, negatives=3, negative_mix="random:1,shuffle:1", validation_kinds=""
    )
    reference = reference_losses(Trainer(config, train, valid, tmp_path / "reference"), 4)
    encode_groups, encoded = step_batches.encode_groups, []
    monkeypatch.setattr(step_batches, "encode_groups", lambda *args: encoded.append(1) or encode_groups(*args))
    Trainer(config, train, valid, tmp_path / "run").train(stop_after_steps=4)
    assert encoded  # the shuffled golds are texts the store never saw
    np.testing.assert_allclose(losses_of(tmp_path / "run"), reference, rtol=0, atol=1e-5)


def test_an_epochs_last_step_writes_the_state_once(backbone, tmp_path, monkeypatch):
    """The last step of an epoch is an evaluation, a --save-every step and the epoch's end: one write."""
    train, valid = data()
    recipe = dict(epochs=2, max_steps_per_epoch=4, save_every=2, validation_kinds="")
    trainer = Trainer(config_for(backbone, **recipe), train, valid, tmp_path)
    writes, replace_state = [], loop.replace_state

    def counted(out_dir, write):
        writes.append(trainer.progress["global_step"])
        replace_state(out_dir, write)

    monkeypatch.setattr(loop, "replace_state", counted)
    trainer.train()
    assert writes == [2, 4, 6, 8]
    evaluations = [record["step"] for record in read_log(tmp_path) if record["type"] == "eval"]
    assert evaluations == [4, 8]
    resumed = Trainer(config_for(backbone, **recipe), train, valid, tmp_path)
    assert resumed.progress["epoch"] == 2 and resumed.train()["global_step"] == 8  # nothing left to do


def test_the_learning_rate_rule_scales_from_sixteen_contexts(backbone, tmp_path):
    assert scaled_lr(5e-5, 64, "linear") == pytest.approx(2e-4)
    assert scaled_lr(5e-5, 64, "sqrt") == pytest.approx(1e-4)
    assert scaled_lr(5e-5, 64, "none") == 5e-5
    train, valid = data()
    trainer = Trainer(config_for(backbone, batch_size=8, grad_accum=2, lr_scaling="sqrt"), train, valid, tmp_path)
    assert trainer.optimizer.param_groups[0]["initial_lr"] == pytest.approx(1e-3)  # 16 contexts: lr as given
    with pytest.raises(ValueError, match=r"is 8 contexts a step; it must be in \[16, 256\] with --lr-scaling linear"):
        TrainConfig(batch_size=8, lr_scaling="linear")
    with pytest.raises(ValueError, match=r"is 512 contexts a step; it must be in \[1, 256\]"):
        TrainConfig(batch_size=128, grad_accum=4)
    with pytest.raises(ValueError, match="--lr-scaling must be one of"):
        TrainConfig(lr_scaling="cubic")


def test_the_card_says_the_learning_rate_is_scaled():
    from tests.train.commands.test_card import card

    assert "AdamW, lr 5e-05, " in card()
    assert "AdamW, lr 5e-05 at 16 contexts a step, scaled sqrt with the contexts a step (--lr-scaling), " in card(
        batch_size=16, lr_scaling="sqrt"
    )


def test_the_next_epochs_plan_is_drawn_ahead_and_equals_one_drawn_then(backbone, tmp_path):
    from density_train.loop.step_batches import StepBatches

    train, valid = data()
    trainer = Trainer(config_for(backbone, resample_negatives=True, validation_kinds=""), train, valid, tmp_path)
    trainer.batches.epoch(0)
    assert set(trainer.batches._plans) == {1}  # epoch 1 is drawn while epoch 0 trains
    ahead, then = trainer.batches.epoch(1), StepBatches(trainer)._plan(1)
    assert not trainer.batches._plans  # the run has 2 epochs
    assert np.array_equal(ahead.batches, then.batches) and np.array_equal(ahead.positions, then.positions)
    assert ahead.negatives == then.negatives != trainer.batches._plan(0).negatives  # drawn afresh each epoch


def test_bland_copies_and_negatives_are_gathered_from_the_store_with_the_text_loops_losses(
    backbone,
    start,  # noqa: F811
    tmp_path,
    monkeypatch,
):
    """A bland reply is a training gold, so it is in the store: no step encodes a text."""
    from tests.train.negatives.test_bland import bland_data

    train, valid = bland_data()
    config = density_config(
        backbone,
        start,
        epochs=1,
        max_steps_per_epoch=STEPS,
        negatives=3,
        negative_mix="random:2,bland:1",
        density_copies=2,
        copy_mix="echo:1,bland:1",
        mixed_precision="no",
    )
    rows = epoch_batches(len(train), config.batch_size, config.seed)[:STEPS].ravel()
    kinds = [kind for copies in draw_copies(train, rows, config, 0).values() for kind, _ in copies]
    assert kinds.count("bland") > STEPS  # most rows get a real bland copy
    assert_fast_losses_equal_the_reference(config, train, valid, tmp_path, monkeypatch)


def test_a_compiled_encoder_loses_as_the_eager_one_and_its_run_resumes_with_it(backbone, tmp_path):
    """--compile aot_eager (dynamo's graph capture and AOTAutograd's forward and backward graphs, run by eager
    kernels: what --compile inductor compiles, without the code generation a test has no time for): the paper
    recipe's float32 losses equal the uncompiled run's, its saved state holds the same parameter names, and the run
    resumes with the same --compile only (inductor draws its own dropout masks: part of the recipe)."""
    train, valid = data()
    pair_format = PairFormat(max_length=48, max_response_length=16, layout="shared-context")
    common = dict(epochs=2, max_steps_per_epoch=4, validation_kinds="", pair_format=pair_format, save_every=2)
    Trainer(config_for(backbone, **common), train, valid, tmp_path / "eager").train(stop_after_steps=4)
    compiled = Trainer(config_for(backbone, compile="aot_eager", **common), train, valid, tmp_path / "compiled")
    assert compiled.model.encoder._compiled_call_impl is not None
    compiled.train(stop_after_steps=4)
    np.testing.assert_allclose(losses_of(tmp_path / "compiled"), losses_of(tmp_path / "eager"), rtol=0, atol=1e-5)
    from safetensors import safe_open

    (weights,) = (tmp_path / "compiled" / "state").rglob("model.safetensors")
    with safe_open(str(weights), "pt") as saved:
        assert not any("_orig_mod" in name for name in saved.keys())
    with pytest.raises(ValueError, match="cannot resume with: --compile"):
        Trainer(config_for(backbone, **common), train, valid, tmp_path / "compiled")
    resumed = Trainer(config_for(backbone, compile="aot_eager", **common), train, valid, tmp_path / "compiled")
    assert resumed.progress["global_step"] == 4
    resumed.train()
    assert len(losses_of(tmp_path / "compiled")) == 8
    with pytest.raises(ValueError, match="compile must be one of"):
        config_for(backbone, compile="tensorrt")


@pytest.mark.parametrize("layout", ["paper", "shared-context"])
def test_padding_to_a_multiple_leaves_the_training_losses_as_they_are(backbone, tmp_path, layout):
    """--pad-multiple 16: every step's inputs are 16k columns wide, and without dropout (whose masks are drawn over
    the padded shape) the float32 losses and the evaluation equal the unpadded run's."""
    train, valid = data()
    pair_format = PairFormat(max_length=48, max_response_length=16, layout=layout)
    common = dict(epochs=1, max_steps_per_epoch=4, pair_format=pair_format, dropout=False)
    widths = {}
    for run, multiple in (("plain", 1), ("padded", 16)):
        trainer = Trainer(config_for(backbone, pad_multiple=multiple, **common), train, valid, tmp_path / run)
        forward, seen = trainer.model.forward, widths.setdefault(run, [])
        trainer.model.forward = lambda inputs, forward=forward, seen=seen: (
            seen.append(inputs["input_ids"].shape[1]) or forward(inputs)
        )
        trainer.train()
    assert len(widths["padded"]) > 4 and all(width % 16 == 0 for width in widths["padded"])  # steps, evaluation
    assert widths["padded"] != widths["plain"]  # columns were added
    np.testing.assert_allclose(losses_of(tmp_path / "padded"), losses_of(tmp_path / "plain"), rtol=0, atol=1e-5)
    evaluations = [
        [
            {k: v for k, v in r.items() if k not in ("elapsed", "seconds")}
            for r in read_log(tmp_path / run)
            if r["type"] == "eval"
        ]
        for run in ("plain", "padded")
    ]
    assert evaluations[0] and evaluations[0][0].keys() == evaluations[1][0].keys()
    for name, value in evaluations[0][0].items():
        assert evaluations[1][0][name] == pytest.approx(value, abs=1e-5, nan_ok=True), name


def test_compile_mode_reaches_torch_compile_and_reduce_overhead_marks_each_step_and_evaluation_batch(
    backbone, tmp_path, monkeypatch
):
    """--compile inductor --compile-mode reduce-overhead: the mode reaches torch.compile (recorded here, not
    compiled: inductor's code generation takes longer than a test may); each step starts one CUDA-graph iteration
    (not each micro-batch: the gradients they accumulate would be written over), each evaluation batch one; a mode
    is inductor's only; --pad-multiple must divide the paper layout's --max-length."""
    compiled, marks = [], []
    monkeypatch.setattr(torch.nn.Module, "compile", lambda self, **kwargs: compiled.append(kwargs))
    monkeypatch.setattr(torch.compiler, "cudagraph_mark_step_begin", lambda: marks.append(1))
    train, valid = data()
    config = config_for(backbone, compile="inductor", compile_mode="reduce-overhead", validation_kinds="", grad_accum=2)
    trainer = Trainer(config, train, valid, tmp_path / "run")
    assert compiled == [{"backend": "inductor", "dynamic": True, "mode": "reduce-overhead"}]
    trainer.train(stop_after_steps=3)
    assert len(marks) == 3  # 3 steps of 2 micro-batches
    marks.clear()
    trainer.outputs([valid.contexts[i] for i in range(20)], [[valid.responses[i]] for i in range(20)])
    assert len(marks) == 3  # batches of 8, 8 and 4 contexts
    with pytest.raises(ValueError, match="--compile-mode reduce-overhead is inductor's"):
        config_for(backbone, compile="aot_eager", compile_mode="reduce-overhead")
    with pytest.raises(ValueError, match="--pad-multiple 32 must divide --max-length 48 in the paper layout"):
        config_for(backbone, pad_multiple=32)
    with pytest.raises(ValueError, match="--pad-multiple must be at least 1"):
        config_for(backbone, pad_multiple=0)
