"""Scoring several systems' replies to the same contexts: grouped by context against each system alone.

    nice python -m benchmarks.grouping --contexts 1000 --json benchmarks/grouping_cpu.json

Five reply sets ("systems") answer the same DailyDialog test contexts: the gold reply, another
context's gold reply, the previous turn (an echo), a fixed generic reply, and the first half of
the gold reply. ``alone`` scores each system with its own ``score()`` call (its contexts are
distinct, so nothing is shared); ``grouped`` scores all of them in one ``score()`` call, which
reads each context once per row of its replies with a shared-context checkpoint
(``Encoder.encode``). Reported: encoder tokens read (every row's tokens, padding not
counted), seconds (best of ``--repeats`` interleaved rounds, one process, CPU float32), and the
largest relative score difference between the two.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from density_metric import DensityScorer
from density_metric.encoding.device import machine_description
from density_metric.io.outputs import write_json
from density_train.data.corpora import load_dailydialog, response_pairs

from .command_line import check_checkpoint, check_counts, check_dailydialog, check_output
from .speed import timed_interleaved


def reply_systems(contexts: list[list[str]], responses: list[str], seed: int = 0) -> dict[str, list[str]]:
    """Five reply sets for the same contexts (see the module docstring)."""
    rng = np.random.default_rng(seed)
    n = len(responses)
    other = (np.arange(n) + rng.integers(1, n, size=n)) % n if n > 1 else np.zeros(n, dtype=int)
    return {
        "gold": list(responses),
        "random other reply": [responses[i] for i in other],
        "previous turn": [context[-1] if context else "" for context in contexts],
        "generic": ["I don't know."] * n,
        "first half of gold": [" ".join(r.split()[: max(1, len(r.split()) // 2)]) for r in responses],
    }


def tokens_read(scorer: DensityScorer, contexts, responses) -> int:
    """Encoder tokens that ``score()`` reads for these pairs (padding not counted)."""
    return int(scorer.encoder.encode(contexts, responses, batch_size=scorer.batch_size).rows.lengths.sum())


def grouping_report(scorer: DensityScorer, contexts, systems: dict[str, list[str]], repeats: int = 1) -> dict:
    """Tokens and seconds of scoring ``systems`` (name: replies to ``contexts``) grouped and alone."""
    names = list(systems)
    all_contexts = [c for _ in names for c in contexts]
    all_responses = [r for name in names for r in systems[name]]
    outputs, seconds = timed_interleaved(
        {
            "alone": lambda: np.concatenate([scorer.score(contexts, systems[name]).scores for name in names]),
            "grouped": lambda: scorer.score(all_contexts, all_responses).scores,
        },
        repeats,
    )
    alone_tokens = sum(tokens_read(scorer, contexts, systems[name]) for name in names)
    grouped_tokens = tokens_read(scorer, all_contexts, all_responses)
    difference = np.abs(outputs["grouped"] - outputs["alone"]) / np.maximum(np.abs(outputs["alone"]), 1e-12)
    return {
        "layout": scorer.encoder.pair_format.layout,
        "systems": names,
        "contexts": len(contexts),
        "pairs": len(all_responses),
        "alone_tokens": alone_tokens,
        "grouped_tokens": grouped_tokens,
        "token_ratio": alone_tokens / grouped_tokens,
        "alone_seconds": seconds["alone"],
        "grouped_seconds": seconds["grouped"],
        "speed_up": seconds["alone"] / seconds["grouped"],
        "max_rel_score_diff": float(difference.max()),
        "system_means": {
            name: float(np.mean(outputs["grouped"][i * len(contexts) : (i + 1) * len(contexts)]))
            for i, name in enumerate(names)
        },
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.grouping")
    parser.add_argument(
        "--data-dir",
        default="../shared/data",
        help="folder with dailydialog/ (default: ../shared/data, the checkout's neighbour)",
    )
    parser.add_argument("--contexts", type=int, default=1000, help="DailyDialog test contexts (random, seed 0)")
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=1, help="rounds over both methods; each one's best run counts")
    parser.add_argument("--json", default=None, help="also write the results here")
    args = parser.parse_args(argv)
    check_counts(parser, args, "--contexts", "--batch-size", "--repeats")
    check_output(parser, "--json", args.json)
    dailydialog = check_dailydialog(parser, args.data_dir, "test")
    check_checkpoint(parser, args.checkpoint)

    contexts, responses = response_pairs(load_dailydialog(dailydialog, "test"))
    pick = np.random.default_rng(0).choice(len(responses), size=min(args.contexts, len(responses)), replace=False)
    contexts, responses = [contexts[i] for i in pick], [responses[i] for i in pick]
    scorer = DensityScorer(args.checkpoint, device="cpu", dtype="float32", batch_size=args.batch_size, progress=False)
    scorer.score(contexts[:8], responses[:8])  # warm-up
    report = {
        "command": "python -m benchmarks.grouping " + " ".join(argv or __import__("sys").argv[1:]),
        "machine": machine_description("cpu"),
        "signature": scorer.signature,
        **grouping_report(scorer, contexts, reply_systems(contexts, responses), args.repeats),
    }
    print(json.dumps(report, indent=2))
    if args.json:
        write_json(args.json, report)


if __name__ == "__main__":
    main()
