"""The ``score`` command: its options, and its run (the input read and checked, the scorer made, under torchrun on
every rank, the rows scored, and the output written whole by rank 0, with the mean and its interval)."""

from __future__ import annotations

import argparse
import functools
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from ..comparison.significance import DEFAULT_RESAMPLES, DEFAULT_SEED, bootstrap_blocks, percentile_ci, resampled_means
from ..errors import fail, read_or_fail
from ..io.outputs import same_file
from ..io.tables import (
    FORMATS,
    STDIN,
    Table,
    arrow_table,
    check_writable,
    output_columns,
    raise_for_bad_rows,
    raise_for_missing_column,
    read_lines,
    read_table,
    score_rows,
    source_name,
    table_format,
    text_pairs,
    unify_contexts,
    write_records,
)
from ..row_flags import FLOORED, warn_flags
from .options import add_field_options, add_scorer_options, scorer_of

logger = logging.getLogger("density_metric")


def add_score_command(commands) -> None:
    """Register ``score`` on the command line's subparsers."""
    score = commands.add_parser("score", help="score a JSONL, CSV or parquet file of (context, response) rows")
    score.add_argument(
        "input",
        type=Path,
        nargs="?",
        metavar="INPUT",
        help="the JSONL, CSV or parquet file of (context, response) rows to score; - reads standard input",
    )
    score.add_argument(
        "--contexts",
        type=Path,
        metavar="FILE",
        help="instead of INPUT: plain text, one context a line (its turns split on --context-sep), with --responses",
    )
    score.add_argument(
        "--responses", type=Path, metavar="FILE", help="plain text, one response a line, line-aligned with --contexts"
    )
    score.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        help="the scored table, never the input; replaced only once complete (an earlier file stays as it was if "
        "the run fails); - writes to standard output",
    )
    score.add_argument(
        "--format",
        choices=sorted(set(FORMATS.values())),
        help="input format (default: from the extension; jsonl for standard input)",
    )
    score.add_argument(
        "--output-format",
        choices=sorted(set(FORMATS.values())),
        help="default: from the extension; jsonl for standard output",
    )
    add_field_options(score)
    score.add_argument(
        "--context-sep",
        default=None,
        metavar="SEP",
        help="split string contexts into turns on SEP, e.g. ' __eou__ ' (no default: a string is one turn)",
    )
    score.add_argument(
        "--output-field",
        default="density",
        help="adds FIELD, FIELD_calibrated, FIELD_flags, FIELD_signature (and FIELD_rating for a checkpoint with a "
        "rating head), none of them an input column unless it holds an earlier score (default: density)",
    )
    score.add_argument(
        "--on-error",
        choices=("raise", "skip"),
        default="raise",
        help="a bad row stops the run (raise), or is kept unscored and reported (skip)",
    )
    add_scorer_options(score, max_length=True)
    progress = score.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress", action="store_true", help="always show a progress bar (default: from 1,024 pairs on)"
    )
    progress.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    score.set_defaults(func=score_command)


def score_command(args: argparse.Namespace) -> int:
    try:
        return _score(args)
    except KeyboardInterrupt:
        # write_records removes its temporary file; an earlier output is left as it was.
        print("interrupted; no output written", file=sys.stderr)
        return 130


def _score(args: argparse.Namespace) -> int:
    sources = _score_sources(args)
    _check_output(args, sources)
    to_stdout = str(args.output) == STDIN
    out_fmt = (
        (args.output_format or "jsonl") if to_stdout else _format(args.output, args.output_format, "--output-format")
    )
    name = source_name(args.input) if args.input is not None else f"{args.contexts} and {args.responses}"
    table = _read_input(args, sources)
    _check_rows(args, name, table)
    records = [row.record for row in table.rows]
    rank, world, device = _start_ranks(args.device)
    scorer = _scorer(args, device)
    columns = _checked_columns(args, table, records, scorer, out_fmt, write=rank == 0)
    _score_rows(args, table, scorer, rank, world)
    if rank != 0:
        return 0
    _write_and_report(args, name, table, out_fmt, records, columns, scorer)
    return 0


def _format(path: Path, given: str | None, flag: str) -> str:
    """The table format of ``path``, or an ``error:`` exit that names the option to give it with."""
    try:
        return table_format(path, given)
    except ValueError as err:
        fail(f"{err}; use {flag} jsonl|csv|parquet")


def _score_sources(args: argparse.Namespace) -> list[Path]:
    """The files score reads: INPUT, or --contexts and --responses; an ``error:`` exit for any other mix."""
    texts = [path for path in (args.contexts, args.responses) if path is not None]
    if args.input is not None and texts:
        fail("give INPUT or --contexts and --responses, not both")
    if args.input is not None:
        return [args.input]
    if len(texts) < 2:
        fail("give INPUT (a table), or --contexts FILE and --responses FILE (plain text, one row a line)")
    if args.format:
        fail("--format is INPUT's; --contexts and --responses are plain text, one row a line")
    return texts


