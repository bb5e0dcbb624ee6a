"""Encoder rows of many pairs at once: :func:`pack` (candidates per context) and :func:`pack_pairs` (pairs, grouped
by context or not), each answering a :class:`Packing`.

The pair format (:mod:`density_metric.encoding.pair_format`) says *what* a row holds; this module builds the rows:
every distinct text is tokenised once (:class:`~density_metric.encoding.text_ids.TextIds`), each context is read
back only as far as the encoder reads it (:func:`~density_metric.encoding.text_ids.context_tails`), and the rows are
assembled by numpy gathers (:func:`assemble_rows`), without a Python loop over pairs. :class:`PackedRows` holds the
rows in flat arrays (CSR: ``offsets`` mark the rows) and pads a batch of them with one gather.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from typing import NamedTuple

import numpy as np
import torch

from .pair_format import PairFormat, special_token_layout
from .text_ids import ContextTails, TextIds, context_tails, gather, within


@dataclass(frozen=True)
class PackedRow:
    """One encoder row and where its candidates' features are read.

    Attributes:
        ids: token ids of the row.
        positions: position id of every token (None: 0, 1, 2, ..., the model's default).
        segments: per token, 0 for the context and j for candidate j (None: one pair, full attention).
        features: for each candidate of the row, the index of its feature token.
    """

    ids: list[int]
    positions: list[int] | None
    segments: list[int] | None
    features: list[int]


@dataclass(frozen=True, eq=False)
class PackedRows:
    """Encoder rows in flat arrays: row ``i`` is ``ids[offsets[i]:offsets[i + 1]]`` (with ``positions`` and
    ``segments`` alike, or None for rows of one pair in the paper layout), and its candidates' feature tokens are
    ``features[feature_offsets[i]:feature_offsets[i + 1]]``, indices within the row. A sequence of
    :class:`PackedRow`; :meth:`batch` pads any of them into model inputs."""

    ids: np.ndarray
    offsets: np.ndarray
    positions: np.ndarray | None
    segments: np.ndarray | None
    features: np.ndarray
    feature_offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int | slice) -> PackedRow | list[PackedRow]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(f"row {i} of {len(self)}")
        i %= len(self)
        span = slice(int(self.offsets[i]), int(self.offsets[i + 1]))
        return PackedRow(
            self.ids[span].tolist(),
            None if self.positions is None else self.positions[span].tolist(),
            None if self.segments is None else self.segments[span].tolist(),
            self.features[self.feature_offsets[i] : self.feature_offsets[i + 1]].tolist(),
        )

    def __iter__(self) -> Iterator[PackedRow]:
        return (self[i] for i in range(len(self)))

    def __eq__(self, other) -> bool:
        """Rows equal row by row, to another ``PackedRows`` or a list of ``PackedRow``."""
        if not isinstance(other, (PackedRows, list, tuple)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None

    @property
    def lengths(self) -> np.ndarray:
        """Tokens per row: (rows,) int64."""
        return np.diff(self.offsets)

    @property
    def sizes(self) -> np.ndarray:
        """Candidates per row: (rows,) int64."""
        return np.diff(self.feature_offsets)

    @classmethod
    def from_rows(cls, rows: Sequence[PackedRow]) -> PackedRows:
        """The flat form of a list of rows (all with ``segments`` or all without)."""
        if isinstance(rows, PackedRows):
            return rows
        shared = [row.segments is not None for row in rows]
        if any(shared) and not all(shared):
            raise ValueError("rows of one pair (no segments) and shared-context rows cannot share a batch")

        def flat(values):
            return np.fromiter(chain.from_iterable(values), dtype=np.int64)

        def offsets(values):
            return np.concatenate([[0], np.cumsum([len(value) for value in values])]).astype(np.int64)

        return cls(
            flat(row.ids for row in rows),
            offsets([row.ids for row in rows]),
            flat(row.positions for row in rows) if all(shared) else None,
            flat(row.segments for row in rows) if all(shared) else None,
            flat(row.features for row in rows),
            offsets([row.features for row in rows]),
        )

    def _padded(
        self, values: np.ndarray, index: np.ndarray, fill: int, offsets: np.ndarray, multiple: int = 1
    ) -> np.ndarray:
        starts, lengths = offsets[index], offsets[index + 1] - offsets[index]
        width = -(-max(int(lengths.max()), 1) // multiple) * multiple  # the longest, rounded up to the multiple
        column = np.arange(width)
        inside = column[None, :] < lengths[:, None]
        taken = values[np.minimum(starts[:, None] + column[None, :], max(len(values) - 1, 0))] if len(values) else 0
        return np.where(inside, taken, fill)

    def batch(
        self, index: Sequence[int] | np.ndarray | None = None, pad_token_id: int = 0, multiple: int = 1
    ) -> dict[str, torch.Tensor]:
        """Model inputs of rows ``index`` (all by default), right-padded to the longest (its length rounded up to
        ``multiple``: fewer distinct shapes for CUDA graphs), in one gather each.

        Rows of one pair give ``input_ids`` and a (b, t) ``attention_mask``. Shared-context rows give
        ``input_ids``, ``position_ids`` and ``segments`` (b, t) (-1 on padding; the attention mask is built from
        them where the model runs: :func:`density_metric.encoding.features.segment_mask`), ``feature_index`` and
        ``feature_valid`` (b, k) for rows with fewer candidates than the most.
        """
        index = np.arange(len(self)) if index is None else np.asarray(index, dtype=np.int64)
        ids = torch.from_numpy(self._padded(self.ids, index, pad_token_id, self.offsets, multiple))
        if self.segments is None:
            mask = torch.from_numpy(self._padded(np.ones_like(self.ids), index, 0, self.offsets, multiple))
            return {"input_ids": ids, "attention_mask": mask}
        features = self._padded(self.features, index, -1, self.feature_offsets)
        return {
            "input_ids": ids,
            "position_ids": torch.from_numpy(self._padded(self.positions, index, 0, self.offsets, multiple)),
            "segments": torch.from_numpy(self._padded(self.segments, index, -1, self.offsets, multiple)),
            "feature_index": torch.from_numpy(np.maximum(features, 0)),
            "feature_valid": torch.from_numpy(features >= 0),
        }


def assemble_rows(
    source: np.ndarray,
    context_end: np.ndarray,
    context_length: np.ndarray,
    reply_start: np.ndarray,
    reply_length: np.ndarray,
    sizes: np.ndarray,
    specials: tuple[np.ndarray, np.ndarray],
    layout: str = "paper",
) -> PackedRows:
    """Encoder rows from ids already in ``source``, cut to fit: context ``c`` of the n contexts ends at
    ``context_end[c]``, candidate ``j`` of the m = sum(``sizes``) is ``reply_length[j]`` ids from
    ``reply_start[j]``; ``specials``: (starts, lengths) of the pair template's open, middle and close ids.

    ``paper``: one row per candidate (open, context, middle, reply, close), ``context_length`` (m,) per
    candidate; ``shared-context``: one row per context (open, context, middle, then per candidate open, reply,
    close), ``context_length`` (n,) per context. The one row assembly of the package: :func:`pack` and the
    training's token store (train/loop/token_store.py) build their rows with it."""
    if layout != "paper":
        return _shared_rows(source, context_end, context_length, reply_start, reply_length, sizes, specials)
    (open_at, middle_at, close_at), (n_open, n_middle, n_close) = (np.asarray(part).tolist() for part in specials)
    m = len(reply_start)
    owner = np.repeat(np.arange(len(context_end)), sizes)
    starts = np.stack(
        [
            np.full(m, open_at),
            context_end[owner] - context_length,
            np.full(m, middle_at),
            reply_start,
            np.full(m, close_at),
        ],
        axis=1,
    )
    lengths = np.stack(
        [np.full(m, n_open), context_length, np.full(m, n_middle), reply_length, np.full(m, n_close)], axis=1
    )
    ids = gather(source, starts.ravel(), lengths.ravel())
    offsets = np.concatenate([[0], np.cumsum(lengths.sum(axis=1))])
    return PackedRows(ids, offsets, None, None, np.zeros(m, dtype=np.int64), np.arange(m + 1, dtype=np.int64))


def _shared_rows(source, context_end, context, reply_start, kept, sizes, specials) -> PackedRows:
    """:func:`assemble_rows` in the shared-context layout."""
    (open_at, middle_at, close_at), (n_open, n_middle, n_close) = (np.asarray(part).tolist() for part in specials)
    n, m = len(context_end), len(reply_start)
    head = n_open + context + n_middle
    block = n_open + kept + n_close
    pieces = 3 + 3 * sizes
    first_piece = np.cumsum(pieces) - pieces
    first_candidate = np.cumsum(sizes) - sizes
    local = within(sizes)
    total = int(pieces.sum())
    starts, lengths = np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int64)
    bases, segments = np.empty(total, dtype=np.int64), np.empty(total, dtype=np.int64)
    head_at = first_piece[:, None] + np.arange(3)
    starts[head_at] = np.stack([np.full(n, open_at), context_end - context, np.full(n, middle_at)], axis=1)
    lengths[head_at] = np.stack([np.full(n, n_open), context, np.full(n, n_middle)], axis=1)
    bases[head_at] = np.stack([np.zeros(n, dtype=np.int64), np.full(n, n_open), n_open + context], axis=1)
    segments[head_at] = 0
    block_at = (np.repeat(first_piece, sizes) + 3 + 3 * local)[:, None] + np.arange(3)
    block_head = np.repeat(head, sizes)
    starts[block_at] = np.stack([np.full(m, open_at), reply_start, np.full(m, close_at)], axis=1)
    lengths[block_at] = np.stack([np.full(m, n_open), kept, np.full(m, n_close)], axis=1)
    bases[block_at] = block_head[:, None] + np.stack(
        [np.zeros(m, dtype=np.int64), np.full(m, n_open), n_open + kept], axis=1
    )
    segments[block_at] = (local + 1)[:, None]
    ids = gather(source, starts, lengths)
    positions = np.repeat(bases - (np.cumsum(lengths) - lengths), lengths) + np.arange(len(ids))
    row_lengths = head + np.bincount(np.repeat(np.arange(n), sizes), weights=block, minlength=n).astype(np.int64)
    done = np.concatenate([[0], np.cumsum(block)])
    features = block_head + done[:-1] - np.repeat(done[first_candidate], sizes)
    return PackedRows(
        ids,
        np.concatenate([[0], np.cumsum(row_lengths)]),
        positions,
        np.repeat(segments, lengths),
        features,
        np.concatenate([[0], np.cumsum(sizes)]),
    )


