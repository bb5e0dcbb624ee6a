"""What every ``python -m train`` command refuses before any work (train/arguments.py): an
``--out`` it cannot or must not write, an out-of-range count, a missing encoder; and ``default`` as the
bundled checkpoint in every command that reads one."""

import json
from pathlib import Path

import pytest

import density_metric
from density_metric.checkpoint.format import CONFIG_FILE, DensityConfig
from density_train.commands import build_parser
from density_train.config.flags import config_from_args

BUNDLED = Path(density_metric.__file__).parent / "default"
# Each command with what it needs besides --out; --data-dir and --ratings name nothing, so a command
# that reached its data would fail with another message.
COMMANDS = {
    "train": ["train", "--data-dir", "nowhere"],
    "fit": ["fit", "--data-dir", "nowhere"],
    "repetition-term": ["repetition-term", "default", "--data-dir", "nowhere"],
    "calibrate": ["calibrate", "default", "--ratings", "nowhere.jsonl"],
    "interpolate": ["interpolate", "default", "default", "--weight", "0.5"],
    "retrieval-index": ["retrieval-index", "--data-dir", "nowhere"],
}


@pytest.mark.parametrize("command", COMMANDS)
def test_an_out_below_a_file_is_an_error_line_before_any_work(command, tmp_path, train_cli_error):
    (tmp_path / "a-file").write_text("mine")
    out = tmp_path / "a-file" / "out"
    line = train_cli_error([*COMMANDS[command], "--out", out])
    assert line == f"error: --out {out}: {tmp_path / 'a-file'} is a file, not a folder"
    assert (tmp_path / "a-file").read_text() == "mine"


@pytest.mark.parametrize("command", [name for name in COMMANDS if name != "retrieval-index"])
def test_an_out_that_is_a_file_is_an_error_line_before_any_work(command, tmp_path, train_cli_error):
    out = tmp_path / "a-file"
    out.write_text("mine")
    assert train_cli_error([*COMMANDS[command], "--out", out]) == f"error: --out {out}: a file, not a folder"
    assert out.read_text() == "mine"


def test_a_retrieval_index_out_that_is_a_folder_is_an_error_line_before_any_work(tmp_path, train_cli_error):
    line = train_cli_error([*COMMANDS["retrieval-index"], "--out", tmp_path])
    assert line == f"error: --out {tmp_path}: a folder; give the file to write"


@pytest.mark.parametrize(
    "flags, message",
    [
        (["train", "--limit", "-1"], "--limit must be at least 0, got -1"),
        (["train", "--max-minutes", "-1"], "--max-minutes must be at least 0, got -1.0"),
        (["train", "--max-minutes", "nan"], "--max-minutes must be at least 0, got nan"),
        (["fit", "--limit", "-1"], "--limit must be at least 0, got -1"),
        (["retrieval-index", "--k", "0"], "--k must be at least 1, got 0"),
        (["retrieval-index", "--k", "-1"], "--k must be at least 1, got -1"),
    ],
)
def test_a_count_out_of_range_is_an_error_line_before_the_data_is_read(flags, message, tmp_path, train_cli_error):
    out = tmp_path / ("index.safetensors" if flags[0] == "retrieval-index" else "out")
    line = train_cli_error([*flags, "--data-dir", tmp_path / "nowhere", "--out", out])
    assert line == f"error: {message}"
    assert not out.exists()


@pytest.mark.parametrize("command, flag", [("train", "--backbone"), ("fit", "--encoder")])
def test_a_missing_encoder_folder_is_an_error_line_and_no_out_is_made(command, flag, tmp_path, train_cli_error):
    from tests.train.loop.test_training import write_corpus

    write_corpus(tmp_path)
    corpus = ["--corpus", "jsonl", "--train-file", tmp_path / "train.jsonl", "--valid-file", tmp_path / "valid.jsonl"]
    missing = tmp_path / "nonexistent"
    line = train_cli_error([command, *corpus, flag, missing, "--out", tmp_path / "out"])
    assert line == f"error: {flag} {missing}: no such folder (and not a Hub id)"
    assert not (tmp_path / "out").exists()


def test_calibrate_refuses_an_out_holding_other_files_and_they_stay(tiny_shared_checkpoint, tmp_path, train_cli_error):
    from ...tiny import synthetic_pairs

    contexts, responses = synthetic_pairs(12, seed=5)
    rows = [{"context": c, "response": r, "score": float(i % 5)} for i, (c, r) in enumerate(zip(contexts, responses))]
    ratings = tmp_path / "ratings.jsonl"
    ratings.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "results"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    argv = ["calibrate", tiny_shared_checkpoint, "--ratings", ratings, "--out", out, "--device", "cpu"]
    line = train_cli_error(argv)
    assert f"--out {out} holds files this command does not write (notes.txt)" in line
    assert sorted(path.name for path in out.iterdir()) == ["notes.txt"]


def test_calibrate_refuses_the_checkpoint_it_reads_before_reading_the_ratings(tmp_path, train_cli_error):
    line = train_cli_error(["calibrate", "default", "--ratings", tmp_path / "nowhere.jsonl", "--out", BUNDLED])
    assert line.startswith(f"error: --out {BUNDLED}: the checkpoint this command reads")


def test_init_from_default_is_the_bundled_checkpoint_as_in_score(tmp_path):
    args = build_parser().parse_args(["train", "--out", str(tmp_path), "--init-from", "default"])
    bundled = DensityConfig.from_file(BUNDLED / CONFIG_FILE).pair_format
    assert bundled.layout == "shared-context"  # not the default paper layout
    assert config_from_args(args).pair_format == bundled


def test_fit_encoder_default_is_the_bundled_checkpoint_as_in_score():
    from density_train.arguments import encoder_folder

    assert Path(encoder_folder("default", "--encoder")) == BUNDLED


def test_repetition_term_refuses_an_out_holding_other_files_before_reading_the_corpus(
    tiny_shared_checkpoint, tmp_path, train_cli_error
):
    out = tmp_path / "results"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    line = train_cli_error(
        [*COMMANDS["repetition-term"][:1], tiny_shared_checkpoint, "--data-dir", "nowhere", "--out", out]
    )
    assert f"--out {out} holds files this command does not write (notes.txt)" in line
    assert sorted(path.name for path in out.iterdir()) == ["notes.txt"]


def test_a_run_from_default_starts_from_the_bundled_encoder_and_head(tmp_path):
    import torch
    from safetensors.torch import load_file

    from density_train.config.recipe import TrainConfig
    from density_train.loop.trainer import Trainer
    from tests.train.loop.test_training import data

    pair_format = DensityConfig.from_file(BUNDLED / CONFIG_FILE).pair_format
    config = TrainConfig(init_from="default", pair_format=pair_format, negatives=3, batch_size=4, validation_kinds="")
    trainer = Trainer(config, *data(), tmp_path / "run")
    name = "embeddings.word_embeddings.weight"
    bundled = load_file(str(BUNDLED / "model.safetensors"))[name].float()
    torch.testing.assert_close(trainer.model.encoder.state_dict()[name][: len(bundled)], bundled)
    head = load_file(str(BUNDLED / "density_head.safetensors"))
    torch.testing.assert_close(trainer.model.head.weight.detach()[0], head["weight"].float().reshape(-1))
