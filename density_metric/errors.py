"""The error of a bad checkpoint file, and the JSON reader that raises it.

Below both :mod:`density_metric.backbone` (the encoder's files) and
:mod:`density_metric.checkpoint_format` (DEnsity's files), which both read JSON files that
users may have edited.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


class CheckpointError(ValueError):
    """A checkpoint file is missing, malformed or of an unknown version."""

    def __init__(self, path: os.PathLike | str, problem: str):
        super().__init__(f"{path}: {problem}")


def read_json(path: Path) -> dict:
    """The JSON object in ``path``, or a CheckpointError naming it."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CheckpointError(path, f"cannot be read as JSON ({err})") from None
    if not isinstance(raw, dict):
        raise CheckpointError(path, "must hold a JSON object")
    return raw
