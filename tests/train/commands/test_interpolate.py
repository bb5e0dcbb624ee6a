"""``python -m train interpolate`` (train/commands/interpolate.py): theta(w) = (1 - w) start + w end, checked
tensor by tensor against float64 numpy, and ``fit`` taking the pair format from such a folder."""

import json
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from density_metric.checkpoint.format import CONFIG_FILE, HEAD_FILE, DensityConfig, save_head
from density_train.commands import main


@pytest.fixture(scope="module")
def ends(tiny_shared_checkpoint, tmp_path_factory):
    """Two checkpoints of one pair format with different encoders and heads: a copy of the tiny
    shared-context checkpoint with a head, and one with every tensor and the head moved at random."""
    root = tmp_path_factory.mktemp("ends")
    rng = np.random.default_rng(0)
    start, end = root / "start", root / "end"
    for directory in (start, end):
        shutil.copytree(tiny_shared_checkpoint, directory)
    weights = load_file(str(start / "model.safetensors"))
    moved = {name: (t + rng.normal(0, 0.1, t.shape)).astype(t.dtype) for name, t in weights.items()}
    save_file(moved, str(end / "model.safetensors"), metadata={"format": "pt"})
    dim = weights["embeddings.word_embeddings.weight"].shape[1]
    save_head(start / HEAD_FILE, rng.normal(size=dim), 0.5)
    save_head(end / HEAD_FILE, rng.normal(size=dim), -1.5)
    return start, end


