"""The ``compare`` command: its options, and its run: the system tables read and checked, scored where they have no
scores, compared (:mod:`density_metric.comparison.systems`), the report printed and, with ``--json``, written whole
or not at all. A problem is one ``error: ...`` line and exit code 2. The tables and statistics are
:mod:`density_metric.comparison`'s.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
from collections.abc import Sequence
from pathlib import Path

from ..comparison.result import TESTS
from ..comparison.significance import DEFAULT_RESAMPLES, DEFAULT_SEED, DEFAULT_TRIALS
from ..comparison.systems import compare_tables, read_system
from ..errors import fail, read_or_fail
from ..io.outputs import check_output_path, same_file, write_json
from ..io.tables import FORMATS
from ..signature import SCORE_DEFINING_WORDS
from .options import add_field_options, add_scorer_options, argparse_positive_int, scorer_of

logger = logging.getLogger("density_metric")

REPORT_MAX_BYTES = 64 << 20  # a compare --json report is far smaller: a larger file is no report

# The loggers whose warnings ComparisonResult.warnings carries (the small-sample and the degenerate-replies ones).
WARNINGS_IN_REPORT = ("density_metric.comparison.significance", "density_metric.comparison.systems")


@contextlib.contextmanager
def _held_warnings(names: tuple[str, ...]):
    """Hold back the WARNING records of the loggers ``names``; yields a list to which the caller adds the messages
    said elsewhere (the report's), and at the end logs the others as they came."""
    held: list[logging.LogRecord] = []

    def hold(record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING:
            held.append(record)
            return False
        return True

    said: list[str] = []
    loggers = [logging.getLogger(name) for name in names]
    for logger_ in loggers:
        logger_.addFilter(hold)
    try:
        yield said
    finally:
        for logger_ in loggers:
            logger_.removeFilter(hold)
        for record in held:
            if record.getMessage() not in said:
                logging.getLogger(record.name).handle(record)


def add_compare_command(commands) -> None:
    """Register ``compare`` on the command line's subparsers."""
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
    parser.add_argument(
        "--resamples",
        type=argparse_positive_int,
        default=DEFAULT_RESAMPLES,
        help=f"bootstrap resamples (default: {DEFAULT_RESAMPLES})",
    )
    parser.add_argument(
        "--trials",
        type=argparse_positive_int,
        default=DEFAULT_TRIALS,
        help=f"approximate randomization trials (default: {DEFAULT_TRIALS})",
    )
    parser.add_argument("--format", choices=sorted(set(FORMATS.values())), help="default: from each extension")
    add_field_options(parser)
    parser.add_argument("--context-sep", default=None, metavar="SEP", help="split string contexts into turns on SEP")
    add_scorer_options(parser, max_length=False)
    parser.set_defaults(func=compare_command)


def compare_command(args: argparse.Namespace) -> int:
    names = [name.strip() for name in args.names.split(",")] if args.names else [None] * len(args.systems)
    if len(args.systems) < 2:
        fail(f"compare needs at least 2 system files, got {len(args.systems)}")
    if len(names) != len(args.systems):
        fail(f"--names gives {len(names)} names for {len(args.systems)} system files")
    if args.names and len(set(names)) != len(names):
        fail(f"--names gives {next(name for name in names if names.count(name) > 1)!r} twice")
    system_names = [name or path.stem for name, path in zip(names, args.systems)]  # read_system's names
    if args.baseline is not None and args.baseline not in system_names:
        fail(f"--baseline {args.baseline!r} is none of the systems ({', '.join(map(repr, system_names))})")
    if args.json:
        _check_report_path(args.json, args.systems)
        try:  # as score checks OUTPUT: before any file is read or scored, not after the report
            check_output_path(args.json)
        except ValueError as err:
            fail(str(err))
    systems = []
    for path, name in zip(args.systems, names):
        read = functools.partial(
            read_system,
            name=name,
            fmt=args.format,
            score_field=args.score_field,
            context_field=args.context_field,
            response_field=args.response_field,
            context_sep=args.context_sep,
        )
        systems.append(read_or_fail(path, read))

    try:
        # The report prints its warnings ("warning: ..."): not logged as well, so that each is said once.
        with _held_warnings(WARNINGS_IN_REPORT) as in_report:
            result, _ = compare_tables(
                systems,
                functools.partial(scorer_of, args, args.device),
                test=args.test,
                resamples=args.resamples,
                trials=args.trials,
                seed=args.seed,
                baseline=args.baseline,
            )
            in_report += result.warnings
    except (ValueError, OSError) as err:  # CheckpointError is a ValueError; OSError: Hub and file errors
        fail(str(err))
    print(result.format())
    if args.json:
        try:
            write_json(args.json, result.to_dict())
        except OSError as err:
            fail(f"cannot write {args.json}: {err.strerror or err}")
        logger.info("wrote %s", args.json)
    return 0


def _check_report_path(path: Path, systems: Sequence[Path]) -> None:
    """Refuse a --json path that is a system file, or an existing file that is no earlier report: ``compare
    --json a.jsonl b.jsonl c.jsonl`` makes argparse take a.jsonl, a system file, as the report's path."""
    for system in systems:
        if same_file(path, system):
            fail(f"--json {path}: is the system file {system}; write the report to a new file")
    if path.is_file() and not _is_report(path):
        fail(
            f"--json {path}: exists and is not a compare report, so it is not replaced (a system file given "
            "after --json? --json takes the path that follows it; put it after the system files)"
        )


def _is_report(path: Path) -> bool:
    """Whether ``path`` is empty or holds a report that ``--json`` writes (a JSON object with systems and pairs)."""
    if path.stat().st_size == 0:
        return True
    if path.stat().st_size > REPORT_MAX_BYTES:
        return False
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return False
    return isinstance(report, dict) and {"systems", "pairs"} <= set(report)
