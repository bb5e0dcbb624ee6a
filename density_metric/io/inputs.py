"""Validation of user input: every problem is a ValueError naming the field and the row."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

# A str can hold a lone surrogate (JSON's "\ud800" decodes to one) but it is no Unicode text: it cannot
# be encoded as UTF-8, and the tokenizer raises TypeError on it.
SURROGATE = re.compile("[\ud800-\udfff]")


def _is_rows(value: Any) -> bool:
    return hasattr(value, "__len__") and hasattr(value, "__getitem__") and not isinstance(value, (str, bytes, dict))


def _name(field: str, row: int | None) -> str:
    """``field[row]``, or ``field`` alone where the row is named otherwise (a table's line)."""
    return field if row is None else f"{field}[{row}]"


def as_text(value: Any, name: str) -> str:
    """``value`` if it is a string of Unicode text; else a ValueError naming it (``name``, e.g. ``responses[3]``)."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string, got {type(value).__name__}")
    surrogate = SURROGATE.search(value)
    if surrogate:
        raise ValueError(
            f"{name} holds a lone surrogate (U+{ord(surrogate.group()):04X} at {surrogate.start()}), "
            "which is not Unicode text"
        )
    return value


def as_context(value: Any, row: int | None, field: str = "contexts") -> list[str]:
    """One row's context as a list of turns. A plain string is one turn.

    Errors name ``field[row][turn]`` (``row=None``: ``field[turn]``, for a row named otherwise).
    """
    name = _name(field, row)
    if isinstance(value, str):
        return [as_text(value, name)]
    if value is None:
        raise ValueError(f"{name} is None; give a list of turns (an empty list for no context)")
    if not _is_rows(value):
        raise ValueError(f"{name} must be a list of strings or a string, got {type(value).__name__}")
    turns = list(value)
    for turn_index, turn in enumerate(turns):
        as_text(turn, f"{name}[{turn_index}]")
    return turns


def as_response(value: Any, row: int | None, field: str = "responses") -> str:
    """One row's response; errors name ``field[row]`` (``row=None``: ``field``)."""
    return as_text(value, _name(field, row))


def check_pairs(
    contexts: Any,
    responses: Any,
    *,
    first_row: int = 0,
    allow_empty: bool = False,
    fields: tuple[str, str] = ("contexts", "responses"),
) -> tuple[list[list[str]], list[str]]:
    """Validate and normalise (contexts, responses).

    Args:
        contexts: n rows, each a list of turns (oldest first) or a single string.
        responses: n strings.
        first_row: number of the first row in error messages (for chunked input).
        allow_empty: accept zero rows (a shard of a distributed run may be empty).
        fields: the names of the two fields in error messages (a dataset's column names).

    Returns:
        (contexts as lists of str, responses as str).

    Empty strings are allowed and scored: an empty response is encoded as
    ``[CLS] context [SEP] [SEP]`` and an empty context as ``[CLS] [SEP] response [SEP]``.
    A string holding a lone surrogate (not Unicode text) is a bad value.
    """
    context_field, response_field = fields
    for name, value in ((context_field, contexts), (response_field, responses)):
        if value is None:
            raise ValueError(f"{name} is required")
        if not _is_rows(value):
            raise ValueError(f"{name} must be a list, got {type(value).__name__}")
        if hasattr(value, "columns"):  # a DataFrame iterates over its column names, not its rows
            raise ValueError(
                f"{name} is a {type(value).__name__}, whose iteration gives its column names; "
                "pass one of its columns (df['column']) or a list"
            )
    if len(contexts) != len(responses):
        raise ValueError(f"{context_field} has {len(contexts)} rows but {response_field} has {len(responses)}")
    if len(responses) == 0 and not allow_empty:
        raise ValueError(f"{context_field} and {response_field} are empty; give at least one row")
    checked_contexts = [as_context(value, first_row + i, context_field) for i, value in enumerate(contexts)]
    checked_responses = [as_response(value, first_row + i, response_field) for i, value in enumerate(responses)]
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


def dialogue_pairs(dialogues: Sequence[Sequence[str]]) -> tuple[list[list[str]], list[str]]:
    """The (context, response) pairs that dialogue-level scoring reads, dialogue after dialogue: every turn from
    the second on against its prefix. ``dialogues`` as :func:`check_dialogues` returns them."""
    contexts = [list(turns[:i]) for turns in dialogues for i in range(1, len(turns))]
    responses = [turns[i] for turns in dialogues for i in range(1, len(turns))]
    return contexts, responses
