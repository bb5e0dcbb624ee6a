"""Token ids of distinct texts, each tokenised once, and of contexts read from their newest turn back.

The bottom of :mod:`density_metric.encoding`: nothing here knows a pair template or a row.

- :class:`TextIds` tokenises each distinct turn and reply once, with special-token text read as text
  (``split_special_tokens=True``: a reply ``[SEP]`` is the word pieces ``[ sep ]``, never the separator). A turn
  recurs in every later context of its dialogue, so scoring a whole dialogue tokenises each turn once.
- :func:`context_tails` reads each distinct context from its newest turn back, one turn per round for all
  contexts together, and stops a context once it holds more tokens than any of its pairs can keep: the turns
  the encoder will not read are never tokenised. The turns are joined with the separator's *ids*, never as text.
- :func:`reply_ids`: each reply's ids as the encoder reads them, before the reply's cap.

Whitespace pre-tokenisation (BERT's WordPiece) tokenises a joined string and its turns alike, so for text
without special-token strings the ids are those of tokenising the joined context; ``tests/density_metric/encoding/test_packing.py``
checks that against the former path (``benchmarks/reference_encoding.py``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

# A transformers fast tokenizer sets its Rust tokenizer's options (truncation, padding, whether special-token text is
# read as the token) at every call, then encodes: two threads sharing one tokenizer could each encode with the
# other's options (a demo serving two requests read its turn separator "[SEP]" as the text "[ sep ]" and scored
# -10.47 for -8.62). Every call of this package holds this lock from the options to the ids.
_TOKENIZER_LOCK = threading.Lock()


def input_ids(tokenizer, text, pair=None, *, split_special_tokens: bool, **options) -> list:
    """``tokenizer(text, pair, split_special_tokens=..., **options)["input_ids"]``, safe beside other threads
    that use the same tokenizer through this function: a text's ids (a list of ints), or each text's for a list."""
    with _TOKENIZER_LOCK:
        texts = (text,) if pair is None else (text, pair)
        return tokenizer(*texts, split_special_tokens=split_special_tokens, **options)["input_ids"]


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
            ids = input_ids(
                self.tokenizer,
                texts,
                add_special_tokens=False,
                split_special_tokens=True,
                verbose=False,  # long texts are expected here; they are cut when the rows are built
                return_attention_mask=False,
                return_token_type_ids=False,
            )
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


def reply_ids(tokenizer, responses: Sequence[str]) -> list[list[int]]:
    """Each reply's token ids as the encoder reads them, before the reply's cap: ``[]`` for a blank reply."""
    text_ids = TextIds(tokenizer)
    return text_ids.ids(text_ids.encode([response.strip() for response in responses]))