@dataclass(frozen=True)
class Packing:
    """What :func:`pack` and :func:`pack_pairs` build: the encoder ``rows``, and per candidate (row after row) the
    index of its pair (``order``), whether the reply's cap cut its reply (``reply_cut``) and whether its context was
    cut to fit ``max_length`` (``context_cut``), and its reply's codes in ``text_ids`` (``replies``: the reply's ids
    before the cut). :meth:`truncation` and :meth:`reply_ids` give them per pair, in input order."""

    rows: PackedRows
    reply_cut: np.ndarray
    context_cut: np.ndarray
    replies: np.ndarray
    text_ids: TextIds
    order: np.ndarray

    @property
    def cut(self) -> np.ndarray:
        """Per candidate, row after row, whether truncation cut its pair: (m,) bool."""
        return self.reply_cut | self.context_cut

    def _per_pair(self, values: np.ndarray) -> np.ndarray:
        out = np.empty_like(values)
        out[self.order] = values
        return out

    def truncation(self) -> tuple[np.ndarray, np.ndarray]:
        """Per pair, in input order, whether the reply's cap cut its reply and whether its context was cut:
        two (n,) bool."""
        return self._per_pair(self.reply_cut), self._per_pair(self.context_cut)

    def reply_ids(self) -> list[list[int]]:
        """Per pair, in input order, its reply's token ids before the cap (``[]`` for a blank reply)."""
        return self.text_ids.ids(self._per_pair(self.replies))


