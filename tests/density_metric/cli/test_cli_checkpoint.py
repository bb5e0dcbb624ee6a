"""--checkpoint bundled (issue 60): the name that --help and the signatures give the bundled checkpoint."""

import pytest

from density_metric.checkpoint.sources import BUNDLED_DIR, resolve_checkpoint
from density_metric.cli import main

from .test_cli import ROWS, read_jsonl, write_jsonl


@pytest.mark.parametrize("name", ["bundled", "bundled:density-minilm-dailydialog", "default"])
def test_bundled_names_the_bundled_checkpoint(name):
    checkpoint = resolve_checkpoint(name)
    assert checkpoint.path == BUNDLED_DIR and checkpoint.source == "bundled:density-minilm-dailydialog"


def test_a_bundled_name_that_is_not_the_bundled_checkpoint_is_an_error_naming_it():
    with pytest.raises(ValueError, match=r"'bundled:other'.* the bundled checkpoint is 'density-minilm-dailydialog'"):
        resolve_checkpoint("bundled:other")


def test_score_with_checkpoint_bundled_scores_with_the_bundled_checkpoint(tmp_path):
    write_jsonl(tmp_path / "in.jsonl", ROWS[:1])
    args = ["score", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--device", "cpu"]
    assert main([*args, "--checkpoint", "bundled", "--no-progress"]) == 0
    (row,) = read_jsonl(tmp_path / "out.jsonl")
    assert "|checkpoint=bundled:density-minilm-dailydialog@" in row["density_signature"] and row["density"] < 0


def test_score_with_a_mistyped_checkpoint_folder_says_no_such_directory(tmp_path, monkeypatch, capsys):
    """Issue 68: --checkpoint runs/quikc was taken for a Hub id, and the error spoke of the Hub cache."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs" / "quick").mkdir(parents=True)
    write_jsonl(tmp_path / "in.jsonl", ROWS[:1])
    with pytest.raises(SystemExit) as raised:
        main(["score", "in.jsonl", "-o", "out.jsonl", "--device", "cpu", "--checkpoint", "runs/quikc"])
    assert raised.value.code == 2 and not (tmp_path / "out.jsonl").exists()
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error == "error: checkpoint 'runs/quikc': no such directory (did you mean 'runs/quick'?)"
