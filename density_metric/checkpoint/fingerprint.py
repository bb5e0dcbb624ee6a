"""The encoder fingerprint that ties a checkpoint's Gaussian to the encoder weights and pair format
it was fitted with: computed by :func:`encoder_fingerprint`, stored in the Gaussian file's metadata
(:data:`FINGERPRINT_KEY`) by ``checkpoint.format.save_checkpoint`` and checked on load by
:func:`check_fingerprint`; and :func:`files_hash`, the content hash of a local checkpoint's files.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open

from ..backbone import load_backbone
from ..encoding.pair_format import PairFormat
from ..errors import CheckpointError

logger = logging.getLogger(__name__)

# The Gaussian file's metadata key for encoder_fingerprint(), and the pair-format fields it
# covers: every field of PairFormat, named here so that a field added later does not change the
# fingerprint of every checkpoint written before it.
FINGERPRINT_KEY = "encoder_fingerprint"
FINGERPRINT_FIELDS = ("turn_separator", "max_length", "max_response_length", "layout", "pooling")
FINGERPRINT_PATTERN = re.compile(r"sha256:[0-9a-f]{16}")
# Gaussian files without a fingerprint already warned about, so each warns once per process.
_WARNED_UNFINGERPRINTED: set[Path] = set()


def encoder_fingerprint(weights: Path, pair_format: PairFormat) -> str:
    """ "sha256:" and 16 hex digits over what decides the features g(c, r) a Gaussian is fitted to.

    Counted: the pair-format fields :data:`FINGERPRINT_FIELDS`, and every floating-point tensor
    of the encoder's ``weights`` file (model.safetensors): its name, shape and values, in name
    order. float16 and bfloat16 values count as their (exact) float32 values, so one set of
    weights has one fingerprint whether stored in half or single precision.

    Not counted: the pooler and integer index buffers (``embeddings.position_ids``, which older
    transformers saved), which the score never reads; config.json and the tokenizer files
    (they are in the content hash of a local checkpoint's ``revision``); the heads f and rating,
    which the Gaussian does not depend on.

    Raises:
        CheckpointError: naming ``weights`` if it cannot be read.
    """
    digest = hashlib.sha256()
    digest.update(json.dumps({name: getattr(pair_format, name) for name in FINGERPRINT_FIELDS}).encode())
    try:
        with safe_open(str(weights), framework="pt") as handle:
            for name in sorted(handle.keys()):
                tensor = handle.get_tensor(name)
                if name.startswith("pooler.") or not tensor.is_floating_point():
                    continue
                if tensor.dtype in (torch.float16, torch.bfloat16):
                    tensor = tensor.float()
                values = tensor.contiguous().numpy()
                digest.update(f"\n{name} {values.dtype.str} {values.shape}\n".encode())
                digest.update(np.ascontiguousarray(values, dtype=values.dtype.newbyteorder("<")).data)
    except Exception as err:  # safetensors raises several error types for a bad file
        raise CheckpointError(weights, f"is not a readable safetensors file ({err})") from None
    return "sha256:" + digest.hexdigest()[:16]


def check_fingerprint(
    gaussian: Path, stored: str | None, weights: Path, pair_format: PairFormat, config_path: Path
) -> None:
    """A CheckpointError naming ``gaussian`` unless its ``stored`` fingerprint is that of the
    ``weights`` and ``pair_format`` (read from ``config_path``); a warning (once) if it has none."""
    if stored is None:
        if gaussian not in _WARNED_UNFINGERPRINTED:
            _WARNED_UNFINGERPRINTED.add(gaussian)
            logger.warning(
                "%s has no %s (it was written before fingerprints): nothing checks that it was fitted "
                "with this checkpoint's encoder and pair format. Writing the checkpoint again with "
                "density_metric.save_checkpoint adds one.",
                gaussian,
                FINGERPRINT_KEY,
            )
        return
    actual = encoder_fingerprint(weights, pair_format)
    if actual != stored:
        # Damaged weights (missing, mis-shaped, NaN) change the fingerprint too; their own
        # error says more, so the encoder is loaded to raise it first.
        load_backbone(weights.parent)
        raise CheckpointError(
            gaussian,
            f"was fitted with encoder and pair format fingerprint {stored}, but {weights} and the pair "
            f"format in {config_path} give {actual}: the statistics belong to other weights or another "
            "pair format (layout, pooling, max lengths, turn separator); restore the files they were "
            "fitted with, or fit them again",
        )


def files_hash(files: Sequence[Path]) -> str:
    """First 16 hex digits of a sha256 over each file's name and bytes, in the order given (the
    ``revision`` of a local checkpoint: ``checkpoint.format.content_hash``)."""
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.name.encode())
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]
