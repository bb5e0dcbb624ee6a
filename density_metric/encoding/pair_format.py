"""How a (context, response) pair becomes encoder input: the one place that knows it.

:class:`PairFormat` says *what* an encoder row holds; :mod:`density_metric.encoding.packing` builds the rows
(training, Gaussian fitting and scoring alike: :mod:`density_metric.encoding` says which call to use), and a
checkpoint stores its :class:`PairFormat` in ``density_config.json``, so a pair is always read the same way. For a
BERT tokenizer the input is::

    [CLS] turn_1 SEP_T turn_2 SEP_T ... turn_k [SEP] response [SEP]

``SEP_T`` is the turn separator (``[SEP]`` for the bundled default; a trained checkpoint
may add its own special token such as ``[SEPT]``). The special tokens around the two
segments come from the tokenizer's own pair template, so another backbone gets its own
(RoBERTa: ``<s> context </s></s> response </s>``). Segment ids are all 0, as in the
authors' code.

Truncation keeps the most recent context: the response keeps its first
``max_response_length`` tokens, then the context is cut from the *left* so that the
whole input holds at most ``max_length`` tokens.

Two layouts (``layout``):

- ``paper`` (the published method, the default): one row per pair, as above; the feature
  g(c, r) is the final-layer state of the first token.
- ``shared-context``: one row per context, read once, then one block per candidate::

      [CLS] context [SEP] | [CLS] response_1 [SEP] | [CLS] response_2 [SEP] | ...

  Context tokens attend to the context only; a block's tokens attend to the context and to
  their own block, never to another candidate; positions restart after the context for every
  block, so each candidate sits where it would sit alone, and a row of k candidates gives each
  the feature a row of that candidate alone gives. The feature is the final-layer state of the
  block's first token (``pooling="feature-token"``), or the mean of the final-layer states of the
  block's tokens, its specials included (``pooling="mean"``, which needs the whole last layer).
  The context keeps at most ``max_length - max_response_length - 4`` of its most recent tokens
  whatever the candidates' lengths (so truncation cannot depend on the other candidates), and
  position ids never exceed ``max_length - 1``. The tokenizer's pair
  template has no notion of several candidates, so this layout is built here from its special
  tokens: its leading ones open the context and every block, its middle ones close the context
  and its trailing ones close every block.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from .length_options import MAX_LENGTH
from .text_ids import TextIds, context_tails, input_ids

# The fewest special tokens a pair template adds ([CLS] a [SEP] b [SEP]); the response cap
# must leave room for them. The tokenizer's real count is checked when encoding.
MIN_SPECIAL_TOKENS = 3
LAYOUTS = ("paper", "shared-context")
POOLINGS = ("feature-token", "mean")


def is_blank(text: str, tokenizer=None) -> bool:
    """Whether the tokenizer reduces ``text`` to no token at all: whitespace, but also zero-width, format
    and control characters, or a lone combining accent under an uncased tokenizer.

    Such a turn is dropped from a context as an empty one is, and such a reply is encoded as an empty one.
    Text with a letter, digit, punctuation mark or symbol (other than U+FFFD, which BERT's normalizer
    removes) always gives a token, so it is decided without the tokenizer: for ordinary text, at its first
    such character. The rest is given to ``tokenizer``; without one, it counts as blank.
    """
    for char in text:
        if char != "\ufffd" and unicodedata.category(char)[0] in "LNPS":
            return False
    return tokenizer is None or not input_ids(tokenizer, text, add_special_tokens=False, split_special_tokens=True)


def join_context(turns: Sequence[str], turn_separator: str, tokenizer=None) -> str:
    """Join context turns, oldest first, with the turn separator (spaces around it); blank turns
    (:func:`is_blank`, with ``tokenizer`` if given) are dropped. For reading: the encoder joins the turns' ids
    with the separator's id (:func:`~density_metric.encoding.packing.pack`), never this text, in which a turn's
    ``[SEP]`` would be read as the separator."""
    return f" {turn_separator} ".join(turn.strip() for turn in turns if not is_blank(turn, tokenizer))


def special_token_layout(tokenizer) -> tuple[list[int], list[int], list[int]]:
    """The special token ids the tokenizer's pair template puts (before, between, after) the two segments.

    Read off the tokenizer itself, by encoding a pair of one-token texts with and without
    special tokens: transformers 5 tokenizers no longer offer ``build_inputs_with_special_tokens``.
    """
    first = input_ids(tokenizer, "a", add_special_tokens=False, split_special_tokens=False)
    second = input_ids(tokenizer, "b", add_special_tokens=False, split_special_tokens=False)
    pair = input_ids(tokenizer, "a", "b", split_special_tokens=False)
    start = _find(pair, first, 0)
    middle_end = _find(pair, second, start + len(first)) if start >= 0 else -1
    if start < 0 or middle_end < 0:
        raise ValueError(f"cannot read the pair template of {type(tokenizer).__name__}: {pair}")
    layout = pair[:start], pair[start + len(first) : middle_end], pair[middle_end + len(second) :]
    expected = tokenizer.num_special_tokens_to_add(pair=True)
    if sum(map(len, layout)) != expected:
        raise ValueError(
            f"{type(tokenizer).__name__} adds {expected} special tokens to a pair, but its template shows {layout}"
        )
    return layout


def _find(ids: list[int], part: list[int], start: int) -> int:
    for index in range(start, len(ids) - len(part) + 1):
        if ids[index : index + len(part)] == part:
            return index
    return -1


@dataclass(frozen=True)
class PairFormat:
    """Everything that decides how a pair is encoded; stored in ``density_config.json``.

    Attributes:
        turn_separator: token put between context turns.
        max_length: most tokens per pair, special tokens included.
        max_response_length: most response tokens; the rest of the response is dropped.
        layout: ``"paper"`` (one row per pair, the published method) or ``"shared-context"``
            (one row per context with a block per candidate; see the module docstring).
        pooling: ``"feature-token"`` (g is the final-layer state of the feature token: [CLS], or a
            block's first token) or ``"mean"`` (the mean over a block's tokens; shared-context only).
    """

    turn_separator: str = "[SEP]"
    max_length: int = 256
    max_response_length: int = 128
    layout: str = "paper"
    pooling: str = "feature-token"

    def __post_init__(self):
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {self.layout!r}")
        if self.pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {self.pooling!r}")
        if self.pooling == "mean" and self.layout != "shared-context":
            raise ValueError(f"pooling 'mean' needs layout 'shared-context', got layout {self.layout!r}")
        if not isinstance(self.turn_separator, str) or not self.turn_separator.strip():
            raise ValueError(f"turn_separator must be a non-empty string, got {self.turn_separator!r}")
        for name in ("max_length", "max_response_length"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{name} must be an integer, got {value!r}")
        if not 4 <= self.max_length <= MAX_LENGTH:
            raise ValueError(f"max_length must be in [4, {MAX_LENGTH}], got {self.max_length}")
        if not 1 <= self.max_response_length <= self.max_length - MIN_SPECIAL_TOKENS:
            raise ValueError(
                f"max_response_length={self.max_response_length} must be in [1, max_length - {MIN_SPECIAL_TOKENS}] "
                f"with max_length={self.max_length}"
            )

    FIELDS = ("turn_separator", "max_length", "max_response_length", "layout", "pooling")
    # Fields a stored format may leave out, and what they were before they existed.
    OPTIONAL = {"layout": "paper", "pooling": "feature-token"}

    @classmethod
    def from_dict(cls, data: dict) -> PairFormat:
        """The pair format from a mapping that holds (at least) its fields."""
        missing = [name for name in cls.FIELDS if name not in data and name not in cls.OPTIONAL]
        if missing:
            raise ValueError(f"missing field(s) {', '.join(map(repr, missing))}")
        return cls(**{name: data.get(name, cls.OPTIONAL.get(name)) for name in cls.FIELDS})

    @property
    def needs_whole_last_layer(self) -> bool:
        """Whether the feature reads every token of the last layer (mean pooling), so that the
        last layer cannot be computed for the feature tokens alone."""
        return self.pooling == "mean"

    def to_dict(self) -> dict:
        return asdict(self)

    def special_tokens(self, tokenizer) -> int:
        """Special tokens a pair takes in this layout: the pair template's, and in the shared-context layout
        its leading ones once more (they open the context and the block)."""
        before, between, after = special_token_layout(tokenizer)
        return len(before) * (2 if self.layout == "shared-context" else 1) + len(between) + len(after)

    def knows_separator(self, tokenizer) -> bool:
        """Whether the turn separator is one token of ``tokenizer``'s vocabulary."""
        return tokenizer.convert_tokens_to_ids(self.turn_separator) not in (None, tokenizer.unk_token_id)

    def budget_beside(
        self, specials: tuple[list[int], list[int], list[int]], kept_response: int, layout: str | None = None
    ) -> int:
        """Most context tokens a pair keeps beside ``kept_response`` reply tokens, given the pair template's
        ``specials`` (:func:`special_token_layout`): in the ``paper`` layout what the reply leaves of
        ``max_length``; in ``shared-context`` a fixed budget whatever the reply (the module docstring).
        ``layout``: this format's by default."""
        before, between, after = specials
        if (layout or self.layout) == "paper":
            return self.max_length - len(before) - len(between) - len(after) - kept_response
        return self.max_length - self.max_response_length - 2 * len(before) - len(between) - len(after)

    def context_budget(self, tokenizer) -> int:
        """Most context tokens every pair keeps, whatever its reply: in the ``paper`` layout beside a reply of
        ``max_response_length`` tokens (a shorter reply leaves more), in ``shared-context`` the fixed budget."""
        return self.budget_beside(special_token_layout(tokenizer), self.max_response_length)

    def keep_lines(self, tokenizer, contexts: Sequence[Sequence[str]], lines: Sequence[int]) -> list[list[str]]:
        """The contexts with their grounding lines read whole where they fit: context ``i``'s first ``lines[i]``
        turns are grounding lines (persona or knowledge lines), and where the context is longer than
        :meth:`context_budget`, its oldest dialogue turns after the lines are dropped, never the last one, until
        it fits. Plain left truncation (the encoder's) would cut the lines first, since they come first.

        A context without lines, or one that fits, comes back as it is (a new list); one whose lines and last
        turn alone do not fit keeps them, and the encoder's left cut then takes the excess off the lines.
        Lengths are counted per turn (blank turns none, one separator between kept turns), as the encoder
        reads them (:class:`~density_metric.encoding.text_ids.TextIds`); each distinct turn is tokenised once.
        """
        if len(contexts) != len(lines):
            raise ValueError(f"{len(contexts)} contexts but {len(lines)} line counts")
        budget = self.context_budget(tokenizer)
        text_ids = TextIds(tokenizer)
        separator = len(self.separator_ids(tokenizer))
        long = [i for i, count in enumerate(lines) if 0 < count < len(contexts[i])]
        codes = text_ids.encode([turn.strip() for i in long for turn in contexts[i]])
        sizes = iter(text_ids.lengths(codes).tolist())
        out = [list(context) for context in contexts]
        for i in long:
            counts = [next(sizes) for _ in contexts[i]]
            kept = [n for n in counts if n]
            total = sum(kept) + separator * max(len(kept) - 1, 0)
            start = lines[i]
            while total > budget and start < len(counts) - 1:
                if counts[start]:
                    total -= counts[start] + separator
                start += 1
            out[i] = out[i][: lines[i]] + out[i][start:]
        return out

    def context_lengths(self, tokenizer, contexts: Sequence[Sequence[str]]) -> np.ndarray:
        """Tokens of each context as the encoder joins them (turns and separators, no template), at most
        ``max_length``: (n,) int64. Turns further back than ``max_length`` tokens are not tokenised."""
        text_ids = TextIds(tokenizer)
        separator = text_ids.constant(self.separator_ids(tokenizer))
        return np.minimum(context_tails(text_ids, contexts, separator, self.max_length).lengths, self.max_length)

    def separator_ids(self, tokenizer) -> list[int]:
        """The ids put between two context turns: the turn separator read as the token it names."""
        return input_ids(tokenizer, self.turn_separator, add_special_tokens=False, split_special_tokens=False)