def _check_output(args: argparse.Namespace, sources: Sequence[Path]) -> None:
    """Refuse an empty --output-field, and an OUTPUT that is an input file: before anything is read."""
    if not args.output_field.strip():
        fail(f"--output-field {args.output_field!r} is empty; name the score column, e.g. --output-field density")
    for source in sources:
        if STDIN not in (str(args.output), str(source)) and same_file(args.output, source):
            fail(f"-o {args.output}: is the input file {source}; write the scores to a new file")


def _check_output_columns(args: argparse.Namespace, input_columns: Sequence[str], added: Sequence[str]) -> None:
    """Refuse an --output-field whose columns (``added``) an input column has, unless they hold an earlier score
    of that field (the input has FIELD and FIELD_signature, as score writes them), which a new run replaces."""
    field = args.output_field
    earlier_score = {field, f"{field}_signature"} <= set(input_columns)
    for column in added:
        if column in input_columns and (not earlier_score or column in (args.context_field, args.response_field)):
            fail(f"--output-field {field}: would replace the input column {column!r}; choose another name")


def _read_input(args: argparse.Namespace, sources: Sequence[Path]) -> Table:
    """INPUT's table (standard input for ``-``), or the table of --contexts and --responses; an ``error:`` exit
    naming the file for what cannot be read."""
    fields = {
        "context_field": args.context_field,
        "response_field": args.response_field,
        "context_sep": args.context_sep,
    }
    if args.input is None:
        contexts, responses = (read_or_fail(path, read_lines) for path in sources)
        try:
            return text_pairs(sources[0], contexts, sources[1], responses, **fields)
        except ValueError as err:
            fail(str(err))
    if str(args.input) == STDIN:
        try:
            return read_table(STDIN, args.format, **fields)
        except ValueError as err:
            fail(str(err))
    # The format is asked for after read_or_fail's directory and existence checks.
    return read_or_fail(args.input, lambda path: read_table(path, _format(path, args.format, "--format"), **fields))


def _check_rows(args: argparse.Namespace, name: str, table: Table) -> None:
    """``error:`` exits for a table with nothing to score: empty, without the context or response column, a bad
    row under ``--on-error raise``, or no good row under ``skip``."""
    rows = table.rows
    if not rows and (args.input is None or not table.columns):  # 0 bytes: most often a step before wrote nothing
        fail(f"{name}: empty input (0 bytes), no rows to score; nothing was written")
    for field, flag in ((args.context_field, "--context-field"), (args.response_field, "--response-field")):
        try:  # a wrong field name, not rows to skip one by one
            raise_for_missing_column(name, table, field)
        except ValueError as err:
            fail(f"{err}; name the column with {flag}")
    if args.on_error == "raise":
        try:
            raise_for_bad_rows(name, rows)
        except ValueError as err:
            fail(f"{err}; --on-error skip scores the others and marks these")
    bad = [row for row in rows if row.error]
    if rows and len(bad) == len(rows):  # --on-error skip: a run that could score nothing does not succeed
        fail(f"{name}: none of its {len(rows)} rows can be scored (the first, {bad[0].where}: {bad[0].error})")


def _start_ranks(device: str) -> tuple[int, int, str]:
    """This process's rank, the world size and its device: under torchrun (WORLD_SIZE > 1) one process group, on
    NCCL with one CUDA device a rank (LOCAL_RANK) where CUDA is asked for and present, else gloo."""
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if world > 1:
        import torch
        import torch.distributed as dist

        use_cuda = torch.cuda.is_available() and device in ("auto", "cuda")
        dist.init_process_group("nccl" if use_cuda else "gloo")
        if use_cuda:
            device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
    return rank, world, device


def _scorer(args: argparse.Namespace, device: str):
    """The DensityScorer of the options, or an ``error:`` exit naming what is wrong with them."""
    try:
        return scorer_of(args, device, args.max_length)
    except (ValueError, OSError) as err:  # CheckpointError is a ValueError; OSError: Hub and file errors
        fail(str(err))


