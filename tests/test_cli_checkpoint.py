"""--checkpoint bundled (issue 60): the name that --help and the signatures give the bundled checkpoint."""

import pytest

from density_metric.checkpoint_sources import BUNDLED_DIR, resolve_checkpoint
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
