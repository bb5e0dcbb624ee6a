"""Bland replies: short replies that fit any context, mined from the training pairs themselves (issue 69).

A reply fits any context when people give it in many unrelated dialogues. :func:`bland_replies` counts, for
each normalised reply (:func:`density_train.data.text.normalise`), the distinct training dialogues it is the reply in, and
keeps the short ones that are common: the list the ``bland`` negative kind draws from
(:func:`density_train.negatives.kinds.bland_negative`). The list is a function of the training pairs only; no probe,
benchmark or hand-written list enters it (``benchmarks/probes.py`` writes its generic replies independently,
and tests/benchmarks/test_probes.py checks that the two share no code).

A run's list is mined once from its *training* split and kept on the data (:func:`bland_list`); a validation
split is given the training list (:func:`use_bland_list`), so that a validation ``bland`` AUC measures the
trained list on held-out contexts rather than a list of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..data.examples import SelectionData
from ..data.text import normalise
from .kinds import _is_word

MIN_DIALOGUES = 20  # a bland key is the reply in at least this many distinct training dialogues
MAX_WORDS = 8  # ... and has at most this many words (whitespace tokens with a letter or digit)
BLAND_FILE = "bland_list.md"  # the run's list with its counts, in the run's folder


def bland_replies(
    data: SelectionData, min_dialogues: int = MIN_DIALOGUES, max_words: int = MAX_WORDS
) -> list[tuple[str, int]]:
    """The bland replies of ``data``'s pairs, as (text, distinct dialogues), most dialogues first.

    A normalised key is bland if it is the gold reply (``data.responses``) in at least ``min_dialogues``
    distinct dialogues and its text has 1 to ``max_words`` words (tokens with a letter or digit; a key
    without any, such as ``...``, is never bland). The text kept is the key's first occurrence in
    ``data.responses``, and its word count is that text's. A dialogue is one list of ``data.dialogues``
    (the pairs of a dialogue share it, as ``from_pairs(*response_pairs_with_dialogues(...))`` gives them; two
    dialogues with equal turns count twice: DailyDialog's training split has 11,118 dialogues, 10,549 distinct
    turn lists); without dialogues, a distinct first turn of the pair's context (a proxy: dialogues that open
    alike count once). Ties in the count keep the order
    of first occurrence, so the list is a function of the pairs and their order only.
    """
    if min_dialogues < 1 or max_words < 1:
        raise ValueError(f"min_dialogues and max_words must be >= 1, got {min_dialogues} and {max_words}")
    first, counts = _dialogue_counts(data)
    kept = [
        (text, counts[key])
        for key, text in first.items()
        if counts[key] >= min_dialogues and word_count(text) <= max_words
    ]
    return sorted(kept, key=lambda item: -item[1])  # stable: first occurrence among equal counts


def word_count(text: str) -> int:
    """The words of ``text`` as the list counts them: whitespace tokens with a letter or digit."""
    return sum(map(_is_word, text.split()))


def _dialogue_counts(data: SelectionData) -> tuple[dict[str, str], dict[str, int]]:
    """Per non-empty normalised gold: its first text, and the distinct dialogues it is the gold in
    (:func:`bland_replies` says what a dialogue is)."""
    first: dict[str, str] = {}
    seen: dict[str, set] = {}
    for row, reply in enumerate(data.responses):
        key = normalise(reply)
        if not key:
            continue
        if data.dialogues is not None:
            dialogue = id(data.dialogues[row])
        else:
            dialogue = data.contexts[row][0] if data.contexts[row] else None
        first.setdefault(key, reply)
        seen.setdefault(key, set()).add(dialogue)
    return first, {key: len(dialogues) for key, dialogues in seen.items()}


def bland_list(data: SelectionData) -> tuple[str, ...]:
    """The replies the ``bland`` kind draws from for ``data``'s pairs: the list given by :func:`use_bland_list`,
    else :func:`bland_replies` of ``data`` itself at the default rule, mined once and kept on ``data``.

    A training split mines its own; give a validation split the training one. A ``SelectionData`` made by
    ``select`` or ``with_contexts`` is a new one: it mines its own unless given one.
    """
    cached = data.__dict__.get("_bland")
    if cached is None:
        cached = data.__dict__["_bland"] = tuple(text for text, _ in bland_replies(data))
    return cached


def require_bland_list(data: SelectionData, flag: str) -> tuple[str, ...]:
    """:func:`bland_list` of ``data``; a ValueError naming ``flag`` where it is empty (the kind could only fall back)."""
    replies = bland_list(data)
    if not replies:
        raise ValueError(
            f"{flag}: the kind 'bland' has no reply to draw: no training reply is the gold in at least {MIN_DIALOGUES} "
            f"distinct dialogues with at most {MAX_WORDS} words (density_train.negatives.bland); train on more pairs"
        )
    return replies


def use_bland_list(data: SelectionData, replies: Sequence[str]) -> None:
    """Make ``replies`` the list the ``bland`` kind draws from for ``data``'s pairs (e.g. the training list
    for a validation split)."""
    data.__dict__["_bland"] = tuple(replies)


def write_bland_list(path: Path, data: SelectionData) -> None:
    """:func:`bland_list` of ``data`` (the training split) with each reply's distinct dialogues in ``data``, as a
    markdown table: what a run's ``bland`` kind drew from."""
    _, counts = _dialogue_counts(data)
    rows = [(text, counts.get(normalise(text), 0)) for text in bland_list(data)]
    lines = [
        f"# Bland replies of the training split ({len(rows)})",
        "",
        f"By default a normalised gold in at least {MIN_DIALOGUES} distinct training dialogues, with at most "
        f"{MAX_WORDS} words (`density_train.negatives.bland.bland_replies`); the text is its first occurrence.",
        "",
        "| reply | dialogues |",
        "| --- | ---: |",
        *(f"| `{text.replace('|', '/')}` | {count} |" for text, count in rows),
    ]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