def distinct_contexts(contexts: Sequence[Sequence[str]]) -> tuple[np.ndarray, list[tuple[str, ...]]]:
    """For each context the index of its distinct list of turns (n,) int64, and those lists in order of first
    appearance."""
    index: dict[tuple[str, ...], int] = {}
    owner = np.fromiter(
        (index.setdefault(tuple(turns), len(index)) for turns in contexts), dtype=np.int64, count=len(contexts)
    )
    return owner, list(index)


class _ReadContexts(NamedTuple):
    """What :func:`_read_contexts` finds: per context its distinct context's index (``owner``), per candidate the
    same (``candidate_owner``), the contexts' ids read (``tails``), and per candidate its context budget, its kept
    reply tokens, whether its reply is cut, and whether its context is."""

    owner: np.ndarray
    candidate_owner: np.ndarray
    tails: ContextTails
    budget: np.ndarray
    kept: np.ndarray
    reply_cut: np.ndarray
    context_cut: np.ndarray


def _read_contexts(
    pair_format, text_ids: TextIds, specials, contexts: Sequence[Sequence[str]], sizes: np.ndarray, reply, layout
) -> _ReadContexts:
    """Each distinct context read as far back as its pairs keep it (:func:`context_tails`), for contexts with
    ``sizes`` (n,) candidates each whose replies have ``reply`` (m,) tokens, and per candidate whether truncation
    cuts its pair. In the paper layout a context is read as far as its shortest reply lets it; in shared-context
    every context, one without candidates too, to the same budget."""
    kept = np.minimum(reply, pair_format.max_response_length)
    if layout == "paper":
        budget = pair_format.budget_beside(specials, 0, "paper") - kept
    else:
        budget = np.full(len(kept), pair_format.budget_beside(specials, 0, layout), dtype=np.int64)
    owner, distinct = distinct_contexts(contexts)
    candidate_owner = np.repeat(owner, sizes)
    if layout == "paper":
        context_budget = _most(candidate_owner, budget, len(distinct))
    else:
        context_budget = pair_format.budget_beside(specials, 0, layout)
    separator = text_ids.constant(pair_format.separator_ids(text_ids.tokenizer))
    tails = context_tails(text_ids, distinct, separator, context_budget)
    context_cut = tails.lengths[candidate_owner] > budget
    return _ReadContexts(owner, candidate_owner, tails, budget, kept, kept < reply, context_cut)


