"""Which texts this model cannot read as English: those whose letters are mostly outside the Latin script.

DEnsity's encoder and its Gaussian know English conversation: the bundled model's backbone is an English MiniLM
(uncased, English vocabulary) and every checkpoint ``train/`` makes is fitted on English corpora. Russian, Korean or
Chinese text still gets a score, and a plausible one (Cyrillic gibberish in a Russian dialogue scored calibrated
0.51; issue 68), but it means little. :func:`mostly_other_script` finds such text, for the ``non-latin`` flag of
:mod:`density_metric.row_flags`: more letters (Unicode category L*) outside the Latin script than in it, and at least
:data:`MIN_LETTERS` of them, so that one kana in an English shrug (``¯\\_(ツ)_/¯``) is not flagged.

What counts as Latin: the blocks of :data:`LATIN_BLOCKS` (accented letters such as those of "José" or "naïve café",
Vietnamese, IPA, modifier letters such as the okina of "Kamakawiwoʻole", fullwidth and mathematical Latin letters).
Digits, emoji and punctuation are no letters and count on neither side. Text in another language written in Latin
letters (Spanish, German, Vietnamese) is not flagged: no cheap test tells it from short English replies without
false positives. On every human reply and context of the project's corpora and human-judgment sets no row is
flagged (``results/bundled-default/languages/``).

Fast: an all-ASCII text (nearly every English one) is decided by ``str.isascii``; the others, each distinct text
once, are classified together by a lookup table over their code points (numpy), which learns each distinct code point
once per process.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MIN_LETTERS = 2  # the fewest letters outside the Latin script that make a text "mostly another script"
# Code point blocks of Latin letters (first, last), inclusive.
LATIN_BLOCKS = (
    (0x0000, 0x02FF),  # Basic Latin, Latin-1, Latin Extended-A and -B, IPA, spacing modifier letters
    (0x1D00, 0x1DBF),  # phonetic extensions
    (0x1E00, 0x1EFF),  # Latin Extended Additional (Vietnamese)
    (0x2070, 0x209F),  # superscripts and subscripts
    (0x2100, 0x214F),  # letterlike symbols
    (0x2C60, 0x2C7F),  # Latin Extended-C
    (0xA720, 0xA7FF),  # Latin Extended-D
    (0xAB30, 0xAB6F),  # Latin Extended-E
    (0xFF00, 0xFFEF),  # fullwidth forms
    (0x1D400, 0x1D7FF),  # mathematical alphanumeric symbols
)
# Letters exist only in the first four planes: code points above them are no letters.
_PLANES_END = 0x40000
NOT_A_LETTER, LATIN, OTHER, _UNKNOWN = 0, 1, 2, 255
# Per code point below _PLANES_END (the last entry: every one above), its kind once a text has held it: filled as
# code points are met, so a process classifies each distinct code point once (unicodedata), and a text by lookup.
_KINDS = np.full(_PLANES_END + 1, _UNKNOWN, dtype=np.uint8)
_KINDS[_PLANES_END] = NOT_A_LETTER


def _kinds(points: np.ndarray) -> np.ndarray:
    """The kind (:data:`NOT_A_LETTER`, :data:`LATIN`, :data:`OTHER`) of each code point of ``points`` (uint32)."""
    import unicodedata

    index = np.minimum(points, _PLANES_END)
    kinds = _KINDS[index]
    new = np.unique(index[kinds == _UNKNOWN])
    if len(new):
        letter = np.array([unicodedata.category(chr(point))[0] == "L" for point in new.tolist()], dtype=bool)
        latin = np.zeros(len(new), dtype=bool)
        for first, last in LATIN_BLOCKS:
            latin |= (new >= first) & (new <= last)
        _KINDS[new] = np.where(letter, np.where(latin, LATIN, OTHER), NOT_A_LETTER)
        kinds = _KINDS[index]
    return kinds


def letter_counts(texts: Sequence[str], chunk: int = 1 << 16) -> np.ndarray:
    """Per text, its Latin letters and its other letters: (n, 2) int64. ``chunk`` texts at a time, so that memory
    stays a few bytes per character of one chunk."""
    counts = np.zeros((len(texts), 2), dtype=np.int64)
    for first in range(0, len(texts), chunk):
        part = list(texts[first : first + chunk])
        lengths = np.array([len(text) for text in part], dtype=np.int64)
        nonempty = np.flatnonzero(lengths)
        if not len(nonempty):
            continue
        kinds = _kinds(np.frombuffer("".join(part).encode("utf-32-le"), dtype=np.uint32))
        starts = (np.cumsum(lengths) - lengths)[nonempty]
        for column, kind in enumerate((LATIN, OTHER)):
            counts[first + nonempty, column] = np.add.reduceat(kinds == kind, starts, dtype=np.int64)
    return counts


def _mostly_other(counts: np.ndarray) -> np.ndarray:
    """The rule on (n, 2) letter counts: at least :data:`MIN_LETTERS` other letters, and more than Latin ones."""
    return (counts[:, 1] >= MIN_LETTERS) & (counts[:, 1] > counts[:, 0])


def mostly_other_script(texts: Sequence[str]) -> np.ndarray:
    """Per text, whether its letters are mostly outside the Latin script (more of them than Latin letters, and at
    least :data:`MIN_LETTERS`): (n,) bool. Each distinct non-ASCII text is counted once."""
    flagged = np.zeros(len(texts), dtype=bool)
    rows = [index for index, text in enumerate(texts) if not text.isascii()]
    if rows:
        distinct: dict[str, int] = {}
        which = [distinct.setdefault(texts[index], len(distinct)) for index in rows]
        flagged[rows] = _mostly_other(letter_counts(list(distinct)))[which]
    return flagged


def turn_letter_counts(dialogues: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``dialogues`` (each a list of turns) with a non-ASCII turn, and their letter counts, the turns
    together: ((m,) row indices, (m, 2) int64). Each distinct turn is counted once: a dialogue's contexts share their
    turns, and no context is joined into one string."""
    rows = [index for index, turns in enumerate(dialogues) if not "".join(turns).isascii()]  # 4x all(...) per turn
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 2), dtype=np.int64)
    distinct: dict[str, int] = {}
    which = [distinct.setdefault(turn, len(distinct)) for index in rows for turn in dialogues[index]]
    sizes = np.array([len(dialogues[index]) for index in rows], dtype=np.int64)
    counts = np.add.reduceat(letter_counts(list(distinct))[which], np.cumsum(sizes) - sizes, axis=0)
    return np.array(rows, dtype=np.int64), counts


def turns_mostly_other_script(dialogues: Sequence[Sequence[str]]) -> np.ndarray:
    """Per row of turns (a context), whether its letters, the turns together, are mostly outside the Latin script
    (:func:`mostly_other_script`'s rule): (n,) bool."""
    flagged = np.zeros(len(dialogues), dtype=bool)
    rows, counts = turn_letter_counts(dialogues)
    flagged[rows] = _mostly_other(counts)
    return flagged
