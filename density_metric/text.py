"""Turn (context turns, response) into encoder input: the one formatting function.

Training, Gaussian fitting and scoring all call :func:`encode_pairs`, so a pair is
always read the same way::

    [CLS] turn_1 SEP_T turn_2 SEP_T ... turn_k [SEP] response [SEP]

``SEP_T`` is the checkpoint's turn separator (``[SEP]`` for the bundled default; a
trained checkpoint may add its own special token such as ``[SEPT]``). Segment ids are
all 0, as in the authors' code.

Truncation keeps the most recent context: the response keeps its first
``max_response_length`` tokens, then the context is cut from the *left* so that the
whole input holds at most ``max_length`` tokens.
"""

from __future__ import annotations

from typing import Sequence

# [CLS], [SEP] after the context, [SEP] after the response.
NUM_SPECIAL_TOKENS = 3


def join_context(turns: Sequence[str], turn_separator: str) -> str:
    """Join context turns, oldest first, with the turn separator (spaces around it)."""
    return f" {turn_separator} ".join(turn.strip() for turn in turns if turn.strip())


def encode_pairs(
    tokenizer,
    contexts: Sequence[Sequence[str]],
    responses: Sequence[str],
    *,
    turn_separator: str,
    max_length: int,
    max_response_length: int,
) -> list[list[int]]:
    """Token ids of ``[CLS] context [SEP] response [SEP]`` for every pair.

    Args:
        tokenizer: a fast BERT-style tokenizer (``cls_token_id`` and ``sep_token_id`` set).
        contexts: n lists of turns, oldest first. An empty list is an empty context.
        responses: n strings.
        turn_separator: token put between context turns.
        max_length: most tokens per pair, special tokens included.
        max_response_length: most response tokens; the rest of the response is dropped.

    Returns:
        n lists of token ids, each of length <= ``max_length``.
    """
    if max_response_length > max_length - NUM_SPECIAL_TOKENS:
        raise ValueError(
            f"max_response_length={max_response_length} leaves no room in max_length={max_length}"
        )
    # verbose=False: contexts longer than the model are expected here; they are cut below.
    # Both sides are tokenised in one batched (Rust) call each; only list slicing is left.
    context_ids = tokenizer(
        [join_context(turns, turn_separator) for turns in contexts], add_special_tokens=False, verbose=False
    )["input_ids"]
    response_ids = tokenizer(
        [response.strip() for response in responses], add_special_tokens=False, verbose=False
    )["input_ids"]
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    budget = max_length - NUM_SPECIAL_TOKENS
    encoded = []
    for ctx, resp in zip(context_ids, response_ids):
        resp = resp[:max_response_length]
        ctx = ctx[max(len(ctx) - (budget - len(resp)), 0) :]
        encoded.append([cls, *ctx, sep, *resp, sep])
    return encoded
