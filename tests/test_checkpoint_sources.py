"""Where a checkpoint comes from (density_metric.checkpoint_sources): what is said before anything is loaded."""

from pathlib import Path

import pytest

from density_metric import resolve_checkpoint

from .hub_cache import build_hub_cache

COMMIT = "3" * 40


@pytest.mark.parametrize("name", ["no/such/dir", "./runs/best", "{tmp}/missing", "~/nothing-here"])
def test_a_missing_local_path_is_one_error_without_the_pinned_revision_warning(tmp_path, name, caplog, monkeypatch):
    # Every path lies under tmp_path, which holds nothing: the relative ones by the working directory, "~" by HOME.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    name = name.format(tmp=tmp_path)
    assert not Path(name).expanduser().exists()
    with caplog.at_level("WARNING"), pytest.raises(ValueError, match="neither a local directory nor a valid Hub"):
        resolve_checkpoint(name, local_files_only=True)
    assert "pinned revision" not in caplog.text


def test_a_file_given_as_checkpoint_is_refused_naming_it(tmp_path, caplog):
    (tmp_path / "model.safetensors").write_bytes(b"")
    with caplog.at_level("WARNING"), pytest.raises(ValueError, match=r"model\.safetensors' is a file; give its direc"):
        resolve_checkpoint(tmp_path / "model.safetensors", local_files_only=True)
    assert "pinned revision" not in caplog.text


def test_a_hub_checkpoint_loaded_without_a_revision_warns_naming_the_commit_to_pin(tiny_checkpoint, tmp_path, caplog):
    build_hub_cache(tmp_path / "hub", "org/tiny-density", tiny_checkpoint, COMMIT)
    with caplog.at_level("WARNING", logger="density_metric.checkpoint_sources"):
        loaded = resolve_checkpoint("org/tiny-density", cache_dir=tmp_path / "hub", local_files_only=True)
    assert loaded.revision == COMMIT
    assert f"without a pinned revision (main is commit {COMMIT} now); pass revision='{COMMIT}'" in caplog.text
