"""The options that ``score`` and ``compare`` share: the table's fields and the scorer's (checkpoint, device, dtype,
batch and lengths), with their help, the argparse type of the count options, and the scorer they describe."""

from __future__ import annotations

import argparse

from ..errors import positive_int

CONTEXT_FIELD_HELP = "column with the context: a list of turns, oldest first, or a string (default: context)"
RESPONSE_FIELD_HELP = "column with the response to score, a string (default: response)"
DEVICE_HELP = "auto (default: CUDA if present, else CPU), cpu, cuda or cuda:N"
CHECKPOINT_HELP = "bundled (the default), a local directory or a Hub repo id"
DTYPE_HELP = (
    "auto (default): float32 on CPU, where a score does not depend on its batch; bfloat16 on CUDA. float16 needs CUDA"
)
BATCH_SIZE_HELP = "most pairs per forward pass (default: 64 on CPU; on CUDA the token budget alone)"
MAX_TOKENS_HELP = "most padded tokens per forward pass (default: 1024 on CPU, 16384 on CUDA)"
MAX_LENGTH_HELP = (
    "most tokens per pair: from 4 (5 in the shared-context layout) to the encoder's positions "
    "(default: the checkpoint's)"
)
MAX_RESPONSE_LENGTH_HELP = (
    "most reply tokens read (default: the checkpoint's, 64 for the bundled one; a longer reply is flagged "
    "truncated_reply); the context keeps its budget, up to what the encoder's positions allow (320 for the bundled one)"
)


def argparse_positive_int(text: str) -> int:
    """argparse type of the count options (--batch-size, --max-tokens, --resamples, --trials)."""
    try:
        return positive_int(int(text), "")
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None


def add_field_options(parser: argparse.ArgumentParser) -> None:
    """--context-field and --response-field: the table's columns to score."""
    parser.add_argument("--context-field", default="context", help=CONTEXT_FIELD_HELP)
    parser.add_argument("--response-field", default="response", help=RESPONSE_FIELD_HELP)


def add_scorer_options(parser: argparse.ArgumentParser, max_length: bool) -> None:
    """The DensityScorer's options, in this order: --checkpoint, --revision, --device, --dtype, --batch-size,
    --max-tokens, --max-length (where ``max_length``) and --max-response-length."""
    parser.add_argument("--checkpoint", default=None, help=CHECKPOINT_HELP)
    parser.add_argument("--revision", default=None, help="Hub revision; a commit hash pins the scores")
    parser.add_argument("--device", default="auto", help=DEVICE_HELP)
    parser.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"), help=DTYPE_HELP)
    parser.add_argument("--batch-size", type=argparse_positive_int, default=None, help=BATCH_SIZE_HELP)
    parser.add_argument("--max-tokens", type=argparse_positive_int, default=None, help=MAX_TOKENS_HELP)
    if max_length:
        parser.add_argument("--max-length", type=int, default=None, help=MAX_LENGTH_HELP)
    parser.add_argument("--max-response-length", type=int, default=None, metavar="N", help=MAX_RESPONSE_LENGTH_HELP)


def scorer_of(args: argparse.Namespace, device: str, max_length: int | None = None):
    """The DensityScorer that the scorer options (:func:`add_scorer_options`) describe, on ``device``; its errors
    (ValueError, OSError) are the caller's to report."""
    from ..scoring import DensityScorer

    return DensityScorer(
        args.checkpoint,
        args.revision,
        device=device,
        dtype=args.dtype,
        batch_size=args.batch_size,
        max_tokens=args.max_tokens,
        max_length=max_length,
        max_response_length=args.max_response_length,
        progress=False,
    )