def _most(owner: np.ndarray, values: np.ndarray, groups: int) -> np.ndarray:
    """The largest of ``values`` per group of ``owner``: (groups,) int64, -1 for a group without members."""
    most = np.full(groups, -1, dtype=np.int64)
    np.maximum.at(most, owner, values)
    return most


def pack(
    pair_format,
    tokenizer,
    contexts: Sequence[Sequence[str]],
    candidates: Sequence[Sequence[str]],
    *,
    layout: str | None = None,
    text_ids: TextIds | None = None,
) -> Packing:
    """Encoder rows for each context with its candidates, as ``pair_format`` (a
    :class:`~density_metric.encoding.pair_format.PairFormat`) reads them with ``tokenizer``.

    ``paper``: one row per (context, candidate), context after context; ``shared-context``: one row per context
    holding all its candidates. Either way the rows' ``features`` list the candidates in input order, and the
    candidates are the packing's pairs (``order`` is 0, 1, ...).

    Args:
        contexts: n lists of turns, oldest first. An empty list is an empty context.
        candidates: n lists of responses, one list per context.
        layout: the format's by default (``"paper"``: one pair a row whatever the format's layout).
        text_ids: the codes to tokenise into (a fresh :class:`~density_metric.encoding.text_ids.TextIds` unless
            given).
    """
    layout = layout or pair_format.layout
    if len(contexts) != len(candidates):
        raise ValueError(f"{len(contexts)} contexts but {len(candidates)} candidate lists")
    specials = before, _, _ = special_token_layout(tokenizer)
    if layout == "shared-context" and not before:
        name = type(tokenizer).__name__
        raise ValueError(f"layout 'shared-context' needs a pair template that opens with a token; {name} has none")
    if pair_format.budget_beside(specials, pair_format.max_response_length, layout) < 0:
        raise ValueError(
            f"max_response_length={pair_format.max_response_length} leaves no room in "
            f"max_length={pair_format.max_length}"
        )
    text_ids = text_ids or TextIds(tokenizer)
    constants = np.array([text_ids.constant(ids) for ids in specials])
    sizes = np.fromiter(map(len, candidates), dtype=np.int64, count=len(candidates))
    replies = text_ids.encode([response.strip() for group in candidates for response in group])
    read = _read_contexts(pair_format, text_ids, specials, contexts, sizes, text_ids.lengths(replies), layout)
    source = np.concatenate([text_ids.pool, read.tails.ids])
    context_end = len(text_ids.pool) + read.tails.offsets[1:]
    if layout == "paper":  # a row per candidate: its context keeps what its reply leaves
        context = np.minimum(read.tails.lengths[read.candidate_owner], read.budget)
    else:  # a row per context (the head), then per candidate a block (open, reply, close)
        context = np.minimum(read.tails.lengths[read.owner], pair_format.budget_beside(specials, 0, layout))
    constant = text_ids.starts(constants), text_ids.lengths(constants)
    starts = text_ids.starts(replies)
    rows = assemble_rows(source, context_end[read.owner], context, starts, read.kept, sizes, constant, layout)
    order = np.arange(len(replies), dtype=np.int64)
    return Packing(rows, read.reply_cut, read.context_cut, replies, text_ids, order)