def _checked_columns(
    args: argparse.Namespace, table: Table, records: list[dict[str, Any]], scorer, out_fmt: str, write: bool
) -> list[str]:
    """The output's columns, refused where they would replace an input column; where this rank ``write``s, the
    output checked writable with them before any scoring time is spent."""
    error_column, rating_column = args.on_error == "skip", scorer.checkpoint.rating is not None
    columns = output_columns(table.columns, args.output_field, error_column=error_column, rating_column=rating_column)
    _check_output_columns(args, table.columns, output_columns((), args.output_field, error_column, rating_column))
    if write:  # after the options' checks (the scorer's), so that a bad option leaves no trace on disk
        if out_fmt == "parquet":
            unify_contexts(table.rows, args.context_field)
        try:  # before any scoring time is spent
            if str(args.output) != STDIN:
                check_writable(args.output, out_fmt, records, columns)
            elif out_fmt == "parquet":
                arrow_table(records, columns)  # check_writable's own check of the values, for standard output
        except ValueError as err:
            fail(str(err))
    return columns


def _score_rows(args: argparse.Namespace, table: Table, scorer, rank: int, world: int) -> None:
    """Score the table's rows in place (:func:`score_distributed`: this rank's share of each chunk), with a
    progress bar on rank 0; the process group, if any, is closed after."""
    from ..distributed import is_distributed, score_distributed
    from ..encoding.features import PROGRESS_MIN_PAIRS

    rows = table.rows
    good = sum(1 for row in rows if not row.error)
    # The Python API's rule (DensityScorer(progress=None)): a bar from PROGRESS_MIN_PAIRS pairs on.
    show = args.progress or (not args.no_progress and good >= PROGRESS_MIN_PAIRS)

    def track(chunks):
        # The pairs this rank scores (under torchrun, score_distributed's strided share of each chunk); every
        # batch advances the bar (Encoder.features), not every chunk of thousands of rows.
        total = sum(len(chunk[rank::world]) for chunk in chunks)
        with tqdm(total=total, desc="DEnsity", unit="pair", disable=not show or rank != 0) as bar:
            scorer.progress = bar
            yield from chunks

    score_rows(
        rows,
        functools.partial(score_distributed, scorer, warn=False),  # one warning for the run, below
        field=args.output_field,
        track=track,
        error_column=args.on_error == "skip",
        rating_column=scorer.checkpoint.rating is not None,
    )
    if is_distributed():
        import torch.distributed as dist

        dist.destroy_process_group()


def _write_and_report(args, name: str, table: Table, out_fmt: str, records, columns, scorer) -> None:
    """Write the output, then log the skipped rows, the flags' warning and the run, and print the mean line."""
    rows = table.rows
    bad = [row for row in rows if row.error]
    good = [row.record for row in rows if not row.error]
    try:
        _write(args.output, out_fmt, records, columns)
    except (ValueError, OSError) as err:
        fail(f"cannot write {args.output}: {err}")
    for row in bad:
        logger.warning("skipped %s, %s: %s", name, row.where, row.error)
    field = args.output_field
    warn_flags(record[f"{field}_flags"] for record in good)
    to_stdout = str(args.output) == STDIN
    written = "<stdout>" if to_stdout else args.output
    logger.info(
        "scored %d of %d rows (%d skipped) -> %s | %s", len(good), len(rows), len(bad), written, scorer.signature
    )
    if good:  # after the output is written: nothing here can cost it
        scores = np.array([record[field] for record in good], dtype=np.float64)
        line = system_score(field, scores, [record[f"{field}_flags"] for record in good])
    else:  # a table of columns without rows (a CSV header): its output is the header, and no mean is made up
        line = f"{field}: no mean: {name} has columns but no rows (0 rows scored)"
    print(line, file=sys.stderr if to_stdout else sys.stdout)


def _write(output: Path, fmt: str, records: list[dict[str, Any]], columns: list[str]) -> None:
    """``write_records``; for ``-o -``, the same bytes to standard output, once the whole table is written."""
    if str(output) != STDIN:
        write_records(output, fmt, records, columns=columns)
        return
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"scored.{fmt}"
        write_records(path, fmt, records, columns=columns)
        with open(path, "rb") as handle:
            shutil.copyfileobj(handle, sys.stdout.buffer)
    sys.stdout.buffer.flush()


def system_score(field: str, scores: np.ndarray, flags: Sequence[Sequence[str]]) -> str:
    """One line: the mean of the rows' scores, (n,) float64, and its 95 % bootstrap percentile interval, by the
    bootstrap of ``compare`` (:mod:`density_metric.comparison.significance`: its resamples and seed). Floored rows count."""
    lower, upper = percentile_ci(resampled_means(scores[:, None], bootstrap_blocks(len(scores))))[0]
    floored = sum(1 for row in flags if FLOORED.intersection(row))
    return (
        f"{field}: mean {scores.mean():.4f}, 95% CI [{lower:.4f}, {upper:.4f}] over n={len(scores)} rows "
        f"(bootstrap percentile interval, {DEFAULT_RESAMPLES} resamples, seed {DEFAULT_SEED}; "
        f"{floored} floored rows included)"
    )
