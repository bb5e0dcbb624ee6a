"""Command line: ``python -m density_metric score INPUT -o OUTPUT`` (``-`` for standard input or output; or
``--contexts FILE --responses FILE``, line-aligned text), ``compare A B [C ...]`` (its run:
:mod:`density_metric.comparison.command`; its tables and statistics: :mod:`density_metric.comparison`) and ``install``.

Arguments, the torchrun start-up (one process group, one device per rank) and messages live here;
tables are read, checked, scored and written by :mod:`density_metric.tables`. A problem with the
input, the output path or the options (a ValueError of the library included) is one
``error: ...`` line on stderr and exit code 2. Ctrl-C is ``interrupted; no output written`` and
exit code 130.

What is on disk: OUTPUT is written whole or not at all (``tables.write_records``): to a temporary
file beside it, renamed over it when complete. Every option (the checkpoint, the device, the dtype
for that device, the lengths) and the output path are checked before any scoring, and an earlier
OUTPUT is never removed up front: a run that fails or is stopped leaves it as it was. No output replaces an input:
OUTPUT is never an input file, an --output-field column never an input column (but an earlier score of that field),
and ``compare --json`` never a system file or any existing file but an earlier report.
"""

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

from .comparison.command import compare_command
from .comparison.result import TESTS
from .comparison.significance import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    DEFAULT_TRIALS,
    bootstrap_blocks,
    percentile_ci,
    resampled_means,
)
from .errors import fail, positive_int, read_or_fail
from .outputs import same_file
from .row_flags import FLOORED, warn_flags
from .signature import SCORE_DEFINING_WORDS
from .tables import (
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

logger = logging.getLogger("density_metric")

CONTEXT_FIELD_HELP = "column with the context: a list of turns, oldest first, or a string (default: context)"
RESPONSE_FIELD_HELP = "column with the response to score, a string (default: response)"
DEVICE_HELP = "auto (default: CUDA if present, else CPU), cpu, cuda or cuda:N"
CHECKPOINT_HELP = "bundled (the default), a local directory or a Hub repo id"
DTYPE_HELP = (
    "auto (default): float32 on CPU, where a score does not depend on its batch; bfloat16 on CUDA. float16 needs CUDA"
)


BATCH_SIZE_HELP = "most pairs per forward pass (default: 64 on CPU; on CUDA the token budget alone)"
MAX_TOKENS_HELP = "most padded tokens per forward pass (default: 1024 on CPU, 16384 on CUDA)"
MAX_RESPONSE_LENGTH_HELP = (
    "most reply tokens read (default: the checkpoint's, 64 for the bundled one; a longer reply is flagged "
    "truncated_reply); the context keeps its budget, up to what the encoder's positions allow (320 for the bundled one)"
)


def _format(path: Path, given: str | None, flag: str) -> str:
    """The table format of ``path``, or an ``error:`` exit that names the option to give it with."""
    try:
        return table_format(path, given)
    except ValueError as err:
        fail(f"{err}; use {flag} jsonl|csv|parquet")


def check_device(device: str) -> None:
    """An ``error:`` exit, before any file is touched, for a --device that this torch cannot score on here:
    scoring runs on CPU or CUDA (mps, xla or meta may parse as torch devices, and fail later with a traceback)."""
    from .encoding.device import resolve_device

    try:
        kind = resolve_device(device).type
    except ValueError as err:
        fail(f"--device {device!r}: {err}")
    if kind not in ("cpu", "cuda"):
        fail(f"--device {device!r}: density-metric scores on cpu or cuda, not {kind}; use auto, cpu, cuda or cuda:N")


def _positive_int(text: str) -> int:
    """argparse type of --batch-size."""
    try:
        return positive_int(int(text), "")
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None


def score_command(args: argparse.Namespace) -> int:
    try:
        return _score(args)
    except KeyboardInterrupt:
        # write_records removes its temporary file; an earlier output is left as it was.
        print("interrupted; no output written", file=sys.stderr)
        return 130


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


def _score(args: argparse.Namespace) -> int:
    sources = _score_sources(args)
    _check_output(args, sources)
    to_stdout = str(args.output) == STDIN
    out_fmt = (
        (args.output_format or "jsonl") if to_stdout else _format(args.output, args.output_format, "--output-format")
    )
    name = source_name(args.input) if args.input is not None else f"{args.contexts} and {args.responses}"
    table = _read_input(args, sources)
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
    error_column = args.on_error == "skip"
    records = [row.record for row in rows]

    from .distributed import is_distributed, score_distributed
    from .encoding.features import PROGRESS_MIN_PAIRS
    from .scoring import DensityScorer

    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    device = args.device
    if world > 1:
        import torch
        import torch.distributed as dist

        use_cuda = torch.cuda.is_available() and device in ("auto", "cuda")
        dist.init_process_group("nccl" if use_cuda else "gloo")
        if use_cuda:
            device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
    try:
        scorer = DensityScorer(
            args.checkpoint,
            args.revision,
            device=device,
            dtype=args.dtype,
            batch_size=args.batch_size,
            max_tokens=args.max_tokens,
            max_length=args.max_length,
            max_response_length=args.max_response_length,
            progress=False,
        )
    except (ValueError, OSError) as err:  # CheckpointError is a ValueError; OSError: Hub and file errors
        fail(str(err))
    rating_column = scorer.checkpoint.rating is not None
    columns = output_columns(table.columns, args.output_field, error_column=error_column, rating_column=rating_column)
    _check_output_columns(args, table.columns, output_columns((), args.output_field, error_column, rating_column))
    if rank == 0:  # after the options' checks (the scorer's), so that a bad option leaves no trace on disk
        if out_fmt == "parquet":
            unify_contexts(rows, args.context_field)
        try:  # before any scoring time is spent
            if not to_stdout:
                check_writable(args.output, out_fmt, records, columns)
            elif out_fmt == "parquet":
                arrow_table(records, columns)  # check_writable's own check of the values, for standard output
        except ValueError as err:
            fail(str(err))

    # The Python API's rule (DensityScorer(progress=None)): a bar from PROGRESS_MIN_PAIRS pairs on.
    show = args.progress or (not args.no_progress and len(rows) - len(bad) >= PROGRESS_MIN_PAIRS)

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
        error_column=error_column,
        rating_column=rating_column,
    )
    if is_distributed():
        import torch.distributed as dist

        dist.destroy_process_group()
    if rank != 0:
        return 0
    good = [row.record for row in rows if not row.error]
    try:
        _write(args.output, out_fmt, records, columns)
    except (ValueError, OSError) as err:
        fail(f"cannot write {args.output}: {err}")
    for row in bad:
        logger.warning("skipped %s, %s: %s", name, row.where, row.error)
    field = args.output_field
    warn_flags(record[f"{field}_flags"] for record in good)
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
    return 0


