"""The scoring options that change a checkpoint's lengths, ``max_length`` and ``max_response_length``
(``DensityScorer``, the evaluate module's load options, ``--max-length`` and ``--max-response-length``), checked
against the encoder's positions.

A checkpoint stores its :class:`~density_metric.encoding.pair_format.PairFormat`; these options give the scorer another one:

- ``max_length`` alone: most tokens per pair; the reply then keeps at most half of it, and at most the
  checkpoint's own cap.
- ``max_response_length`` alone: the reply's cap, with the context's budget kept, so that a reply no longer than
  either cap is encoded token for token as before. In the ``shared-context`` layout the context keeps
  ``max_length - max_response_length - special tokens`` whatever the reply, so ``max_length`` moves with the cap,
  and the cap goes up to what the encoder's positions leave beside that context (the bundled model: 320 of 512). In
  the ``paper`` layout a shorter reply leaves its room to the context, so ``max_length`` stays and the cap goes up
  to it, less the special tokens.
- both: taken as given; the context keeps what the two leave.
"""

from __future__ import annotations

import numbers
from dataclasses import replace

MAX_LENGTH = 8192  # the most tokens a PairFormat allows, whatever the encoder


def _integer(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer number of tokens, got {value!r}")
    return int(value)


def with_max_length(pair_format, max_length: int | None, special_tokens: int, limit: int | None):
    """``pair_format`` with another ``max_length``; the response keeps at most half of it, and at most what the
    layout's ``special_tokens`` leave. ``limit``: the encoder's positions, if known.

    Raises:
        ValueError: ``max_length`` is not an integer, or is outside ``[special_tokens + 1, limit]``; the message
            gives both ends.
    """
    if max_length is None or max_length == pair_format.max_length:
        return pair_format
    max_length = _integer(max_length, "max_length")
    smallest = max(special_tokens + 1, 2)  # one response token (max_length // 2 of them at most)
    if not smallest <= max_length <= (limit or max_length):
        largest = f"{limit}]" if limit else "...)"
        positions = f"; the encoder has {limit} positions" if limit else ""
        raise ValueError(
            f"max_length must be in [{smallest}, {largest} for this checkpoint, got {max_length}: the "
            f"{pair_format.layout} layout's special tokens take {special_tokens}, and a response needs one more"
            f"{positions}"
        )
    response_length = min(pair_format.max_response_length, max_length // 2, max_length - special_tokens)
    return replace(pair_format, max_length=max_length, max_response_length=response_length)


def with_lengths(
    pair_format,
    max_length: int | None = None,
    max_response_length: int | None = None,
    special_tokens: int = 3,
    limit: int | None = None,
):
    """``pair_format`` (a :class:`~density_metric.encoding.pair_format.PairFormat`) with the options given (None: the format's own), as the module docstring says.

    Args:
        special_tokens: the special tokens a pair takes in the format's layout (``PairFormat.special_tokens``).
        limit: the encoder's positions (``max_position_embeddings``), if known.

    Raises:
        ValueError: one line naming the option, its range for this checkpoint and why (:func:`with_max_length`'s,
            or ``max_response_length must be in [1, 320] for this checkpoint, got 400: ...``).
    """
    fmt = with_max_length(pair_format, max_length, special_tokens, limit)
    if max_response_length is None:
        return fmt
    cap = _integer(max_response_length, "max_response_length")
    new_length = fmt.max_length
    largest = fmt.max_length - special_tokens
    why = f"a pair holds max_length={fmt.max_length} tokens, {special_tokens} of them special tokens"
    if max_length is None and fmt.layout == "shared-context":
        context = fmt.max_length - fmt.max_response_length - special_tokens
        largest = (limit or MAX_LENGTH) - context - special_tokens
        new_length = context + special_tokens + cap
        positions = f"the encoder has {limit} positions" if limit else f"a pair holds at most {MAX_LENGTH} tokens"
        why = f"{positions}; beside the reply, the context keeps {context} and the special tokens take {special_tokens}"
    elif max_length is None and limit and fmt.max_length < limit:
        why += f" (max_length can rise to the encoder's {limit} positions)"
    if not 1 <= cap <= largest:
        raise ValueError(f"max_response_length must be in [1, {largest}] for this checkpoint, got {cap}: {why}")
    return replace(fmt, max_length=new_length, max_response_length=cap)
