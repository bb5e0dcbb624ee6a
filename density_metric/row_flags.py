"""When a score means little: the per-row flags, and the floor that keeps degenerate replies from winning.

Every scored row gets a list of flags, empty for most rows, in this order:

- ``empty``: the reply is empty or blank (whitespace, or only characters the tokenizer drops:
  :func:`~density_metric.encoding.pair_format.is_blank`), so the encoder reads ``[CLS] context [SEP] [SEP]``;
- ``unreadable``: the reply has tokens, but every one is the tokenizer's unknown token (``[UNK]``): emoji
  only, or a script the vocabulary lacks. The encoder reads no word of it;
- ``punctuation``: the reply has no letter and no digit in any script (``...``, ``?!``, ``:)``, ``😀!``). It says
  no word, so it gets the floor too (policy ``v2``): read and scored as usual, such replies beat the real reply on
  the bundled model in 22.4 % of 500 DailyDialog test cases (``?!`` in 28 %; ``benchmarks/probes.py``);
- ``non-latin``: the reply, or the context (its turns together), is mostly letters outside the Latin script
  (Cyrillic, Hangul, Chinese, Arabic, Greek...; :mod:`density_metric.scripts`). The model reads English: such a row
  gets a score, but it means little (a Russian dialogue's Cyrillic gibberish scored calibrated 0.51). Flagged, not
  floored: the encoder still reads its tokens, and no floor is argued for text the model was not made for. No
  human reply or context of the project's English corpora is flagged (``results/bundled-default/languages/``);
- ``truncated``: the encoder read only part of the pair, and one or both of these say which cap cut it
  (:meth:`~density_metric.encoding.packing.Packing.truncation`): ``truncated_reply``, the reply is longer than
  ``max_response_length`` tokens (64 for the bundled model; a scoring option) and only its first ones were read;
  ``truncated_context``, the context did not fit beside the reply in ``max_length``, and only its most recent
  tokens were read. Tables written before these two existed carry ``truncated`` alone.

The floor (policy ``v2``, ``floor=v2`` in the signature; ``v1`` floored ``empty`` and ``unreadable`` replies
only): an ``empty``, ``unreadable`` or ``punctuation`` reply gets the
distance ``max(d, 2 q_max)``, with ``q_max`` the largest distance of the checkpoint's held-out human replies
(its last calibration quantile). Its score is then at most ``-2 q_max``, below every human reply the
checkpoint was calibrated on, and its calibrated score is 0.0. Without it an empty reply scored as a typical
human one (on the bundled model it outscored the real reply in 52.0 % of 500 DailyDialog test cases), so a
generation bug that outputs nothing looked like a better system. The floor is a number, not NaN, so that
means and significance tests still work; it holds for every checkpoint, whatever its training taught the
density. Twice ``q_max`` rather than ``q_max`` itself leaves a margin for human replies a little less typical
than any held-out one (the bundled model: ``q_max`` 65.2; the farthest of 1,500 DailyDialog test replies
62.3). A score is never raised: a reply already farther than the floor keeps its own distance.
"""

from __future__ import annotations

import logging
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np

from .encoding.packing import Packing, pack
from .encoding.text_ids import reply_ids
from .scripts import mostly_other_script, turns_mostly_other_script

logger = logging.getLogger(__name__)

EMPTY, UNREADABLE, PUNCTUATION, TRUNCATED = "empty", "unreadable", "punctuation", "truncated"
NON_LATIN = "non-latin"
# Which cap cut a truncated row (beside TRUNCATED, which every cut row keeps): the reply's, the context's, or both.
TRUNCATED_REPLY, TRUNCATED_CONTEXT = "truncated_reply", "truncated_context"
FLAGS = (EMPTY, UNREADABLE, PUNCTUATION, NON_LATIN, TRUNCATED, TRUNCATED_REPLY, TRUNCATED_CONTEXT)
TRUNCATION = frozenset({TRUNCATED, TRUNCATED_REPLY, TRUNCATED_CONTEXT})
# The flags whose rows get the floor: the encoder read no word of the reply.
FLOORED = frozenset({EMPTY, UNREADABLE, PUNCTUATION})
FLOOR_FACTOR = 2.0
FLOOR_POLICY = "v2"  # in the signature: floor=v2 (v1: empty and unreadable replies only)
_WORDS = {
    EMPTY: "empty or blank",
    UNREADABLE: "unreadable (every token unknown)",
    PUNCTUATION: "punctuation only",
    NON_LATIN: "mostly letters outside the Latin script (reply or context)",
    TRUNCATED: "truncated",
    TRUNCATED_REPLY: "reply cut at max_response_length tokens",
    TRUNCATED_CONTEXT: "context cut to fit max_length",
}


def reply_flag(response: str, ids: Sequence[int], unknown_id: int | None) -> str | None:
    """The reply's flag (``empty``, ``unreadable`` or ``punctuation``), or None: ``ids`` are its token ids as
    the encoder reads them (``Packing.reply_ids``), ``unknown_id`` the tokenizer's unknown token."""
    if not ids:
        return EMPTY
    if unknown_id is not None and all(token == unknown_id for token in ids):
        return UNREADABLE
    if not any(unicodedata.category(char)[0] in "LN" for char in response):
        return PUNCTUATION
    return None


def row_flags(pair_format, tokenizer, contexts: Sequence[Sequence[str]], responses: Sequence[str]) -> list[list[str]]:
    """The flags of every (context, response) pair, as ``pair_format`` reads it with ``tokenizer``: n lists."""
    packing = pack(pair_format, tokenizer, contexts, [[response] for response in responses])
    return packing_flags(packing, contexts, responses, tokenizer.unk_token_id)


