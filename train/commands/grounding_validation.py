"""``python -m train grounding-validation``: the grounding signal of one checkpoint on ConvAI2 gold replies
(:mod:`density_train.evaluation.grounding_validation`), printed as JSON and written with ``--out``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from density_metric.errors import fail
from density_metric.io.outputs import write_text

from ..arguments import check_at_least, check_out
from ..evaluation.grounding_validation import (
    DEFAULT_DISTRACTORS,
    DEFAULT_FILE,
    DEFAULT_PAIRS,
    DEFAULT_SEED,
    GroundingSet,
    evaluate_scores,
)


def add_grounding_validation_arguments(parser) -> None:
    """The flags of ``python -m train grounding-validation``."""
    parser.description = (
        "Grounding validation of a checkpoint on ConvAI2 gold replies (density_train.evaluation.grounding_validation)."
    )
    parser.add_argument("--checkpoint", default="density_metric/default", help="checkpoint folder, 'default' or Hub id")
    parser.add_argument("--data", default=DEFAULT_FILE, help=f"ConvAI2 validation file (default: {DEFAULT_FILE})")
    parser.add_argument("--n", type=int, default=DEFAULT_PAIRS, help=f"seeded gold replies (default {DEFAULT_PAIRS})")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"default {DEFAULT_SEED}")
    parser.add_argument(
        "--distractors",
        type=int,
        default=DEFAULT_DISTRACTORS,
        help=f"replies of other dialogues beside each gold for Recall@1 (default {DEFAULT_DISTRACTORS})",
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument(
        "--keep-lines",
        action="store_true",
        help="read the persona lines whole where they fit, dropping old turns instead (a --keep-lines run's cut)",
    )
    parser.add_argument("--out", type=Path, help="also write the JSON report here")


def grounding_validation_command(args) -> None:
    """Score the seeded ConvAI2 set with ``--checkpoint`` and print (and ``--out``: write) its signals."""
    try:
        check_at_least("--n", args.n, 1)
        check_at_least("--distractors", args.distractors, 0)
        if args.out:
            check_out(args.out, file=True)
    except ValueError as err:
        fail(str(err))
    try:
        data = GroundingSet.load(args.data, args.n, args.seed, args.distractors)
    except OSError as err:
        fail(f"--data {args.data}: {err.strerror or err}")
    except ValueError as err:
        fail(f"--data {args.data}: {err}")
    from density_metric.scoring import DensityScorer

    try:
        scorer = DensityScorer(args.checkpoint, device=args.device, dtype=args.dtype, batch_size=args.batch_size)
    except (OSError, ValueError) as err:
        fail(f"--checkpoint {args.checkpoint}: {err}")
    if args.keep_lines:
        data = data.with_lines_kept(scorer.encoder.tokenizer, scorer.encoder.pair_format)
    metrics = evaluate_scores(lambda contexts, responses: -scorer.distances(contexts, responses), data)
    report = {
        "checkpoint": args.checkpoint,
        "signature": scorer.signature,
        "data": str(args.data),
        "n": len(data),
        "seed": args.seed,
        "distractors": args.distractors,
        "keep_lines": args.keep_lines,
        "golds_with_persona_words": float(np.mean(data.persona > 0)),
        "command": "python -m train " + " ".join(args.argv),
        **metrics,
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        write_text(args.out, text + "\n")
