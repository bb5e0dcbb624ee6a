"""Token ids of many pairs at once: each distinct text tokenised once, every row assembled by numpy gathers.

The pair format (:mod:`density_metric.pair_format`) says *what* a row holds; this module builds the rows fast:

- :class:`TextIds` tokenises each distinct turn and reply once, with special-token text read as text
  (``split_special_tokens=True``: a reply ``[SEP]`` is the word pieces ``[ sep ]``, never the separator). A turn
  recurs in every later context of its dialogue, so scoring a whole dialogue tokenises each turn once.
- :func:`context_tails` reads each distinct context from its newest turn back, one turn per round for all
  contexts together, and stops a context once it holds more tokens than any of its pairs can keep: the turns
  the encoder will not read are never tokenised. The turns are joined with the separator's *ids*, never as text.
- :class:`PackedRows` holds the rows in flat arrays (CSR: ``offsets`` mark the rows) and pads a batch of them
  with one gather, without a Python loop over rows.

Whitespace pre-tokenisation (BERT's WordPiece) tokenises a joined string and its turns alike, so for text
without special-token strings the ids are those of tokenising the joined context; ``tests/test_packing.py``
checks that against the former path (``benchmarks/reference_encoding.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import torch


class TextIds:
    """Token ids of distinct texts, each tokenised once (``add_special_tokens=False``, special-token text split
    as ordinary text), kept in one flat pool. Texts get integer codes; :meth:`constant` adds fixed id lists
    (the separator, the template's special tokens) as codes too."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.codes: dict[str, int] = {}
        self._texts: list[str] = []
        self._lengths = np.full(64, -1, dtype=np.int64)
        self._starts = np.zeros(64, dtype=np.int64)
        self._chunks: list[np.ndarray] = []
        self._size = 0
        self._pool: np.ndarray | None = None

    def code(self, text: str) -> int:
        """The code of ``text`` (registered if new; tokenised by :meth:`tokenize`)."""
        code = self.codes.get(text)
        if code is None:
            code = self.codes[text] = len(self._texts)
            self._texts.append(text)
        return code

    def register(self, texts: Sequence[str]) -> np.ndarray:
        """Codes of ``texts``, not tokenised yet: (n,) int64."""
        return np.fromiter((self.code(text) for text in texts), dtype=np.int64, count=len(texts))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Codes of ``texts``, tokenised: (n,) int64."""
        codes = self.register(texts)
        self.tokenize(codes)
        return codes

    def constant(self, ids: Sequence[int]) -> int:
        """A code whose ids are ``ids`` as given (no text, never tokenised)."""
        code = len(self._texts)
        self._texts.append("")
        self._grow(code + 1)
        self._store(np.array([code]), [list(ids)])
        return code

    def _grow(self, size: int) -> None:
        if size > len(self._lengths):
            grown = max(size, 2 * len(self._lengths))
            self._lengths = np.concatenate([self._lengths, np.full(grown - len(self._lengths), -1, dtype=np.int64)])
            self._starts = np.concatenate([self._starts, np.zeros(grown - len(self._starts), dtype=np.int64)])

    def _store(self, codes: np.ndarray, ids: list[list[int]]) -> None:
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        self._lengths[codes] = lengths
        self._starts[codes] = self._size + np.cumsum(lengths) - lengths
        self._chunks.append(np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=int(lengths.sum())))
        self._size += int(lengths.sum())
        self._pool = None

    def tokenize(self, codes: np.ndarray) -> None:
        """Tokenise the texts of ``codes`` not tokenised yet, in one batched call."""
        self._grow(len(self._texts))
        new = np.unique(codes[self._lengths[codes] < 0])
        if len(new):
            texts = [self._texts[code] for code in new]
            ids = self.tokenizer(
                texts,
                add_special_tokens=False,
                split_special_tokens=True,
                verbose=False,  # long texts are expected here; they are cut when the rows are built
                return_attention_mask=False,
                return_token_type_ids=False,
            )["input_ids"]
            self._store(new, ids)

    def lengths(self, codes: np.ndarray) -> np.ndarray:
        """Token counts of ``codes``: (n,) int64, -1 for a text not tokenised."""
        self._grow(len(self._texts))
        return self._lengths[codes]

    def starts(self, codes: np.ndarray) -> np.ndarray:
        """Where the ids of tokenised ``codes`` start in :attr:`pool`: (n,) int64."""
        return self._starts[codes]

    @property
    def pool(self) -> np.ndarray:
        """Every tokenised text's ids, one after another: (tokens,) int64."""
        if self._pool is None:
            self._pool = np.concatenate(self._chunks) if self._chunks else np.zeros(0, dtype=np.int64)
            self._chunks = [self._pool]
        return self._pool

    def ids(self, codes: np.ndarray) -> list[list[int]]:
        """The ids of ``codes`` as lists."""
        pool, starts, lengths = self.pool, self.starts(codes), self.lengths(codes)
        return [pool[s : s + n].tolist() for s, n in zip(starts.tolist(), lengths.tolist())]


def gather(source: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``source[starts[0] : starts[0] + lengths[0]]``, then the next piece, ... as one array, without a loop."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    offsets = np.cumsum(lengths) - lengths
    return source[np.repeat(np.asarray(starts, dtype=np.int64) - offsets, lengths) + np.arange(total)]


def distinct_contexts(contexts: Sequence[Sequence[str]]) -> tuple[np.ndarray, list[tuple[str, ...]]]:
    """For each context the index of its distinct list of turns (n,) int64, and those lists in order of first
    appearance."""
    index: dict[tuple[str, ...], int] = {}
    owner = np.fromiter(
        (index.setdefault(tuple(turns), len(index)) for turns in contexts), dtype=np.int64, count=len(contexts)
    )
    return owner, list(index)


def within(lengths: np.ndarray) -> np.ndarray:
    """For groups of ``lengths`` laid one after another, each member's index in its group: 0, 1, ..., 0, 1, ..."""
    lengths = np.asarray(lengths, dtype=np.int64)
    return np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)


@dataclass(frozen=True)
class ContextTails:
    """The ids of each context's turns that were read: context ``c``'s are ``ids[offsets[c]:offsets[c + 1]]``.
    ``lengths[c]`` is the context's whole length where every turn was read, and more than its budget where reading
    stopped early, so that ``lengths[c] > b`` tells whether a cut to ``b <= budget`` tokens drops any of it."""

    ids: np.ndarray
    offsets: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


def context_tails(
    text_ids: TextIds, contexts: Sequence[Sequence[str]], separator: int, budget: np.ndarray | int
) -> ContextTails:
    """The ids of each context (turns oldest first, stripped, blank ones dropped, joined by the ``separator``
    code's ids), read from the newest turn back until it holds more than ``budget`` (per context, or one for
    all) tokens or its turns run out. The turns before that are not tokenised."""
    counts = np.fromiter(map(len, contexts), dtype=np.int64, count=len(contexts))
    budget = np.broadcast_to(np.asarray(budget, dtype=np.int64), counts.shape)
    newest_first = text_ids.register([turn.strip() for turns in contexts for turn in reversed(turns)])
    first = np.cumsum(counts) - counts
    separator_length = int(text_ids.lengths(np.array([separator]))[0])
    used = np.zeros(len(counts), dtype=np.int64)
    nonempty = np.zeros(len(counts), dtype=bool)
    read = np.zeros(len(counts), dtype=np.int64)
    open_ = np.flatnonzero(counts > 0)
    turn = 0
    while len(open_):
        codes = newest_first[first[open_] + turn]
        text_ids.tokenize(codes)
        lengths = text_ids.lengths(codes)
        used[open_] += lengths + separator_length * ((lengths > 0) & nonempty[open_])
        nonempty[open_] |= lengths > 0
        turn += 1
        read[open_] = turn
        open_ = open_[(used[open_] <= budget[open_]) & (turn < counts[open_])]
    # The turns read, oldest first, non-blank, with the separator before every one but a context's first.
    owner = np.repeat(np.arange(len(counts)), read)
    codes = newest_first[np.repeat(first + read - 1, read) - within(read)]
    kept = text_ids.lengths(codes) > 0
    owner, codes = owner[kept], codes[kept]
    opens = np.ones(len(owner), dtype=bool)
    opens[1:] = owner[1:] != owner[:-1]
    pieces = np.empty(2 * len(codes), dtype=np.int64)
    pieces[0::2], pieces[1::2] = separator, codes
    present = np.ones(len(pieces), dtype=bool)
    present[0::2] = ~opens
    pieces, owner = pieces[present], np.repeat(owner, 2)[present]
    lengths = text_ids.lengths(pieces)
    ids = gather(text_ids.pool, text_ids.starts(pieces), lengths)
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, weights=lengths, minlength=len(counts)).astype(np.int64), out=offsets[1:])
    return ContextTails(ids, offsets)


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

    def _padded(self, values: np.ndarray, index: np.ndarray, fill: int, offsets: np.ndarray) -> np.ndarray:
        starts, lengths = offsets[index], offsets[index + 1] - offsets[index]
        width = max(int(lengths.max()), 1)
        column = np.arange(width)
        inside = column[None, :] < lengths[:, None]
        taken = values[np.minimum(starts[:, None] + column[None, :], max(len(values) - 1, 0))] if len(values) else 0
        return np.where(inside, taken, fill)

    def batch(self, index: Sequence[int] | np.ndarray | None = None, pad_token_id: int = 0) -> dict[str, torch.Tensor]:
        """Model inputs of rows ``index`` (all by default), right-padded to the longest, in one gather each.

        Rows of one pair give ``input_ids`` and a (b, t) ``attention_mask``. Shared-context rows give
        ``input_ids``, ``position_ids`` and ``segments`` (b, t) (-1 on padding; the attention mask is built from
        them where the model runs: :func:`density_metric.features.segment_mask`), ``feature_index`` and
        ``feature_valid`` (b, k) for rows with fewer candidates than the most.
        """
        index = np.arange(len(self)) if index is None else np.asarray(index, dtype=np.int64)
        ids = torch.from_numpy(self._padded(self.ids, index, pad_token_id, self.offsets))
        if self.segments is None:
            mask = torch.from_numpy(self._padded(np.ones_like(self.ids), index, 0, self.offsets))
            return {"input_ids": ids, "attention_mask": mask}
        features = self._padded(self.features, index, -1, self.feature_offsets)
        return {
            "input_ids": ids,
            "position_ids": torch.from_numpy(self._padded(self.positions, index, 0, self.offsets)),
            "segments": torch.from_numpy(self._padded(self.segments, index, -1, self.offsets)),
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
    close), ``context_length`` (n,) per context. The one row assembly of the package:
    :meth:`density_metric.pair_format.PairFormat.pack` and the training's token store (train/token_store.py) build
    their rows with it."""
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