def packing_flags(
    packing: Packing, contexts: Sequence[Sequence[str]], responses: Sequence[str], unknown_id: int | None
) -> list[list[str]]:
    """The flags of the pairs that ``packing`` encoded (``Encoder.encode``), from the tokens and cuts of its rows;
    ``unknown_id``: the tokenizer's unknown token: n lists."""
    reply_cut, context_cut = packing.truncation()
    cut = (reply_cut | context_cut).tolist()
    reply_cut, context_cut = reply_cut.tolist(), context_cut.tolist()
    ids = packing.reply_ids()
    return flags_of(responses, ids, cut, unknown_id, contexts=contexts, reply_cut=reply_cut, context_cut=context_cut)


def flags_of(
    responses: Sequence[str],
    reply_ids: Sequence[Sequence[int]],
    cut: Sequence[bool],
    unknown_id: int | None,
    *,
    contexts: Sequence[Sequence[str]],
    reply_cut: Sequence[bool] | None = None,
    context_cut: Sequence[bool] | None = None,
) -> list[list[str]]:
    """The flags of every pair from its reply, the reply's token ids, whether truncation cuts the pair, the
    tokenizer's unknown token and the pair's context (for ``non-latin``): n lists (:func:`row_flags`; the scorer's,
    from the rows it encoded)."""
    other_script = other_script_rows(contexts, responses)
    flags = []
    for response, ids, non_latin, truncated in zip(responses, reply_ids, other_script.tolist(), cut):
        flag = reply_flag(response, ids, unknown_id)
        on = ((flag, flag is not None), (NON_LATIN, non_latin), (TRUNCATED, truncated))
        flags.append([name for name, flagged in on if flagged])
    if reply_cut is not None and context_cut is not None:  # which cap cut the row: after TRUNCATED
        for row, by_reply, by_context in zip(flags, reply_cut, context_cut):
            row += [name for name, on in ((TRUNCATED_REPLY, by_reply), (TRUNCATED_CONTEXT, by_context)) if on]
    return flags


def other_script_rows(contexts: Sequence[Sequence[str]], responses: Sequence[str]) -> np.ndarray:
    """Per pair, whether its reply or its context (the turns together) is mostly letters outside the Latin script
    (:func:`~density_metric.scripts.mostly_other_script`): (n,) bool."""
    return mostly_other_script(responses) | turns_mostly_other_script(contexts)


def reply_flags(tokenizer, responses: Sequence[str]) -> list[list[str]]:
    """The reply's own flags of every response, those that decide the floor (no ``non-latin`` or ``truncated``,
    which read the context too): n lists."""
    unknown_id = tokenizer.unk_token_id
    flags = [reply_flag(r, ids, unknown_id) for r, ids in zip(responses, reply_ids(tokenizer, responses))]
    return [[flag] if flag else [] for flag in flags]


def floor_distance(quantiles: np.ndarray) -> float:
    """The distance of the floor: :data:`FLOOR_FACTOR` times the largest held-out distance (``quantiles[-1]``)."""
    return FLOOR_FACTOR * float(quantiles[-1])


def floor_distances(distances: np.ndarray, flags: Sequence[Sequence[str]], quantiles: np.ndarray) -> np.ndarray:
    """``distances`` (n,) with every row that has a flag of :data:`FLOORED` (``empty``, ``unreadable`` or
    ``punctuation``) moved out to at least the floor (:func:`floor_distance`); a new array, float64."""
    distances = np.array(distances, dtype=np.float64)
    floored = np.array([not FLOORED.isdisjoint(row) for row in flags], dtype=bool)
    if floored.any():
        distances[floored] = np.maximum(distances[floored], floor_distance(quantiles))
    return distances


def count_flags(flags: Iterable[Sequence[str]]) -> Counter:
    """``rows`` (how many), ``flagged`` (rows with any flag), and per flag the rows that carry it."""
    counts = Counter(rows=0, flagged=0)
    for row in flags:
        counts["rows"] += 1
        counts["flagged"] += bool(row)
        counts.update(row)
    return counts


def flag_summary(counts: Counter) -> str | None:
    """One sentence on the flagged rows of :func:`count_flags`' ``counts``, or None where no row is flagged.

    E.g. ``"3 of 200 rows are flagged: 2 empty or blank, 1 truncated (1 reply cut at max_response_length tokens);
    ..."``.
    """
    if not counts["flagged"]:
        return None
    parts = ", ".join(f"{counts[flag]} {_WORDS[flag]}" for flag in FLAGS if counts[flag] and flag not in TRUNCATION)
    if counts[TRUNCATED]:
        cuts = (TRUNCATED_REPLY, TRUNCATED_CONTEXT)
        detail = ", ".join(f"{counts[flag]} {_WORDS[flag]}" for flag in cuts if counts[flag])
        parts += f"{', ' if parts else ''}{counts[TRUNCATED]} truncated{f' ({detail})' if detail else ''}"
    rows = f"{counts['rows']} rows are" if counts["rows"] != 1 else "1 row is"
    text = f"{counts['flagged']} of {rows} flagged: {parts}"
    if any(counts[flag] for flag in FLOORED):
        text += (
            "; empty, unreadable and punctuation-only replies get the floor score, below every held-out human reply"
            " (calibrated 0)"
        )
    if counts[NON_LATIN]:
        text += "; this model reads English only, so text in another script gets a score that says nothing of it"
    return text + "; a flagged row's score means little (the flags say which rows)"


def warn_flags(flags: Iterable[Sequence[str]]) -> Counter:
    """Log :func:`flag_summary` of the rows' ``flags`` as one warning (none where no row is flagged); the counts."""
    counts = count_flags(flags)
    summary = flag_summary(counts)
    if summary:
        logger.warning(summary)
    return counts
