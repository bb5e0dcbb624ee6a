"""Where a checkpoint comes from (density_metric.checkpoint.sources): what is said before anything is loaded."""

from pathlib import Path

import pytest

from density_metric import resolve_checkpoint

from ...hub_cache import build_hub_cache

COMMIT = "3" * 40


@pytest.mark.parametrize("name", ["no/such/dir", "./runs/best", "{tmp}/missing", "~/nothing-here"])
def test_a_missing_local_path_is_one_error_without_the_pinned_revision_warning(tmp_path, name, caplog, monkeypatch):
    # Every path lies under tmp_path, which holds nothing: the relative ones by the working directory, "~" by HOME.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    name = name.format(tmp=tmp_path)
    assert not Path(name).expanduser().exists()
    with caplog.at_level("WARNING"), pytest.raises(ValueError, match="no such directory"):
        resolve_checkpoint(name, local_files_only=True)
    assert "pinned revision" not in caplog.text


def test_a_file_given_as_checkpoint_is_refused_naming_it(tmp_path, caplog):
    (tmp_path / "model.safetensors").write_bytes(b"")
    with caplog.at_level("WARNING"), pytest.raises(ValueError, match=r"model\.safetensors' is a file; give its direc"):
        resolve_checkpoint(tmp_path / "model.safetensors", local_files_only=True)
    assert "pinned revision" not in caplog.text


def test_a_hub_checkpoint_loaded_without_a_revision_warns_naming_the_commit_to_pin(tiny_checkpoint, tmp_path, caplog):
    build_hub_cache(tmp_path / "hub", "org/tiny-density", tiny_checkpoint, COMMIT)
    with caplog.at_level("WARNING", logger="density_metric.checkpoint.sources"):
        loaded = resolve_checkpoint("org/tiny-density", cache_dir=tmp_path / "hub", local_files_only=True)
    assert loaded.revision == COMMIT
    assert f"without a pinned revision (main is commit {COMMIT} now); pass revision='{COMMIT}'" in caplog.text


@pytest.mark.parametrize("name", ["runs/quikc", "./runs/quikc", "runs/quikc/", "~/runs/quikc"])
def test_a_mistyped_folder_is_a_missing_folder_with_the_closest_name_not_a_hub_id(tmp_path, name, monkeypatch, caplog):
    """Issue 68: runs/quikc (beside a runs folder) was looked up as a Hub repo id, and the error spoke of the Hub."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "runs" / "quick").mkdir(parents=True)
    with caplog.at_level("WARNING"), pytest.raises(ValueError) as raised:
        resolve_checkpoint(name, local_files_only=True)
    assert str(raised.value).startswith(f"checkpoint {name!r}: no such directory (did you mean ")
    assert "quick'?)" in str(raised.value) and "Hub" not in str(raised.value) and not caplog.text


def test_an_org_slash_name_without_such_a_folder_is_still_a_hub_id(tiny_checkpoint, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    build_hub_cache(tmp_path / "hub", "org/tiny-density", tiny_checkpoint, COMMIT)
    loaded = resolve_checkpoint("org/tiny-density", COMMIT, cache_dir=tmp_path / "hub", local_files_only=True)
    assert loaded.source == "org/tiny-density" and loaded.revision == COMMIT


def test_a_hub_checkpoint_that_cannot_be_fetched_is_refused_in_one_line(monkeypatch):
    """evaluate.load('density', 'org/name') offline or without the network: huggingface_hub's message has 3 lines."""
    import huggingface_hub
    from huggingface_hub.errors import LocalEntryNotFoundError

    def unreachable(*args, **kwargs):
        raise LocalEntryNotFoundError("Got: ConnectError: name not known\nAn error happened while trying...\nCheck")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", unreachable)
    with pytest.raises(ValueError) as raised:
        resolve_checkpoint("org/tiny-density")
    assert "\n" not in str(raised.value) and str(raised.value).endswith("(Got: ConnectError: name not known)")
