"""Errors: the error of a bad checkpoint file and the JSON reader that raises it; the check of a count argument;
the command lines' ``error: ...`` exit and their input file reader.

Below :mod:`density_metric.backbone` (the encoder's files) and
:mod:`density_metric.checkpoint.format` (DEnsity's files), which both read JSON files that
users may have edited, and below every command line (``density_metric.cli``, ``train/``).
"""

from __future__ import annotations

import json
import numbers
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn, TypeVar

T = TypeVar("T")


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


def positive_int(value: object, name: str) -> int:
    """``value`` as an int, or a ValueError naming ``name`` unless it is an integer (not a bool) of at least 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def fail(message: str) -> NoReturn:
    """Exit with code 2 (as argparse does) after one ``error: ...`` line on stderr; a multi-line message is joined."""
    print("error: " + "; ".join(line.strip() for line in message.splitlines() if line.strip()), file=sys.stderr)
    raise SystemExit(2)


def read_or_fail(path: Path, read: Callable[[Path], T]) -> T:
    """``read(path)`` of an input file, or an ``error:`` exit naming ``path``: a directory, a missing
    file, a ValueError of ``read`` (its message) or an OSError (the file cannot be read)."""
    if path.is_dir():
        fail(f"{path}: is a directory, not a table file")
    if not path.exists():
        fail(f"{path}: no such file")
    try:
        return read(path)
    except ValueError as err:
        fail(str(err))
    except OSError as err:
        fail(f"{path}: cannot be read ({err.strerror or err})")
