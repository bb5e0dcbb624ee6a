"""Loading the transformers backbone: the one place that calls ``from_pretrained``.

Scoring, fitting, training and the benchmarks all load an encoder (``BertModel`` without its
pooler: the score reads the final-layer [CLS], never the pooler) and its tokenizer here.

Loading checks what transformers leaves to warnings (silenced here) or lets through: weights
that do not match the config (they would be left at random values), non-finite weights, and
unreadable files; each is a CheckpointError naming the file.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open

from .errors import CheckpointError, read_json
from .process_switch import ProcessSwitch

WEIGHTS_FILE = "model.safetensors"
# JSON files of the encoder and tokenizer that transformers reads, when present.
JSON_FILES = ("config.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json")
# How many tensor names an error message lists.
SHOWN_NAMES = 3
# What transformers records in tokenizer_config.json about how a tokenizer was loaded, not what it is: one tokenizer
# loaded with HF_HUB_OFFLINE=1 (local_files_only) or from a Hub id (is_local) would save other values, and so give its
# checkpoint another revision (a content hash) and its scores another signature. Each load sets both again.
LOADING_KEYS = ("is_local", "local_files_only")


def _silence_transformers() -> tuple[int, bool]:
    from transformers.utils import logging as hf_logging

    saved = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    return saved


def _unsilence_transformers(saved: tuple[int, bool]) -> None:
    from transformers.utils import logging as hf_logging

    verbosity, bars = saved
    hf_logging.set_verbosity(verbosity)
    if bars:
        hf_logging.enable_progress_bar()


# ``with quiet_transformers():`` silences transformers' load reports and weight-loading bar (and, through them,
# huggingface_hub's bars) while any thread is inside it; the last one out puts them back as they were.
quiet_transformers = ProcessSwitch(_silence_transformers, _unsilence_transformers)


def load_backbone(path: os.PathLike | str, *, dtype: torch.dtype = torch.float32):
    """(model, tokenizer) at ``path`` (a directory or Hub id), the model without pooling layer, in ``dtype``.

    transformers 5 keeps a checkpoint's stored dtype unless told, so ``dtype`` is always passed:
    a float16 checkpoint is read into float32 weights by default.

    Raises:
        CheckpointError: naming the file: unreadable or malformed JSON, tokenizer or weights
            files; weights that are missing, unexpected or mis-shaped for the config; NaN or
            infinite weights.
    """
    from transformers import AutoModel, AutoTokenizer

    weights = Path(path) / WEIGHTS_FILE
    if Path(path).is_dir():
        check_files(Path(path))
    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(path)
        # ignore_mismatched_sizes: mis-shaped tensors come back in the loading info, checked
        # below, instead of as a RuntimeError pointing to the report quiet_transformers hides.
        model, info = AutoModel.from_pretrained(
            path, add_pooling_layer=False, dtype=dtype, output_loading_info=True, ignore_mismatched_sizes=True
        )
    check_loading_info(info, weights)
    check_finite(model, weights)
    return model, tokenizer


def save_tokenizer(tokenizer, directory: os.PathLike | str) -> None:
    """``tokenizer.save_pretrained(directory)``, with :data:`LOADING_KEYS` left out of its tokenizer_config.json
    (written as transformers writes it: sorted keys, indent 2), so that what is saved does not depend on how the
    tokenizer was loaded."""
    tokenizer.save_pretrained(directory)
    path = Path(directory) / "tokenizer_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    if any(key in config for key in LOADING_KEYS):
        kept = {key: value for key, value in config.items() if key not in LOADING_KEYS}
        path.write_text(json.dumps(kept, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


def check_files(directory: Path) -> None:
    """A CheckpointError naming the first file transformers would fail on (or misread) without naming it."""
    for name in JSON_FILES:
        if (directory / name).is_file():
            read_json(directory / name)
    if (directory / "tokenizer.json").is_file():
        from tokenizers import Tokenizer

        try:
            Tokenizer.from_file(str(directory / "tokenizer.json"))
        except Exception as err:  # tokenizers raises a bare Exception for any malformed file
            raise CheckpointError(directory / "tokenizer.json", f"is not a readable tokenizer ({err})") from None
    if (directory / WEIGHTS_FILE).is_file():
        try:
            with safe_open(str(directory / WEIGHTS_FILE), framework="pt") as handle:
                dtypes = {key: handle.get_slice(key).get_dtype() for key in handle.keys()}
        except SafetensorError as err:
            raise CheckpointError(directory / WEIGHTS_FILE, f"is not a readable safetensors file ({err})") from None
        # transformers casts integer tensors to the model's float dtype without a word; only index
        # buffers (embeddings.position_ids, which older transformers saved) are integers.
        wrong = sorted(k for k, d in dtypes.items() if not d.startswith(("F", "BF")) and not k.endswith("_ids"))
        if wrong:
            raise CheckpointError(
                directory / WEIGHTS_FILE,
                f"{_count(wrong, 'weight tensor')} {_be(wrong)} not floating-point ({_names(wrong)})",
            )


def check_loading_info(info: dict, weights: Path) -> None:
    """A CheckpointError naming ``weights`` if transformers' loading report shows any tensor
    missing (left at its random initial value), unexpected or mis-shaped."""
    missing = sorted(info["missing_keys"])
    # Raw backbones (all-MiniLM-L6-v2) store a pooler, which is left out on purpose: the score
    # reads the final-layer [CLS], never the pooler.
    unexpected = sorted(key for key in info["unexpected_keys"] if not key.startswith("pooler."))
    mismatched = [
        f"{key}: {tuple(in_file)} in the file, {tuple(in_model)} in the model"
        for key, in_file, in_model in sorted(info["mismatched_keys"])
    ]
    problems = [
        f"{_count(names, kind + ' tensor')} ({_names(names)})"
        for kind, names in (("missing", missing), ("unexpected", unexpected), ("mis-shaped", mismatched))
        if names
    ] + list(info["error_msgs"])
    if problems:
        raise CheckpointError(weights, "does not match config.json: " + "; ".join(problems))


def check_finite(model: torch.nn.Module, weights: Path) -> None:
    """A CheckpointError naming ``weights`` and the first tensors if any weight is NaN or infinite."""
    tensors = itertools.chain(model.named_parameters(), model.named_buffers())
    bad = [name for name, t in tensors if t.is_floating_point() and not _finite(t.detach())]
    if bad:
        verb = "holds" if len(bad) == 1 else "hold"
        raise CheckpointError(weights, f"{_count(bad, 'tensor')} {verb} NaN or infinite values ({_names(bad)})")


def _finite(tensor: torch.Tensor) -> bool:
    # A sum with a NaN or infinite term is never finite (IEEE), and summing is about 20x faster
    # than torch.isfinite element-wise on this CPU (8 vs 150 ms for all-MiniLM-L6-v2's weights);
    # a non-finite sum (a NaN, or an overflow of large finite values) is settled element-wise.
    return bool(torch.isfinite(tensor.sum())) or bool(torch.isfinite(tensor).all())


def _count(names: list[str], noun: str) -> str:
    return f"{len(names)} {noun}{'' if len(names) == 1 else 's'}"


def _be(names: list[str]) -> str:
    return "is" if len(names) == 1 else "are"


def _names(names: list[str]) -> str:
    return ", ".join(names[:SHOWN_NAMES]) + (", ..." if len(names) > SHOWN_NAMES else "")
