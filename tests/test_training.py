"""Training on a tiny random BERT: it learns, logs, keeps the best, resumes exactly, and runs on 2 processes."""

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from density_metric.pair_format import PairFormat
from train.corpora import response_pairs
from train.data import SelectionData
from train.loop import TrainConfig, Trainer

from .tiny import WORDS, build_tiny_encoder

ROOT = Path(__file__).resolve().parents[1]


def synthetic_dialogues(n, seed):
    """Dialogues whose replies reuse the previous turn's words, so there is something to learn."""
    rng = np.random.default_rng(seed)
    dialogues = []
    for _ in range(n):
        turns = [" ".join(rng.choice(WORDS, size=3, replace=False))]
        for _ in range(3):
            turns.append(" ".join(rng.permutation(turns[-1].split())))
        dialogues.append(turns)
    return dialogues


@pytest.fixture(scope="module")
def backbone(tmp_path_factory):
    """A tiny encoder without dropout, so runs are deterministic across process layouts."""
    directory = tmp_path_factory.mktemp("backbone")
    model, tokenizer = build_tiny_encoder(directory)
    model.config.hidden_dropout_prob = model.config.attention_probs_dropout_prob = 0.0
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def config_for(backbone, **overrides):
    base = dict(
        backbone=str(backbone),
        negatives=3,
        epochs=2,
        batch_size=4,
        warmup_steps=2,
        lr=1e-3,
        pair_format=PairFormat(max_length=48, max_response_length=16),
        eval_batch_size=8,
        max_steps_per_epoch=6,
    )
    return TrainConfig(**{**base, **overrides})


def data():
    return SelectionData.from_pairs(*response_pairs(synthetic_dialogues(40, 0))), SelectionData.from_pairs(
        *response_pairs(synthetic_dialogues(10, 1))
    )


def read_log(out):
    return [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]


def test_training_logs_every_step_and_evaluation_and_keeps_the_best(backbone, tmp_path):
    train, valid = data()
    Trainer(config_for(backbone), train, valid, tmp_path).train()
    log = read_log(tmp_path)
    assert [r["step"] for r in log if r["type"] == "train"] == list(range(1, 13))
    evals = [r for r in log if r["type"] == "eval"]
    assert len(evals) == 2 and all(0 <= r["recall_at_1"] <= 1 and 0 < r["mrr"] <= 1 for r in evals)
    for name in ("config.json", "model.safetensors", "density_head.safetensors", "tokenizer.json"):
        assert (tmp_path / "best" / name).is_file()
    assert json.loads((tmp_path / "state" / "trainer_state.json").read_text())["progress"]["epoch"] == 2


def test_training_fits_a_small_training_set(backbone, tmp_path):
    """The loop's gradients, optimizer and schedule work: 8 pairs seen 40 times are learnt."""
    train = SelectionData.from_pairs(*response_pairs(synthetic_dialogues(40, 0)))
    small = SelectionData(train.contexts[:8], train.responses[:8], train.pool)
    config = config_for(backbone, epochs=40, max_steps_per_epoch=0, warmup_steps=5, contrastive_weight=0.0)
    Trainer(config, small, small, tmp_path).train()
    log = read_log(tmp_path)
    losses = [r["loss"] for r in log if r["type"] == "train"]
    assert np.mean(losses[-4:]) < 0.3 * np.mean(losses[:4])
    assert [r for r in log if r["type"] == "eval"][-1]["recall_at_1"] == 1.0


def test_interrupted_run_resumes_in_a_new_trainer_to_the_same_weights(backbone, tmp_path):
    train, valid = data()
    config = config_for(backbone)
    Trainer(config, train, valid, tmp_path / "straight").train()
    Trainer(config, train, valid, tmp_path / "resumed").train(stop_after_steps=4)  # mid-epoch 1
    Trainer(config, train, valid, tmp_path / "resumed").train(stop_after_steps=5)  # into epoch 2
    Trainer(config, train, valid, tmp_path / "resumed").train(stop_after_seconds=0)  # one step, then out of time
    Trainer(config, train, valid, tmp_path / "resumed").train()
    straight = load_file(str(tmp_path / "straight" / "state" / "model.safetensors"))
    resumed = load_file(str(tmp_path / "resumed" / "state" / "model.safetensors"))
    for name, tensor in straight.items():
        torch.testing.assert_close(resumed[name], tensor, rtol=1e-5, atol=1e-6)
    losses = lambda out: [r["loss"] for r in read_log(out) if r["type"] == "train"]  # noqa: E731
    np.testing.assert_allclose(losses(tmp_path / "resumed"), losses(tmp_path / "straight"), rtol=1e-5)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_two_processes_take_the_same_steps_as_one_process_accumulating_two(backbone, tmp_path):
    script = tmp_path / "run.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from tests.test_training import config_for, data\n"
        "from train.loop import Trainer\n"
        "train, valid = data()\n"
        "accum, out = int(sys.argv[1]), sys.argv[2]\n"
        f"Trainer(config_for({str(backbone)!r}, grad_accum=accum, batch_size=2, epochs=1), train, valid, out).train()\n"
    )
    # ACCELERATE_USE_CPU=1 is what `accelerate launch --cpu` sets; without it Accelerate ignores torchrun on CPU.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ACCELERATE_USE_CPU": "1"}
    single = subprocess.run(
        [sys.executable, str(script), "2", str(tmp_path / "one")], env=env, capture_output=True, text=True, timeout=600
    )
    assert single.returncode == 0, single.stderr
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        str(free_port()),
        str(script),
        "1",
        str(tmp_path / "two"),
    ]
    double = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert double.returncode == 0, double.stderr
    one, two = read_log(tmp_path / "one"), read_log(tmp_path / "two")
    assert len(one) == len(two) == 7  # 6 steps and one evaluation
    np.testing.assert_allclose(
        [r.get("loss", r.get("recall_at_1")) for r in two],
        [r.get("loss", r.get("recall_at_1")) for r in one],
        rtol=1e-4,
    )
    a = load_file(str(tmp_path / "one" / "state" / "model.safetensors"))
    b = load_file(str(tmp_path / "two" / "state" / "model.safetensors"))
    for name in a:
        torch.testing.assert_close(b[name], a[name], rtol=1e-4, atol=1e-5)


