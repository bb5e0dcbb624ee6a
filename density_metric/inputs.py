"""Validation of user input: every problem is a ValueError naming the field and the row."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _is_rows(value: Any) -> bool:
    return hasattr(value, "__len__") and hasattr(value, "__getitem__") and not isinstance(value, (str, bytes, dict))


def as_context(value: Any, row: int, field: str = "contexts") -> list[str]:
    """One row's context as a list of turns. A plain string is one turn."""
    if isinstance(value, str):
        return [value]
    if value is None:
        raise ValueError(f"{field}[{row}] is None; give a list of turns (an empty list for no context)")
    if not _is_rows(value):
        raise ValueError(f"{field}[{row}] must be a list of strings or a string, got {type(value).__name__}")
    turns = list(value)
    for turn_index, turn in enumerate(turns):
        if not isinstance(turn, str):
            raise ValueError(f"{field}[{row}][{turn_index}] must be a string, got {type(turn).__name__}")
    return turns


def as_response(value: Any, row: int, field: str = "responses") -> str:
    if not isinstance(value, str):
        raise ValueError(f"{field}[{row}] must be a string, got {type(value).__name__}")
    return value


def check_pairs(
    contexts: Any, responses: Any, *, first_row: int = 0, allow_empty: bool = False
) -> tuple[list[list[str]], list[str]]:
    """Validate and normalise (contexts, responses).

    Args:
        contexts: n rows, each a list of turns (oldest first) or a single string.
        responses: n strings.
        first_row: number of the first row in error messages (for chunked input).
        allow_empty: accept zero rows (a shard of a distributed run may be empty).

    Returns:
        (contexts as lists of str, responses as str).

    Empty strings are allowed and scored: an empty response is encoded as
    ``[CLS] context [SEP] [SEP]`` and an empty context as ``[CLS] [SEP] response [SEP]``.
    """
    for name, value in (("contexts", contexts), ("responses", responses)):
        if value is None:
            raise ValueError(f"{name} is required")
        if not _is_rows(value):
            raise ValueError(f"{name} must be a list, got {type(value).__name__}")
    if len(contexts) != len(responses):
        raise ValueError(f"contexts has {len(contexts)} rows but responses has {len(responses)}")
    if len(responses) == 0 and not allow_empty:
        raise ValueError("contexts and responses are empty; give at least one row")
    checked_contexts = [as_context(value, first_row + i) for i, value in enumerate(contexts)]
    checked_responses = [as_response(value, first_row + i) for i, value in enumerate(responses)]
    return checked_contexts, checked_responses


def check_dialogues(dialogues: Sequence[Sequence[str]]) -> list[list[str]]:
    """Validate dialogues: each a list of at least 2 string turns."""
    if not _is_rows(dialogues) or len(dialogues) == 0:
        raise ValueError("dialogues must be a non-empty list of dialogues (lists of turns)")
    checked = []
    for row, dialogue in enumerate(dialogues):
        turns = as_context(dialogue, row, field="dialogues")
        if len(turns) < 2:
            raise ValueError(f"dialogues[{row}] has {len(turns)} turn(s); dialogue scoring needs at least 2")
        checked.append(turns)
    return checked