@pytest.mark.parametrize("weight", [0.0, 0.25, 1.0])
def test_every_tensor_and_the_head_are_the_weighted_mean(ends, tmp_path, weight):
    start, end = ends
    main(["interpolate", str(start), str(end), "--weight", str(weight), "--out", str(tmp_path / "mid")])
    written = load_file(str(tmp_path / "mid" / "model.safetensors"))
    a, b = load_file(str(start / "model.safetensors")), load_file(str(end / "model.safetensors"))
    assert written.keys() == a.keys()
    for name, tensor in written.items():
        expected = (1 - weight) * a[name].astype(np.float64) + weight * b[name].astype(np.float64)
        np.testing.assert_allclose(tensor, expected, rtol=1e-6, atol=1e-7, err_msg=name)
        if weight in (0.0, 1.0):  # the ends themselves, bit for bit
            np.testing.assert_array_equal(tensor, (a if weight == 0.0 else b)[name])
    heads = [load_file(str(path / HEAD_FILE)) for path in (start, end, tmp_path / "mid")]
    expected = (1 - weight) * heads[0]["weight"].astype(np.float64) + weight * heads[1]["weight"]
    np.testing.assert_allclose(heads[2]["weight"], expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(heads[2]["bias"], (1 - weight) * 0.5 + weight * -1.5, rtol=1e-6)
    written_config = DensityConfig.from_file(tmp_path / "mid" / CONFIG_FILE)
    assert written_config.pair_format == DensityConfig.from_file(start / CONFIG_FILE).pair_format
    assert not (tmp_path / "mid" / "density_gaussian.safetensors").exists()  # fitted again, never averaged


def test_fit_takes_the_pair_format_of_the_encoder_folder_and_refuses_a_contradicting_flag(
    ends, tmp_path, train_cli_error
):
    from density_metric import DensityScorer
    from tests.train.loop.test_training import write_corpus

    start, end = ends
    main(["interpolate", str(start), str(end), "--weight", "0.5", "--out", str(tmp_path / "mid")])
    write_corpus(tmp_path)
    argv = ["fit", "--corpus", "jsonl", "--train-file", tmp_path / "train.jsonl", "--valid-file"]
    argv += [tmp_path / "valid.jsonl", "--encoder", tmp_path / "mid", "--device", "cpu"]
    line = train_cli_error([*argv, "--layout", "paper", "--out", tmp_path / "bad"])
    assert "--encoder keeps the checkpoint's pair format; drop --layout 'paper'" in line
    main([str(arg) for arg in [*argv, "--out", tmp_path / "fitted"]])
    scorer = DensityScorer(str(tmp_path / "fitted"), device="cpu", dtype="float32")
    fitted = scorer.checkpoint.config.pair_format
    assert fitted == DensityConfig.from_file(start / CONFIG_FILE).pair_format
    assert fitted.layout == "shared-context"  # not the default paper layout


def test_bad_weights_and_different_pair_formats_are_error_lines(ends, tmp_path, train_cli_error):
    start, end = ends
    line = train_cli_error(["interpolate", start, end, "--weight", "1.5", "--out", tmp_path / "o"])
    assert "--weight must be in [0, 1]" in line
    other = tmp_path / "other"
    shutil.copytree(end, other)
    config = json.loads((other / CONFIG_FILE).read_text())
    (other / CONFIG_FILE).write_text(json.dumps({**config, "layout": "paper"}))
    line = train_cli_error(["interpolate", start, other, "--weight", "0.5", "--out", tmp_path / "o"])
    assert f"{start} and {other} have different pair formats" in line
    line = train_cli_error(["interpolate", start, tmp_path / "missing", "--weight", "0.5", "--out", tmp_path / "o"])
    assert f"end {tmp_path / 'missing'}: no {CONFIG_FILE}" in line
    assert not (tmp_path / "o").exists()


def file_bytes(folder):
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


@pytest.mark.parametrize("which", ["start", "end"])
def test_an_out_that_is_one_of_the_checkpoints_is_refused_and_left_as_it_was(ends, train_cli_error, which):
    start, end = ends
    out = {"start": start, "end": end}[which]
    before = file_bytes(out)
    line = train_cli_error(["interpolate", start, end, "--weight", "0.5", "--out", out])
    assert line.startswith(f"error: --out {out}: the checkpoint this command reads")
    assert file_bytes(out) == before


def test_an_out_holding_other_files_is_refused_and_they_stay(ends, tmp_path, train_cli_error):
    start, end = ends
    out = tmp_path / "notes"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "config.json").write_text("{}")  # a name interpolate writes, beside one it does not
    line = train_cli_error(["interpolate", start, end, "--weight", "0.5", "--out", out])
    assert f"--out {out} holds files this command does not write (notes.txt)" in line
    assert file_bytes(out) == {"config.json": b"{}", "notes.txt": b"mine"}


def test_interpolating_again_into_its_own_output_replaces_it(ends, tmp_path):
    start, end = ends
    main(["interpolate", str(start), str(end), "--weight", "1.0", "--out", str(tmp_path / "mid")])
    main(["interpolate", str(start), str(end), "--weight", "0.0", "--out", str(tmp_path / "mid")])
    np.testing.assert_array_equal(
        load_file(str(tmp_path / "mid" / "model.safetensors"))["embeddings.word_embeddings.weight"],
        load_file(str(start / "model.safetensors"))["embeddings.word_embeddings.weight"],
    )


def test_default_is_the_bundled_checkpoint_as_in_score(tmp_path):
    from pathlib import Path

    import density_metric

    bundled = Path(density_metric.__file__).parent / "default"
    main(["interpolate", "default", str(bundled), "--weight", "0.5", "--out", str(tmp_path / "mid")])
    written, original = (
        load_file(str(tmp_path / "mid" / "model.safetensors")),
        load_file(str(bundled / "model.safetensors")),
    )
    assert written.keys() == original.keys()
    name = "embeddings.word_embeddings.weight"
    np.testing.assert_allclose(written[name], original[name].astype(np.float32), rtol=0, atol=1e-6)
    assert DensityConfig.from_file(tmp_path / "mid" / CONFIG_FILE).pair_format == (
        DensityConfig.from_file(bundled / CONFIG_FILE).pair_format
    )
