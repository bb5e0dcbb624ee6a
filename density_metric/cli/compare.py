"""The ``compare`` command's options; its run is :func:`density_metric.comparison.command.compare_command`, its tables
and statistics :mod:`density_metric.comparison`."""

from __future__ import annotations

from pathlib import Path

from ..comparison.command import compare_command
from ..comparison.result import TESTS
from ..comparison.significance import DEFAULT_RESAMPLES, DEFAULT_SEED, DEFAULT_TRIALS
from ..io.tables import FORMATS
from ..signature import SCORE_DEFINING_WORDS
from .options import add_field_options, add_scorer_options, argparse_positive_int


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
        "--resamples", type=argparse_positive_int, default=DEFAULT_RESAMPLES, help="bootstrap resamples"
    )
    parser.add_argument(
        "--trials", type=argparse_positive_int, default=DEFAULT_TRIALS, help="approximate randomization trials"
    )
    parser.add_argument("--format", choices=sorted(set(FORMATS.values())), help="default: from each extension")
    add_field_options(parser)
    parser.add_argument("--context-sep", default=None, metavar="SEP", help="split string contexts into turns on SEP")
    add_scorer_options(parser, max_length=False)
    parser.set_defaults(func=compare_command)