def test_train_command_writes_a_checkpoint_the_metric_loads_with_head_and_card(backbone, tmp_path):
    from density_metric import DensityScorer
    from train.__main__ import main

    for split, seed in (("train", 0), ("valid", 1)):
        lines = [json.dumps(turns) for turns in synthetic_dialogues(30, seed)]
        (tmp_path / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    main(
        [
            "train",
            "--corpus",
            "jsonl",
            "--train-file",
            str(tmp_path / "train.jsonl"),
            "--valid-file",
            str(tmp_path / "valid.jsonl"),
            "--backbone",
            str(backbone),
            "--out",
            str(tmp_path / "run"),
            "--negatives",
            "3",
            "--epochs",
            "1",
            "--batch-size",
            "4",
            "--warmup-steps",
            "2",
            "--max-length",
            "48",
            "--max-response-length",
            "16",
            "--turn-separator",
            "[SEPT]",
            "--name",
            "tiny-density",
        ]
    )
    checkpoint = tmp_path / "run" / "checkpoint"
    best = load_file(str(tmp_path / "run" / "best" / "model.safetensors"))
    written = load_file(str(checkpoint / "model.safetensors"))
    assert set(written) == set(best) and all(torch.equal(written[k], best[k]) for k in best)
    scorer = DensityScorer(str(checkpoint), device="cpu", dtype="float32")
    assert scorer.checkpoint.config.pair_format.turn_separator == "[SEPT]"
    assert scorer.checkpoint.stats.n_samples == 90  # 30 dialogues x 3 responses
    contexts, responses = [["hi you"], ["good day"]], ["you hi", "a"]
    assert np.all(np.isfinite(scorer.score(contexts, responses).scores))
    # f(c, r) from the checkpoint equals the trained head applied to g(c, r).
    head = load_file(str(checkpoint / "density_head.safetensors"))
    features = scorer.features(contexts, responses).astype(np.float64)
    np.testing.assert_allclose(
        scorer.classifier_scores(contexts, responses),
        features @ head["weight"].double().numpy() + head["bias"].item(),
        rtol=1e-5,
    )
    card = (checkpoint / "README.md").read_text()
    assert card.startswith("---\nlicense: other\nbase_model: ")
    assert "name: Recall@1" in card and not re.search(r"\$[a-z_]+", card)
    assert "python -m train train --corpus jsonl" in card


def test_fit_with_float16_weights_fits_the_gaussian_to_the_weights_it_ships(backbone, tmp_path):
    from density_metric import DensityScorer
    from train.__main__ import main

    dialogues = {"train": synthetic_dialogues(20, 0), "valid": synthetic_dialogues(8, 1)}
    for split, turns in dialogues.items():
        (tmp_path / f"{split}.jsonl").write_text("\n".join(json.dumps(t) for t in turns) + "\n")
    main(
        [
            "fit",
            "--corpus",
            "jsonl",
            "--train-file",
            str(tmp_path / "train.jsonl"),
            "--valid-file",
            str(tmp_path / "valid.jsonl"),
            "--encoder",
            str(backbone),
            "--out",
            str(tmp_path / "ckpt"),
            "--max-length",
            "48",
            "--max-response-length",
            "16",
            "--device",
            "cpu",
            "--weights-dtype",
            "float16",
        ]
    )
    written = load_file(str(tmp_path / "ckpt" / "model.safetensors"))
    original = load_file(str(backbone / "model.safetensors"))
    assert {t.dtype for t in written.values()} == {torch.float16}
    for name, tensor in written.items():
        assert torch.equal(tensor, original[name].half())

    contexts, responses = response_pairs(dialogues["train"])
    shipped = DensityScorer(str(tmp_path / "ckpt"), device="cpu", dtype="float32")
    features = shipped.features(contexts, responses).astype(np.float64)
    np.testing.assert_allclose(shipped.checkpoint.stats.mean, features.mean(axis=0), rtol=0, atol=1e-6)
    # The float32 backbone's features differ by more than that tolerance, so the test can tell them apart.
    unrounded = DensityScorer(str(tmp_path / "ckpt"), device="cpu", dtype="float32")
    unrounded.encoder.model.load_state_dict({k: v.float() for k, v in original.items()}, strict=False)
    assert (
        np.abs(unrounded.features(contexts, responses).astype(np.float64).mean(axis=0) - features.mean(axis=0)).max()
        > 1e-5
    )
