"""The training texts tokenised once, and encoder rows assembled from them by gathers.

The scorer's packing (:func:`density_metric.encoding.packing.pack`) tokenises the texts of every call
and reads each context back from its newest turn. A training run calls it thousands of times on the same texts,
so :class:`TokenStore` does that work once: every text a candidate can be (the pool's utterances, the golds, the
context turns, where a mix has ``speaker`` each pair's two joins of its previous turn and gold, and where it has
``bland`` the run's bland list, :mod:`density_train.negatives.bland`) is tokenised with the scorer's
:class:`~density_metric.encoding.text_ids.TextIds`, and every context is read with
:func:`~density_metric.encoding.text_ids.context_tails`
to the longest budget a pair of the layout keeps. A step's rows are
then :func:`~density_metric.encoding.packing.assemble_rows` over integer positions: no text is read or tokenised inside a step.

The rows equal ``pack``'s for the same contexts and candidates (tests/train/loop/test_token_store.py checks both
layouts on DailyDialog, cut contexts and replies included): a pair's context keeps the last
``min(read, budget)`` tokens of the same suffix, whatever the budget the read stopped at.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from density_metric.encoding.features import rows_to_batch
from density_metric.encoding.packing import PackedRows, assemble_rows
from density_metric.encoding.pair_format import special_token_layout
from density_metric.encoding.text_ids import TextIds, context_tails

from ..negatives.kinds import speaker_join


def speaker_joins(context: Sequence[str], gold: str) -> list[str]:
    """The two texts :func:`density_train.negatives.kinds.speaker_negative` can make of a pair: the previous turn before
    the gold and after it (stripped, joined by a space; empty parts left out). None for a context without turns."""
    if not context:
        return []
    return [speaker_join(context[-1], gold, previous_first) for previous_first in (True, False)]


class TokenStore:
    """Token ids of a split's contexts and candidate texts, read once.

    Args:
        tokenizer, pair_format: the run's.
        contexts: the split's contexts (pair ``i``'s context is context ``i``).
        texts: every text a candidate may be; :meth:`positions` finds them again (raw text, as drawn).
    """

    def __init__(self, tokenizer, pair_format, contexts: Sequence[Sequence[str]], texts: Sequence[str]):
        self.pair_format, self.pad_token_id = pair_format, tokenizer.pad_token_id
        text_ids = TextIds(tokenizer)
        self.index = {text: position for position, text in enumerate(dict.fromkeys(texts))}
        codes = text_ids.encode([text.strip() for text in self.index])
        separator = text_ids.constant(pair_format.separator_ids(tokenizer))
        constants = np.array([text_ids.constant(ids) for ids in special_token_layout(tokenizer)])
        if pair_format.layout == "paper":  # the budget of a pair whose reply keeps no token: the longest
            self.budget = pair_format.max_length - pair_format.special_tokens(tokenizer)
        else:
            self.budget = pair_format.context_budget(tokenizer)
        if self.budget < 0:
            raise ValueError(f"{pair_format}: no room for a context")
        tails = context_tails(text_ids, contexts, separator, self.budget)
        pool = text_ids.pool
        self.source = np.concatenate([pool, tails.ids])
        self.context_end = len(pool) + tails.offsets[1:]
        self.context_length = np.minimum(tails.lengths, self.budget)
        self.text_start, self.text_length = text_ids.starts(codes), text_ids.lengths(codes)
        self.specials = text_ids.starts(constants), text_ids.lengths(constants)

    def positions(self, texts: Sequence[str]) -> np.ndarray | None:
        """The store's positions of ``texts`` (n,) int64, or None if one of them is not in the store."""
        found = [self.index.get(text) for text in texts]
        return None if None in found else np.array(found, dtype=np.int64)

    def rows(self, contexts: np.ndarray, candidates: np.ndarray) -> PackedRows:
        """Encoder rows of pairs ``contexts`` (B,) with candidates at store positions ``candidates`` (B, G), in
        the pair format's layout (as ``pack`` of their texts)."""
        contexts, candidates = np.asarray(contexts, dtype=np.int64), np.asarray(candidates, dtype=np.int64)
        sizes = np.full(len(contexts), candidates.shape[1], dtype=np.int64)
        flat = candidates.ravel()
        kept = np.minimum(self.text_length[flat], self.pair_format.max_response_length)
        length = self.context_length[contexts]
        if self.pair_format.layout == "paper":
            length = np.minimum(np.repeat(length, sizes), self.budget - kept)
        return assemble_rows(
            self.source,
            self.context_end[contexts],
            length,
            self.text_start[flat],
            kept,
            sizes,
            self.specials,
            self.pair_format.layout,
        )

    def batch(self, contexts: np.ndarray, candidates: np.ndarray, multiple: int = 1) -> dict:
        """Model inputs of :meth:`rows` (``rows_to_batch``: padded to a multiple of ``multiple`` tokens, as
        ``encode_groups`` gives them)."""
        rows = self.rows(contexts, candidates)
        return rows_to_batch(rows, self.pad_token_id, self.pair_format.pooling, multiple=multiple)
