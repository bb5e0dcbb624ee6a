"""Comparing dialogue systems: ``python -m density_metric compare A B [C ...]`` and ``DensityScorer.compare``.

Each system is a table (JSONL, CSV or parquet, read by :mod:`density_metric.tables`) of its
replies to the same contexts, in the same order. Tables that all have the score column
(``--score-field``, default ``density``: what ``score`` writes) are not scored again; tables that
all lack it are scored with the checkpoint; a mix is an error naming the files. The statistics are :func:`density_metric.significance.compare`'s.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .significance import DEFAULT_RESAMPLES, DEFAULT_SEED, DEFAULT_TRIALS, TESTS, ComparisonResult, compare
from .tables import FORMATS, Row, raise_for_bad_rows, read_table

if TYPE_CHECKING:
    from .scoring import DensityScorer

logger = logging.getLogger("density_metric")


def compare_responses(
    scorer: DensityScorer, contexts: Sequence, systems: Mapping[str, Sequence[str]], **options: Any
) -> ComparisonResult:
    """Score every system's responses to the same ``contexts`` and compare the systems.

    Args:
        scorer: the loaded checkpoint.
        contexts: n rows, each a list of turns (oldest first) or one string.
        systems: ``{name: n responses}``, at least 2.
        options: :func:`density_metric.compare`'s (``test``, ``resamples``, ``trials``, ``seed``).
    """
    if not isinstance(systems, Mapping):
        raise ValueError(f"systems must be a dict {{name: responses}}, got {type(systems).__name__}")
    if len(systems) < 2:
        raise ValueError(f"systems: give at least 2 systems to compare, got {len(systems)}")
    results = {}
    for name, responses in systems.items():
        try:
            results[name] = scorer.score(contexts, responses)
        except ValueError as err:
            raise ValueError(f"systems[{name!r}]: {err}") from None
    return compare(
        {name: result.scores for name, result in results.items()},
        calibrated={name: result.calibrated for name, result in results.items()},
        scorer_signature=scorer.signature,
        **options,
    )


@dataclass
class SystemTable:
    """One system's file: its checked rows and, if the file had them, its scores (n,) and calibrated scores."""

    name: str
    path: Path
    rows: list[Row]
    scores: np.ndarray | None = None
    calibrated: np.ndarray | None = None


def _stored_scores(path: Path, rows: list[Row], field: str) -> np.ndarray:
    """The (n,) float64 values of ``field``, or a ValueError naming the first row without a number."""
    values = []
    for row in rows:
        value = row.record.get(field)
        try:
            number = float(value)  # CSV holds text
        except (TypeError, ValueError):
            number = math.nan
        if isinstance(value, bool) or not math.isfinite(number):
            raise ValueError(f"{path}, {row.where}: {field!r} is {value!r}, not a score; score the file again")
        values.append(number)
    return np.asarray(values)


def read_system(
    path: str | Path,
    name: str | None = None,
    *,
    fmt: str | None = None,
    score_field: str = "density",
    context_field: str = "context",
    response_field: str = "response",
    context_sep: str | None = None,
) -> SystemTable:
    """Read one system's table; its stored scores if it has the ``score_field`` column.

    Raises:
        ValueError: naming the file and row of a bad row or a stored score that is not a number.
        OSError: the file cannot be opened.
    """
    path = Path(path)
    table = read_table(path, fmt, context_field=context_field, response_field=response_field, context_sep=context_sep)
    raise_for_bad_rows(path, table.rows)
    if not table.rows:
        raise ValueError(f"{path}: has no rows")
    system = SystemTable(name or path.stem, path, table.rows)
    if score_field in table.columns:
        system.scores = _stored_scores(path, table.rows, score_field)
        if f"{score_field}_calibrated" in table.columns:
            system.calibrated = _stored_scores(path, table.rows, f"{score_field}_calibrated")
    return system


def check_same_contexts(systems: Sequence[SystemTable]) -> None:
    """A ValueError naming the first row whose context differs from the first system's, or that one lacks."""
    first = systems[0]
    for other in systems[1:]:
        for row, other_row in zip(first.rows, other.rows):
            if row.context != other_row.context:
                raise ValueError(
                    f"{other.path}, {other_row.where}: its context {other_row.context!r} differs from "
                    f"{first.path}, {row.where} ({row.context!r}); every system must answer the same contexts "
                    "in the same order"
                )
        if len(other.rows) != len(first.rows):
            longer, shorter = (first, other) if len(first.rows) > len(other.rows) else (other, first)
            missing = longer.rows[len(shorter.rows)]
            raise ValueError(
                f"{longer.path}, {missing.where}: {shorter.path} ends before this row ({len(shorter.rows)} rows "
                f"against {len(longer.rows)}); every system must answer the same contexts in the same order"
            )


