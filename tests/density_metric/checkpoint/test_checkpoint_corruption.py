"""Every file of a checkpoint, damaged in every way that applies, is a CheckpointError naming that file.

Checkpoints are loaded as users load them: ``DensityScorer(path)`` reads the format
(``load_checkpoint``) and then the encoder (``Encoder.load`` -> ``load_backbone``).

The tiny fixture's checkpoint holds density_config.json, density_gaussian.safetensors,
config.json, model.safetensors, tokenizer.json, tokenizer_config.json and README.md; a head
is added to each copy here. Left out on purpose:

- README.md: the model card; nothing reads it to score.
- vocab.txt: the fixture has none (a fast tokenizer saves tokenizer.json only).
- tokenizer_config.json missing or ``{}``: the tokenizer class then comes from config.json's
  model_type and BERT's defaults give the same special tokens, and tokenizer.json holds the
  vocabulary and normalizer, so the scores are unchanged (checked below).
- density_head.safetensors missing: the head is optional (checked below).
- a float16 model.safetensors: a supported format, read into float32 weights.
"""

import json
import shutil

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save_file

from density_metric import DensityScorer
from density_metric.checkpoint.format import CheckpointError, save_head

GARBAGE = bytes(range(255, -1, -1)) * 4  # not UTF-8, and a nonsense safetensors header length
PAIRS = ([["hi there", "how are you"], ["what a day"]], ["fine thanks", "nice weather"])


@pytest.fixture
def checkpoint(tiny_checkpoint, tmp_path):
    """A writable copy of the tiny checkpoint, with a response-selection head."""
    path = shutil.copytree(tiny_checkpoint, tmp_path / "ckpt")
    save_head(path / "density_head.safetensors", np.linspace(-1, 1, 32), 0.5)
    return path


def load(path):
    return DensityScorer(str(path), device="cpu", dtype="float32")


# --------------------------------------------------------------------------- damage, f(file path)


def missing(file):
    file.unlink()


def truncated(file):
    file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])


def empty(file):
    file.write_bytes(b"")


def garbage(file):
    file.write_bytes(GARBAGE)


def json_object(file):
    file.write_text("{}")


def json_list(file):
    file.write_text("[]")


def edit_json(**changes):
    def damage(file):
        file.write_text(json.dumps({**json.loads(file.read_text()), **changes}))

    return damage


def edit_tensors(change):
    """Apply ``change`` to the file's dict of tensors, keeping its metadata."""

    def damage(file):
        with safe_open(str(file), framework="numpy") as handle:
            metadata = handle.metadata()
        tensors = load_file(str(file))
        change(tensors)
        save_file(tensors, str(file), metadata=metadata)

    return damage


def set_value(key, value, index=0):
    def change(tensors):
        tensors[key].flat[index] = value

    return edit_tensors(change)


def replace(key, make):
    """Tensor ``key`` becomes ``make(old)``; ``make`` returning None drops it."""

    def change(tensors):
        new = make(tensors[key])
        if new is None:
            del tensors[key]
        else:
            tensors[key] = np.ascontiguousarray(new)

    return edit_tensors(change)


QUERY = "encoder.layer.0.attention.self.query.weight"
COMMON = {"missing": missing, "truncated": truncated, "empty": empty, "garbage": garbage}
JSON_SHAPES = {"json_object": json_object, "json_list": json_list}
MATRIX = {
    "density_config.json": {
        **COMMON,
        **JSON_SHAPES,
        "unknown_version": edit_json(format_version="1"),
        "bad_max_length": edit_json(max_length=-5),
    },
    "density_gaussian.safetensors": {
        **COMMON,
        "nan_precision": set_value("precision", np.nan, 5),
        "inf_mean": set_value("mean", np.inf),
        "nan_quantiles": set_value("quantiles", np.nan, 7),
        "float32_precision": replace("precision", lambda p: p.astype(np.float32)),
        "wrong_shape_precision": replace("precision", lambda p: p[:, :31]),
        "no_mean": replace("mean", lambda m: None),
        "negated_precision": replace("precision", lambda p: -p),
        "zero_precision": replace("precision", np.zeros_like),
    },
    "density_head.safetensors": {
        # "missing" is a checkpoint without a head: fine.
        **{name: damage for name, damage in COMMON.items() if name != "missing"},
        "nan_weight": set_value("weight", np.nan, 3),
        "inf_bias": set_value("bias", np.inf),
        "int_weight": replace("weight", lambda w: w.astype(np.int32)),
        "wrong_shape_weight": replace("weight", lambda w: w[:16]),
        "no_bias": replace("bias", lambda b: None),
    },
    "config.json": {**COMMON, **JSON_SHAPES, "string_hidden_size": edit_json(hidden_size="32")},
    "model.safetensors": {
        **COMMON,
        "nan_weight": set_value(QUERY, np.nan, 10),
        "inf_embedding": set_value("embeddings.word_embeddings.weight", -np.inf),
        "int_weight": replace(QUERY, lambda w: w.astype(np.int32)),
        "wrong_shape_weight": replace(QUERY, lambda w: w[:, :16]),
        "dropped_tensor": replace(QUERY, lambda w: None),
        "renamed_tensors": edit_tensors(lambda t: t.update({"foo." + k: t.pop(k) for k in list(t)})),
    },
    "tokenizer.json": {**COMMON, **JSON_SHAPES},
    "tokenizer_config.json": {"truncated": truncated, "empty": empty, "garbage": garbage, "json_list": json_list},
}
CASES = [(file, name) for file, damages in MATRIX.items() for name in damages]


@pytest.mark.parametrize(("file", "damage"), CASES, ids=[f"{file}-{name}" for file, name in CASES])
def test_damaged_file_is_a_checkpoint_error_naming_it(checkpoint, file, damage):
    MATRIX[file][damage](checkpoint / file)
    with pytest.raises(CheckpointError) as raised:
        load(checkpoint)
    assert str(raised.value).startswith(f"{checkpoint / file}: "), str(raised.value)


@pytest.mark.parametrize(
    ("file", "damage"),
    [("README.md", missing), ("tokenizer_config.json", missing), ("tokenizer_config.json", json_object)],
)
def test_harmless_changes_leave_the_scores_alone(checkpoint, tiny_scorer, file, damage):
    damage(checkpoint / file)
    np.testing.assert_array_equal(load(checkpoint).score(*PAIRS).scores, tiny_scorer.score(*PAIRS).scores)


def test_a_checkpoint_without_head_loads(checkpoint):
    (checkpoint / "density_head.safetensors").unlink()
    assert load(checkpoint).checkpoint.head is None
