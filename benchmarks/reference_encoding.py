"""The host path of the scorer before issue 61, kept as the baseline of ``benchmarks.host_pipeline`` and as the
independent reference of ``tests/density_metric/encoding/test_packing.py``.

It joins each context's turns into one string and tokenises the whole string per pair (so a turn is tokenised
again in every later context of its dialogue, and special-token text in a turn or reply is read as the special
token), and it builds every batch with per-row Python loops and a (b, 1, t, t) mask made on the host. Nothing in
the package calls it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from density_metric.encoding.packing import PackedRow
from density_metric.encoding.pair_format import PairFormat, is_blank, join_context, special_token_layout


def _ids(tokenizer, texts: list[str]) -> list[list[int]]:
    return tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"] if texts else []


def _replies(tokenizer, responses: Sequence[str]) -> list[list[int]]:
    return _ids(tokenizer, ["" if is_blank(r, tokenizer) else r.strip() for r in responses])


def encode_rows(
    pair_format: PairFormat, tokenizer, contexts: Sequence[Sequence[str]], candidates: Sequence[Sequence[str]]
) -> list[PackedRow]:
    """Encoder rows of each context with its candidates, as ``PairFormat.encode_rows`` built them before."""
    specials = before, between, after = special_token_layout(tokenizer)
    joined = [join_context(turns, pair_format.turn_separator, tokenizer) for turns in contexts]
    if pair_format.layout == "paper":
        rows = []
        flat = [
            (context, response) for context, group in zip(_ids(tokenizer, joined), candidates) for response in group
        ]
        replies = _replies(tokenizer, [response for _, response in flat])
        for (context, _), response in zip(flat, replies):
            kept_response = response[: pair_format.max_response_length]
            budget = pair_format.budget_beside(specials, len(kept_response), "paper")
            kept_context = context[max(len(context) - budget, 0) :]
            rows.append(PackedRow([*before, *kept_context, *between, *kept_response, *after], None, None, [0]))
        return rows
    budget = pair_format.budget_beside(specials, pair_format.max_response_length)
    replies = iter(_replies(tokenizer, [response for group in candidates for response in group]))
    rows = []
    for context, group in zip(_ids(tokenizer, joined), candidates):
        head = [*before, *context[max(len(context) - budget, 0) :], *between]
        ids, positions, segments, features = list(head), list(range(len(head))), [0] * len(head), []
        for block, _ in enumerate(group, start=1):
            tokens = [*before, *next(replies)[: pair_format.max_response_length], *after]
            features.append(len(ids))
            ids += tokens
            positions += range(len(head), len(head) + len(tokens))
            segments += [block] * len(tokens)
        rows.append(PackedRow(ids, positions, segments, features))
    return rows


def rows_to_batch(rows: Sequence[PackedRow], pad_token_id: int) -> dict[str, torch.Tensor]:
    """Model inputs of encoder rows as they were built before: per-row loops, the shared-context layout's boolean
    (b, 1, t, t) attention mask made on the host."""
    longest = max(len(row.ids) for row in rows)
    input_ids = torch.full((len(rows), longest), pad_token_id, dtype=torch.long)
    attention_mask = torch.zeros((len(rows), longest), dtype=torch.long)
    for i, row in enumerate(rows):
        input_ids[i, : len(row.ids)] = torch.tensor(row.ids, dtype=torch.long)
        attention_mask[i, : len(row.ids)] = 1
    if all(row.segments is None for row in rows):
        return {"input_ids": input_ids, "attention_mask": attention_mask}
    batch, length = input_ids.shape
    positions = torch.zeros((batch, length), dtype=torch.long)
    segments = torch.full((batch, length), -1, dtype=torch.long)
    most = max(len(row.features) for row in rows)
    feature_index = torch.zeros((batch, most), dtype=torch.long)
    feature_valid = torch.zeros((batch, most), dtype=torch.bool)
    for i, row in enumerate(rows):
        positions[i, : len(row.ids)] = torch.tensor(row.positions, dtype=torch.long)
        segments[i, : len(row.ids)] = torch.tensor(row.segments, dtype=torch.long)
        feature_index[i, : len(row.features)] = torch.tensor(row.features, dtype=torch.long)
        feature_valid[i, : len(row.features)] = True
    real = segments >= 0
    mask = (
        real[:, :, None]
        & real[:, None, :]
        & ((segments == 0)[:, None, :] | (segments[:, :, None] == segments[:, None, :]))
    )
    mask |= torch.eye(length, dtype=torch.bool)[None] & ~real[:, :, None]
    return {
        "input_ids": input_ids,
        "attention_mask": mask[:, None],
        "position_ids": positions,
        "feature_index": feature_index,
        "feature_valid": feature_valid,
    }
