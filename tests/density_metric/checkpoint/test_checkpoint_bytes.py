"""A checkpoint's files depend on what was fitted, not on how or when (issue 56): no loading options in the saved
tokenizer config, sorted safetensors metadata, one revision with the Hub offline or online."""

import json
import os
import subprocess
import sys

import numpy as np

from density_metric.checkpoint.format import load_checkpoint


def test_a_saved_tokenizer_config_does_not_record_how_the_tokenizer_was_loaded(tiny_checkpoint, tmp_path):
    # transformers writes local_files_only (True under HF_HUB_OFFLINE=1) and is_local into tokenizer_config.json.
    from transformers import AutoTokenizer

    from density_metric.backbone import LOADING_KEYS, save_tokenizer

    saved = []
    for offline in (True, False):
        tokenizer = AutoTokenizer.from_pretrained(tiny_checkpoint, local_files_only=offline)
        save_tokenizer(tokenizer, tmp_path / str(offline))
        saved.append((tmp_path / str(offline) / "tokenizer_config.json").read_bytes())
    assert saved[0] == saved[1]
    config = json.loads(saved[0])
    assert not set(LOADING_KEYS) & set(config) and config["tokenizer_class"] == "BertTokenizer"


def test_a_checkpoint_fitted_with_the_hub_offline_has_the_revision_of_one_fitted_online(backbone, tmp_path):
    # The revision (a content hash) differed, so compare refused two identical scorings as "scored differently".
    from tests.train.loop.test_training import write_corpus

    write_corpus(tmp_path)
    argv = ["--corpus", "jsonl", "--train-file", tmp_path / "train.jsonl", "--valid-file", tmp_path / "valid.jsonl"]
    argv += ["--encoder", backbone, "--max-length", "48", "--max-response-length", "16", "--device", "cpu"]
    for offline in ("1", "0"):
        env = {**os.environ, "HF_HUB_OFFLINE": offline, "OMP_NUM_THREADS": "1"}
        command = [sys.executable, "-m", "train", "fit", *argv, "--out", tmp_path / f"offline{offline}"]
        run = subprocess.run(list(map(str, command)), env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
    offline, online = (load_checkpoint(tmp_path / name) for name in ("offline1", "offline0"))
    assert offline.revision == online.revision


def test_the_same_statistics_are_written_as_the_same_bytes(tiny_checkpoint, tmp_path):
    # safetensors writes metadata keys in a hash map's order, which varies between writes: the same fit gave
    # another file, and so another revision, from one run to the next.
    from density_metric.checkpoint.tensors import save_gaussian

    stats = load_checkpoint(tiny_checkpoint).stats
    written = set()
    for attempt in range(12):
        save_gaussian(tmp_path / f"{attempt}.safetensors", stats, "sha256:0123456789abcdef")
        written.add((tmp_path / f"{attempt}.safetensors").read_bytes())
    assert len(written) == 1
    from safetensors import safe_open

    with safe_open(str(tmp_path / "0.safetensors"), framework="np") as handle:  # still a safetensors file
        assert handle.metadata()["encoder_fingerprint"] == "sha256:0123456789abcdef"
        np.testing.assert_array_equal(handle.get_tensor("precision"), stats.precision)