def check_all_or_none_stored(systems: Sequence[SystemTable]) -> None:
    """A ValueError naming the files when some tables carry stored scores and others do not.

    Stored scores may come from another checkpoint or options than the one that would score the
    rest, and the signature could name only the latter: a mix is never compared.
    """
    stored = [str(system.path) for system in systems if system.scores is not None]
    fresh = [str(system.path) for system in systems if system.scores is None]
    if stored and fresh:
        raise ValueError(
            f"{', '.join(stored)} carry stored scores but {', '.join(fresh)} do not; scores of two runs "
            "(perhaps of two checkpoints) are not compared: score every file with the same checkpoint first, "
            "or none"
        )


def compare_tables(
    systems: Sequence[SystemTable], scorer_factory=None, **options: Any
) -> tuple[ComparisonResult, list[SystemTable]]:
    """Compare system tables with the same contexts: all with stored scores, or all scored now.

    ``scorer_factory()`` returns the DensityScorer; it is called only if the tables need scoring.

    Raises:
        ValueError: some tables have stored scores and others not (:func:`check_all_or_none_stored`).
    """
    if len(systems) < 2:
        raise ValueError(f"give at least 2 system files to compare, got {len(systems)}")
    names = [system.name for system in systems]
    if len(set(names)) != len(names):
        duplicate = next(name for name in names if names.count(name) > 1)
        raise ValueError(f"{duplicate!r} names two systems (file stems); give --names")
    check_same_contexts(systems)
    check_all_or_none_stored(systems)
    scorer = None
    for system in systems:
        if system.scores is not None:
            continue
        if scorer is None:
            scorer = scorer_factory()
        result = scorer.score([row.context for row in system.rows], [row.response for row in system.rows])
        system.scores, system.calibrated = result.scores, result.calibrated
    signature = scorer.signature if scorer is not None else None
    calibrated = None
    if all(system.calibrated is not None for system in systems):
        calibrated = {system.name: system.calibrated for system in systems}
    result = compare(
        {system.name: system.scores for system in systems},
        calibrated=calibrated,
        scorer_signature=signature,
        **options,
    )
    return result, list(systems)


# ---------------------------------------------------------------------- command line


def compare_command(args: argparse.Namespace) -> int:
    from .cli import fail

    names = [name.strip() for name in args.names.split(",")] if args.names else [None] * len(args.systems)
    if len(args.systems) < 2:
        fail(f"compare needs at least 2 system files, got {len(args.systems)}")
    if len(names) != len(args.systems):
        fail(f"--names gives {len(names)} names for {len(args.systems)} system files")
    systems = []
    for path, name in zip(args.systems, names):
        if path.is_dir():
            fail(f"{path}: is a directory, not a table file")
        if not path.exists():
            fail(f"{path}: no such file")
        try:
            systems.append(
                read_system(
                    path,
                    name,
                    fmt=args.format,
                    score_field=args.score_field,
                    context_field=args.context_field,
                    response_field=args.response_field,
                    context_sep=args.context_sep,
                )
            )
        except ValueError as err:
            fail(str(err))
        except OSError as err:
            fail(f"{path}: cannot be read ({err.strerror or err})")

    def scorer_factory():
        from .scoring import DensityScorer

        return DensityScorer(
            args.checkpoint,
            args.revision,
            device=args.device,
            dtype=args.dtype,
            batch_size=args.batch_size,
            progress=False,
        )

    try:
        result, _ = compare_tables(
            systems, scorer_factory, test=args.test, resamples=args.resamples, trials=args.trials, seed=args.seed
        )
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


def write_json(path: Path, value: dict[str, Any]) -> None:
    """Write ``value`` as JSON to a temporary file beside ``path``, then rename it: never a partial file."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def add_compare_command(commands, positive_int) -> None:
    """Register ``compare`` on the command line's subparsers (``positive_int``: cli's argparse type)."""
    parser = commands.add_parser(
        "compare",
        help="which system is better, and is it significant? (paired bootstrap and approximate randomization)",
        description="Compare systems that answer the same contexts in the same order, one table per system.",
    )
    parser.add_argument("systems", nargs="+", type=Path, metavar="SYSTEM", help="a JSONL, CSV or parquet table")
    parser.add_argument("--names", default=None, help="comma-separated system names (default: the file stems)")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="also write the results as JSON")
    parser.add_argument(
        "--score-field",
        default="density",
        help="tables with this column (all or none) are not scored again; FIELD_calibrated is used too (default: density)",
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
    parser.add_argument("--context-field", default="context")
    parser.add_argument("--response-field", default="response")
    parser.add_argument("--context-sep", default=None, metavar="SEP", help="split string contexts into turns on SEP")
    parser.add_argument("--checkpoint", default=None, help="local directory or Hub repo id (default: bundled)")
    parser.add_argument("--revision", default=None, help="Hub revision; a commit hash pins the scores")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"))
    parser.add_argument("--batch-size", type=positive_int, default=64, help="pairs per forward pass (default: 64)")
    parser.set_defaults(func=compare_command)