# ---------------------------------------------------------------------- compare


def add_compare_command(commands, positive_int) -> None:
    """Register ``compare`` on the command line's subparsers (``positive_int``: cli's argparse type)."""
    parser = commands.add_parser(
        "compare",
        help="which system is better, and is it significant? (paired bootstrap and approximate randomization)",
        description="Compare systems that answer the same contexts in the same order, one table per system.",
    )
    parser.add_argument("systems", nargs="+", type=Path, metavar="SYSTEM", help="a JSONL, CSV or parquet table")
    parser.add_argument("--names", default=None, help="comma-separated system names (default: the file stems)")
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        metavar="OUT",
        help="also write the results as JSON (never over a system file, nor over a file that is no earlier report)",
    )
    parser.add_argument(
        "--baseline",
        default=None,
        metavar="NAME",
        help="test each system against this one only (Holm-corrected), not every pair (default: every pair)",
    )
    parser.add_argument(
        "--score-field",
        default="density",
        help="tables with this column (all or none) are not scored again; FIELD_calibrated is used too, and "
        f"FIELD_signature must agree on {SCORE_DEFINING_WORDS} in all of them (default: density)",
    )
    parser.add_argument(
        "--test",
        choices=sorted(TESTS),
        default="ar",
        help="the test that decides: ar (approximate randomization, default) or bs (paired bootstrap)",
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"default: {DEFAULT_SEED}")
    parser.add_argument("--resamples", type=positive_int, default=DEFAULT_RESAMPLES, help="bootstrap resamples")
    parser.add_argument("--trials", type=positive_int, default=DEFAULT_TRIALS, help="approximate randomization trials")
    parser.add_argument("--format", choices=sorted(set(FORMATS.values())), help="default: from each extension")
    parser.add_argument("--context-field", default="context", help=CONTEXT_FIELD_HELP)
    parser.add_argument("--response-field", default="response", help=RESPONSE_FIELD_HELP)
    parser.add_argument("--context-sep", default=None, metavar="SEP", help="split string contexts into turns on SEP")
    parser.add_argument("--checkpoint", default=None, help=CHECKPOINT_HELP)
    parser.add_argument("--revision", default=None, help="Hub revision; a commit hash pins the scores")
    parser.add_argument("--device", default="auto", help=DEVICE_HELP)
    parser.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"), help=DTYPE_HELP)
    parser.add_argument("--batch-size", type=positive_int, default=None, help=BATCH_SIZE_HELP)
    parser.add_argument("--max-tokens", type=positive_int, default=None, help=MAX_TOKENS_HELP)
    parser.add_argument("--max-response-length", type=int, default=None, metavar="N", help=MAX_RESPONSE_LENGTH_HELP)
    parser.set_defaults(func=compare_command)