def pack_pairs(
    pair_format, tokenizer, contexts: Sequence[Sequence[str]], responses: Sequence[str], per_row: int | None = None
) -> Packing:
    """Encoder rows of (context, response) pairs: one row per pair, in input order (``per_row`` None, or the paper
    layout, which cannot share a context); else, in the shared-context layout, each distinct context read once per
    ``per_row`` of its responses.

    Grouped, the pairs are grouped by context (its exact list of turns), in order of first appearance; each
    group's responses, in input order, fill rows of up to ``per_row`` candidates (a row's length grows with its
    candidates, so a long group takes several rows). The context is truncated to the same tokens whatever its
    candidates, so each pair's feature is the one it gets alone. The packing's ``order`` gives each candidate's
    pair."""
    if per_row is not None and per_row < 1:
        raise ValueError(f"per_row must be >= 1, got {per_row}")
    if per_row is None or pair_format.layout != "shared-context" or not responses:
        return pack(pair_format, tokenizer, contexts, [[response] for response in responses])
    owner, distinct = distinct_contexts(contexts)
    order = np.argsort(owner, kind="stable")  # grouped, groups in order of first appearance
    chunk = within(np.bincount(owner)) // per_row
    grouped = owner[order]
    opens = np.ones(len(order), dtype=bool)
    opens[1:] = (grouped[1:] != grouped[:-1]) | (chunk[1:] != chunk[:-1])
    bounds = [*np.flatnonzero(opens).tolist(), len(order)]
    ordered = [responses[i] for i in order.tolist()]
    row_contexts = [distinct[group] for group in grouped[bounds[:-1]].tolist()]
    row_candidates = [ordered[start:end] for start, end in zip(bounds[:-1], bounds[1:])]
    return replace(pack(pair_format, tokenizer, row_contexts, row_candidates), order=order)


def encode_pairs(
    tokenizer,
    contexts: Sequence[Sequence[str]],
    responses: Sequence[str],
    *,
    turn_separator: str,
    max_length: int,
    max_response_length: int,
) -> list[list[int]]:
    """Token ids of every pair in the paper layout, each at most ``max_length`` long (kept for callers of 0.1:
    ``pack(PairFormat(turn_separator, max_length, max_response_length), ...)``)."""
    pair_format = PairFormat(turn_separator, max_length, max_response_length)
    return [row.ids for row in pack(pair_format, tokenizer, contexts, [[r] for r in responses]).rows]
