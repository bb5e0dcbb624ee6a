"""The score command's checks before any work: options, fields, a run that could score nothing; its progress bar
and its help. An option error never costs the previous run's output (issue 56)."""

import argparse
import json

import pytest
import torch
from tqdm.auto import tqdm

from density_metric import distributed
from density_metric.cli import build_parser, main
from density_metric.cli import score as score_cli

from ...tiny import synthetic_pairs
from .test_cli import ROWS, error_line, read_jsonl, run, write_jsonl

EARLIER = json.dumps({**ROWS[0], "density": -1.0}) + "\n"  # a previous run's output


def score(tiny_checkpoint, *args):
    """``score`` with the tiny checkpoint on CPU in float32; later options in ``args`` override these."""
    options = ["--checkpoint", str(tiny_checkpoint), "--device", "cpu", "--dtype", "float32", "--no-progress"]
    return main(["score", *options, *map(str, args)])


@pytest.mark.parametrize(
    "options, problem",
    [
        (["--checkpoint", "{tmp}/typo"], "typo': no such directory"),
        (["--device", "cuda:7"], "cuda:7"),
        (["--max-length", "3"], "max_length must be in [4, "),
        (["--device", "cpu", "--dtype", "float16"], "float16"),
    ],
    ids=["checkpoint", "device", "max-length", "dtype"],
)
def test_an_option_error_keeps_the_earlier_output_as_it_was(tiny_checkpoint, tmp_path, capsys, options, problem):
    if "cuda:7" in options and torch.cuda.device_count() > 7:
        pytest.skip("cuda:7 exists here")
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    (tmp_path / "out.jsonl").write_text(EARLIER)
    options = [option.format(tmp=tmp_path) for option in options]
    message = error_line(capsys, score, tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl", *options)
    assert problem in message
    assert (tmp_path / "out.jsonl").read_text() == EARLIER
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]  # no temporary file


def test_an_option_error_leaves_no_trace_of_the_output_on_disk(tiny_checkpoint, tmp_path, capsys):
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    error_line(
        capsys, score, tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "new" / "out.jsonl", "--max-length", 3
    )
    assert not (tmp_path / "new").exists()


def test_a_run_that_fails_while_scoring_keeps_the_earlier_output(tiny_checkpoint, tmp_path, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("scoring failed")

    monkeypatch.setattr(distributed, "score_distributed", broken)
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    (tmp_path / "out.jsonl").write_text(EARLIER)
    with pytest.raises(ValueError, match="scoring failed"):
        score(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl")
    assert (tmp_path / "out.jsonl").read_text() == EARLIER


def test_a_complete_run_replaces_the_earlier_output(tiny_checkpoint, tmp_path):
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    (tmp_path / "out.jsonl").write_text(EARLIER)
    assert score(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl") == 0
    assert [row["id"] for row in read_jsonl(tmp_path / "out.jsonl")] == [1, 2, 3]


# ---------------------------------------------------------------- fields and rows


@pytest.mark.parametrize("flag", ["--context-field", "--response-field"])
def test_a_field_that_no_row_has_is_an_error_before_any_row_is_scored(
    tiny_checkpoint, tmp_path, capsys, monkeypatch, flag
):
    monkeypatch.setattr(distributed, "score_distributed", None)  # scoring would fail differently
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    args = [tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl", flag, "ctx", "--on-error", "skip"]
    message = error_line(capsys, score, tiny_checkpoint, *args)
    assert message.startswith(f"error: {tmp_path / 'in.jsonl'}: no row has the field 'ctx' (columns: 'id', ")
    assert message.endswith(f"; name the column with {flag}")
    assert not (tmp_path / "out.jsonl").exists()


def test_a_run_that_can_score_no_row_does_not_exit_0(tiny_checkpoint, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(distributed, "score_distributed", None)
    write_jsonl(tmp_path / "in.jsonl", [{"context": ["hi"], "response": None}, {"context": None, "response": "ok"}])
    args = [tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl", "--on-error", "skip"]
    message = error_line(capsys, score, tiny_checkpoint, *args)
    assert message.startswith(f"error: {tmp_path / 'in.jsonl'}: none of its 2 rows can be scored (the first, line 1: ")
    assert not (tmp_path / "out.jsonl").exists()


# ---------------------------------------------------------------- progress and help


def test_the_progress_bar_moves_after_every_batch(tiny_checkpoint, tmp_path, monkeypatch):
    updates = []

    class Recording(tqdm):
        def update(self, n=1):
            updates.append(n)
            return super().update(n)

    monkeypatch.setattr(score_cli, "tqdm", Recording)
    contexts, responses = synthetic_pairs(10, seed=4)
    write_jsonl(tmp_path / "in.jsonl", [{"context": c, "response": r} for c, r in zip(contexts, responses)])
    args = [tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl", "--batch-size", 2]
    assert run(tiny_checkpoint, *args, progress="--progress") == 0
    assert updates == [2] * 5  # 10 pairs in batches of 2, not one step of 10 at the end of the file's chunk


@pytest.mark.parametrize("command", ["score", "compare"])
def test_every_argument_has_help_text(command):
    commands = next(a for a in build_parser("density-metric")._actions if isinstance(a, argparse._SubParsersAction))
    missing = [action.dest for action in commands.choices[command]._actions if not action.help]
    assert missing == []
