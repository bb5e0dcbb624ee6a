"""How much of the grounding lines a checkpoint reads: contexts are cut from the left to the pair format's context
budget, and the persona or fact lines come first, so they are the first to go.

    PYTHONPATH=. python results/experiments/grounded-corpora/fact_budget.py [--checkpoint default] [--data ../shared/data]

For the USR sets (fact lines first, as the benchmarks put them) and the grounded training corpora's held-out golds,
the share of the lines' tokens left after the cut, with the bundled checkpoint's pair format (shared-context: a
fixed context budget of max_length - max_response_length - the specials, whatever the reply). Prints a markdown
table; reads no scores.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from density_train.data.grounded_corpora import load_personachat, load_topical_chat
from density_train.data.judgments import facts_of
from transformers import AutoTokenizer

from density_metric.checkpoint.sources import resolve_checkpoint
from density_metric.encoding.pair_format import join_context


def kept_shares(pair_format, tokenizer, rows: list[tuple[list[str], list[str]]]) -> np.ndarray:
    """Per (lines, turns) row, the share of the lines' tokens inside the context budget (the cut keeps the end)."""
    budget = pair_format.context_budget(tokenizer)
    shares = []
    for lines, turns in rows:
        whole, rest = (
            len(
                tokenizer(join_context(part, pair_format.turn_separator, tokenizer), add_special_tokens=False)[
                    "input_ids"
                ]
            )
            for part in (lines + turns, turns)
        )
        line_tokens = whole - rest  # the lines and their separators
        shares.append(min(max(budget - rest, 0), line_tokens) / line_tokens)
    return np.asarray(shares)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", default="default")
    parser.add_argument("--data", default="../shared/data", type=Path)
    args = parser.parse_args()
    checkpoint = resolve_checkpoint(args.checkpoint)
    pair_format, tokenizer = checkpoint.config.pair_format, AutoTokenizer.from_pretrained(checkpoint.encoder_path)
    sets = {}
    for name in ("convai2_usr", "topicalchat_usr"):
        rows = [json.loads(line) for line in (args.data / "usr" / f"{name}.normalized.jsonl").open()]
        sets[name] = [(facts_of(row), list(row["context"])) for row in rows if facts_of(row)]
    held_out = (("personachat held out", load_personachat, "personachat_train_subset"),)
    held_out += (("topical_chat held out", load_topical_chat, "topical_chat_valid"),)
    for name, load, folder in held_out:
        rows = []
        for row in load(args.data / folder, "validation"):
            for i in row["responses"]:
                if row["prefix"]:
                    rows.append((list(row["prefix"]), list(row["turns"][:i])))
        sets[name] = rows
    print("| set | rows with lines | share of line tokens kept (mean) | rows keeping none | rows keeping all |")
    print("| --- | --- | --- | --- | --- |")
    for name, rows in sets.items():
        shares = kept_shares(pair_format, tokenizer, rows)
        print(
            f"| {name} | {len(rows)} | {shares.mean():.1%} | {(shares == 0).mean():.1%} | {(shares == 1).mean():.1%} |"
        )


if __name__ == "__main__":
    main()
