"""Command line: ``python -m density_metric score INPUT -o OUTPUT`` and ``python -m density_metric install``.

Arguments, the torchrun start-up (one process group, one device per rank) and messages live here;
tables are read, checked, scored and written by :mod:`density_metric.tables`, whose ValueErrors
become ``error: ...`` exits.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
from pathlib import Path

from tqdm.auto import tqdm

from .tables import FORMATS, raise_for_bad_rows, read_rows, score_rows, table_format, write_records

logger = logging.getLogger("density_metric")


def _format(path: Path, given: str | None, flag: str) -> str:
    """The table format of ``path``, or an ``error:`` exit that names the option to give it with."""
    try:
        return table_format(path, given)
    except ValueError as err:
        raise SystemExit(f"error: {err}; use {flag} jsonl|csv|parquet") from None


def score_command(args: argparse.Namespace) -> int:
    in_fmt = _format(args.input, args.format, "--format")
    out_fmt = _format(args.output, args.output_format, "--output-format")
    try:
        rows = read_rows(
            args.input,
            in_fmt,
            context_field=args.context_field,
            response_field=args.response_field,
            context_sep=args.context_sep,
        )
    except ValueError as err:
        raise SystemExit(f"error: {err}") from None
    if args.on_error == "raise":
        try:
            raise_for_bad_rows(args.input, rows)
        except ValueError as err:
            raise SystemExit(f"error: {err}; --on-error skip scores the others and marks these") from None
    bad = [row for row in rows if row.error]

    from .distributed import is_distributed, score_distributed
    from .scoring import DensityScorer

    rank = int(os.environ.get("RANK", 0))
    device = args.device
    if int(os.environ.get("WORLD_SIZE", 1)) > 1:
        import torch
        import torch.distributed as dist

        use_cuda = torch.cuda.is_available() and device in ("auto", "cuda")
        dist.init_process_group("nccl" if use_cuda else "gloo")
        if use_cuda:
            device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
    scorer = DensityScorer(
        args.checkpoint,
        args.revision,
        device=device,
        dtype=args.dtype,
        batch_size=args.batch_size,
        max_length=args.max_length,
        progress=False,
    )

    def track(chunks):
        with tqdm(
            total=sum(map(len, chunks)), desc="DEnsity", unit="pair", disable=args.no_progress or rank != 0
        ) as bar:
            for chunk in chunks:
                yield chunk
                bar.update(len(chunk))

    score_rows(
        rows,
        functools.partial(score_distributed, scorer),
        field=args.output_field,
        track=track,
        error_column=args.on_error == "skip",
    )
    if is_distributed():
        import torch.distributed as dist

        dist.destroy_process_group()
    if rank != 0:
        return 0
    good = len(rows) - len(bad)
    write_records(args.output, out_fmt, [row.record for row in rows])
    for row in bad:
        logger.warning("skipped %s, %s: %s", args.input, row.where, row.error)
    logger.info(
        "scored %d of %d rows (%d skipped) -> %s | %s", good, len(rows), len(bad), args.output, scorer.signature
    )
    return 0


def install_command(args: argparse.Namespace) -> int:
    from .install import install_evaluate_module

    print(f"evaluate module installed: {install_evaluate_module()}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m density_metric", description="DEnsity dialogue response scores")
    commands = parser.add_subparsers(dest="command", required=True)

    score = commands.add_parser("score", help="score a JSONL, CSV or parquet file of (context, response) rows")
    score.add_argument("input", type=Path)
    score.add_argument("-o", "--output", type=Path, required=True)
    score.add_argument(
        "--format", choices=sorted(set(FORMATS.values())), help="input format (default: from the extension)"
    )
    score.add_argument("--output-format", choices=sorted(set(FORMATS.values())), help="default: from the extension")
    score.add_argument("--context-field", default="context", help="column with the context (list of turns or string)")
    score.add_argument("--response-field", default="response")
    score.add_argument(
        "--context-sep",
        default=None,
        help="split string contexts into turns on this separator (default: a string is one turn)",
    )
    score.add_argument("--output-field", default="density", help="adds FIELD and FIELD_calibrated (default: density)")
    score.add_argument(
        "--on-error",
        choices=("raise", "skip"),
        default="raise",
        help="a bad row stops the run (raise), or is kept unscored and reported (skip)",
    )
    score.add_argument("--checkpoint", default=None, help="local directory or Hub repo id (default: bundled)")
    score.add_argument("--revision", default=None, help="Hub revision; a commit hash pins the scores")
    score.add_argument("--device", default="auto")
    score.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"))
    score.add_argument("--batch-size", type=int, default=64)
    score.add_argument("--max-length", type=int, default=None)
    score.add_argument("--no-progress", action="store_true")
    score.set_defaults(func=score_command)

    install = commands.add_parser(
        "install", help="install the evaluate module so evaluate.load('density') works offline"
    )
    install.set_defaults(func=install_command)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    return args.func(args)
