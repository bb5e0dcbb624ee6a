"""Grounding in a training run (issue 50): --grounding puts grounding lines in the training contexts, and
--grounding-valid logs the grounding signals of train/evaluation/grounding_validation.py in every evaluation."""

import json

import pytest

from density_train.config.recipe import TrainConfig
from density_train.data.corpora import response_pairs_with_dialogues
from density_train.data.examples import SelectionData
from density_train.data.grounding import PERSONA
from density_train.loop.trainer import Trainer
from tests.train.data.test_grounding import DIALOGUES
from tests.train.evaluation.test_grounding_validation import CONVAI2

from .test_training import config_for, dialogue_data, read_log


def test_every_evaluation_logs_the_grounding_signals(backbone, tmp_path):
    (tmp_path / "convai2.txt").write_text(CONVAI2, encoding="utf-8")
    train, valid = dialogue_data()
    config = config_for(
        backbone, grounding_valid=str(tmp_path / "convai2.txt"), grounding_valid_pairs=6, validation_kinds=""
    )
    trainer = Trainer(config, train, valid, tmp_path / "run")
    names = {"grounding/persona_spearman", "grounding/last_turn_spearman", "grounding/echo_win"}
    names |= {"grounding/echo_auc", "grounding/recall_at_1"}
    assert names <= set(trainer.metric_names())
    trainer.train()
    evals = [record for record in read_log(tmp_path / "run") if record["type"] == "eval"]
    assert len(evals) == 2 and all(names <= set(record) for record in evals)
    assert all(0 <= record["grounding/echo_win"] <= 1 for record in evals)


def test_grounding_needs_the_folder_of_the_benchmark_sentences_it_must_not_use():
    with pytest.raises(ValueError, match="--grounding needs --grounding-exclude"):
        TrainConfig(grounding="rate=1")
    with pytest.raises(ValueError, match="--grounding"):
        TrainConfig(grounding="rate=2", grounding_exclude="x")


def test_a_grounded_run_trains_on_contexts_with_grounding_lines(backbone, tmp_path):
    shared = tmp_path / "shared"
    (shared / "usr").mkdir(parents=True)
    row = {"context": ["I love violin concerts at the old hall ."], "response": "Me too .", "score": 1}
    (shared / "usr" / "set.normalized.jsonl").write_text(json.dumps(row) + "\n")
    train = SelectionData.from_pairs(*response_pairs_with_dialogues(DIALOGUES * 2))
    _, valid = dialogue_data()
    config = config_for(backbone, grounding="rate=1,used=1,distractors=1", grounding_exclude=str(shared))
    trainer = Trainer(config, train, valid, tmp_path / "run")
    lines = [turn for context in trainer.train_data.contexts for turn in context if turn.startswith(PERSONA)]
    assert lines and "I love violin concerts at the old hall ." not in {line[len(PERSONA) :] for line in lines}
    assert trainer.train_data.responses == train.responses and trainer.train_data.pool == train.pool


def test_the_train_command_names_grounding_flags_in_one_error_line(tmp_path, train_cli_error):
    argv = ["train", "--corpus", "dailydialog", "--data-dir", tmp_path, "--out", tmp_path / "out"]
    assert "--grounding needs --grounding-exclude" in train_cli_error([*argv, "--grounding", "rate=1"])
    assert "--grounding-valid-pairs must be at least 1" in train_cli_error([*argv, "--grounding-valid-pairs", "0"])


def test_a_grounded_runs_gaussian_is_fitted_on_the_contexts_it_trained_and_evaluated_on(
    backbone, tmp_path, monkeypatch
):
    """The evaluations' Gaussians are fitted on the trainer's (grounded) training pairs; the shipped one must be
    too, or the selection judges a Gaussian that never ships (it was fitted on the contexts without their lines)."""
    import density_train.commands.train
    from density_train.commands import main

    from .test_training import write_corpus

    write_corpus(tmp_path)
    shared = tmp_path / "shared"
    (shared / "usr").mkdir(parents=True)
    (shared / "usr" / "set.normalized.jsonl").write_text(json.dumps({"context": [], "response": "Hi ."}) + "\n")
    fitted = {}

    def record_fit(encoder_dir, density_config, train_pairs, valid_pairs, out, **kwargs):
        fitted["contexts"] = train_pairs[0]
        return {}

    monkeypatch.setattr(density_train.commands.train, "fit_and_write", record_fit)
    files = ["--train-file", str(tmp_path / "train.jsonl"), "--valid-file", str(tmp_path / "valid.jsonl")]
    recipe = ["--negatives", "3", "--epochs", "1", "--batch-size", "4", "--warmup-steps", "2"]
    recipe += ["--max-length", "48", "--max-response-length", "16", "--grounding", "rate=1,used=1,distractors=1"]
    main(
        ["train", "--corpus", "jsonl", *files, "--backbone", str(backbone), "--out", str(tmp_path / "run")]
        + recipe
        + ["--grounding-exclude", str(shared)]
    )
    assert any(turn.startswith(PERSONA) for context in fitted["contexts"] for turn in context)