def install_command(args: argparse.Namespace) -> int:
    from .install import install_evaluate_module

    print(f"evaluate module installed: {install_evaluate_module()}")
    return 0


def program_name(argv0: str | None = None) -> str:
    """The command as the user typed it, for usage lines: ``density-metric`` (the console script), or
    ``python -m density_metric`` (argparse's own default would say ``__main__.py``)."""
    name = Path(sys.argv[0] if argv0 is None else argv0).name
    return "python -m density_metric" if name in ("", "-c", "__main__.py") else name


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; ``prog`` names the command in usage lines (default: :func:`program_name`)."""
    parser = argparse.ArgumentParser(prog=prog or program_name(), description="DEnsity dialogue response scores")
    commands = parser.add_subparsers(dest="command", required=True)

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
    score.add_argument("--context-field", default="context", help=CONTEXT_FIELD_HELP)
    score.add_argument("--response-field", default="response", help=RESPONSE_FIELD_HELP)
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
    score.add_argument("--checkpoint", default=None, help=CHECKPOINT_HELP)
    score.add_argument("--revision", default=None, help="Hub revision; a commit hash pins the scores")
    score.add_argument("--device", default="auto", help=DEVICE_HELP)
    score.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"), help=DTYPE_HELP)
    score.add_argument("--batch-size", type=_positive_int, default=None, help=BATCH_SIZE_HELP)
    score.add_argument("--max-tokens", type=_positive_int, default=None, help=MAX_TOKENS_HELP)
    score.add_argument(
        "--max-length",
        type=int,
        default=None,
        help="most tokens per pair: from 4 (5 in the shared-context layout) to the encoder's positions "
        "(default: the checkpoint's)",
    )
    score.add_argument("--max-response-length", type=int, default=None, metavar="N", help=MAX_RESPONSE_LENGTH_HELP)
    progress = score.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress", action="store_true", help="always show a progress bar (default: from 1,024 pairs on)"
    )
    progress.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    score.set_defaults(func=score_command)

    add_compare_command(commands, _positive_int)

    install = commands.add_parser(
        "install", help="install the evaluate module so evaluate.load('density') works offline"
    )
    install.set_defaults(func=install_command)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "context_sep", None) == "":
        fail("--context-sep must not be empty")
    if getattr(args, "device", None) is not None:
        check_device(args.device)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    return args.func(args)
