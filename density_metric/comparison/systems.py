"""Comparing dialogue systems: ``DensityScorer.compare`` and the tables of ``python -m density_metric compare``.

Each system is a table (JSONL, CSV or parquet, read by :mod:`density_metric.io.tables`) of its
replies to the same contexts, in the same order. Tables that all have the score column
(``--score-field``, default ``density``: what ``score`` writes) are not scored again; tables that
all lack it are scored with the checkpoint; a mix is an error naming the files. Stored scores are
compared only if one checkpoint scored them all: the ``{score field}_signature`` column that ``score``
writes must agree in every row of every file on the fields that define a score
(:data:`~density_metric.signature.SCORE_DEFINING_FIELDS`): the checkpoint (by its revision), max_length,
max_response_length, dtype, floor and specials (:func:`check_same_scorer`, by
:meth:`~density_metric.signature.Signature.differences`; a file without that column is compared with a warning).
The statistics are :func:`density_metric.comparison.significance.compare`'s.

Each system's flagged rows (:mod:`density_metric.row_flags`: empty, unreadable, punctuation-only replies and
truncated pairs, whose scores mean little) are counted (:func:`report_flags`): from the scores when the tables are
scored here, from the ``{score field}_flags`` column when they carry stored scores (unknown without it). A system
with more flagged rows than the others is warned about.

The command's options and run are :mod:`density_metric.cli.compare`'s. This module imports
neither it, nor :mod:`density_metric.scoring` (a scorer is anything with ``score`` and
``signature``), so no two modules import each other.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..io.tables import Row, raise_for_bad_rows, read_table
from ..row_flags import FLAGS, FLOORED, NON_LATIN, TRUNCATED, TRUNCATED_CONTEXT, TRUNCATED_REPLY, count_flags
from ..signature import SCORE_DEFINING_WORDS, Signature
from .result import ComparisonResult
from .significance import check_baseline, compare

logger = logging.getLogger(__name__)


class Scorer(Protocol):
    """What comparing needs of a scorer (:class:`density_metric.DensityScorer` is one)."""

    signature: str

    def score(self, contexts: Sequence, responses: Sequence, *, warn: bool = True) -> Any: ...


def compare_responses(
    scorer: Scorer, contexts: Sequence, systems: Mapping[str, Sequence[str]], **options: Any
) -> ComparisonResult:
    """Score every system's responses to the same ``contexts`` and compare the systems.

    Args:
        scorer: the loaded checkpoint (a :class:`~density_metric.DensityScorer`).
        contexts: n rows, each a list of turns (oldest first) or one string.
        systems: ``{name: n responses}``, at least 2.
        options: :func:`density_metric.compare`'s (``test``, ``resamples``, ``trials``, ``seed``, ``baseline``);
            an unknown ``baseline`` is an error before anything is scored.
    """
    if not isinstance(systems, Mapping):
        raise ValueError(f"systems must be a dict {{name: responses}}, got {type(systems).__name__}")
    if len(systems) < 2:
        raise ValueError(f"systems: give at least 2 systems to compare, got {len(systems)}")
    check_baseline(options.get("baseline"), [str(name) for name in systems])
    results = {}
    for name, responses in systems.items():
        try:
            results[name] = scorer.score(contexts, responses, warn=False)  # report_flags warns once, naming the system
        except ValueError as err:
            raise ValueError(f"systems[{name!r}]: {err}") from None
    result = compare(
        {name: result.scores for name, result in results.items()},
        calibrated={name: result.calibrated for name, result in results.items()},
        scorer_signature=scorer.signature,
        **options,
    )
    report_flags(result, {name: scored.flags for name, scored in results.items()})
    return result


@dataclass
class SystemTable:
    """One system's file: its checked rows and, if the file had them, its scores (n,), calibrated scores,
    flags (n lists) and the signature of the scorer that wrote them."""

    name: str
    path: Path
    rows: list[Row]
    scores: np.ndarray | None = None
    calibrated: np.ndarray | None = None
    signature: str | None = None
    flags: list[list[str]] | None = None


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


def _stored_flags(path: Path, rows: list[Row], field: str) -> list[list[str]]:
    """The flags in column ``field`` (lists; JSON text in CSV), or a ValueError naming the first row without a list
    of known flags."""
    flags = []
    for row in rows:
        value = row.record.get(field)
        if isinstance(value, str):  # CSV holds lists as JSON text
            try:
                value = json.loads(value)
            except ValueError:
                pass
        if not isinstance(value, list) or not all(flag in FLAGS for flag in value):
            raise ValueError(f"{path}, {row.where}: {field!r} is {value!r}, not a list of flags; score the file again")
        flags.append(value)
    return flags


def _stored_signature(path: Path, rows: list[Row], field: str) -> str:
    """The one signature in column ``field``, or a ValueError naming the first row without it or with another."""
    first = rows[0].record.get(field)
    for row in rows:
        value = row.record.get(field)
        if not isinstance(value, str) or not value:
            raise ValueError(f"{path}, {row.where}: {field!r} is {value!r}, not a signature; score the file again")
        if value != first:
            raise ValueError(
                f"{path}, {row.where}: {field!r} is {value!r}, but {rows[0].where} has {first!r}: the file holds "
                "scores of two runs; score it again with one checkpoint"
            )
    return first


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
    """Read one system's table; its stored scores if it has the ``score_field`` column (and their
    signature, if it has ``{score_field}_signature``).

    Raises:
        ValueError: naming the file and row of a bad row, a stored score that is not a number, or a
            signature that is missing or differs from the first row's.
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
        if f"{score_field}_signature" in table.columns:
            system.signature = _stored_signature(path, table.rows, f"{score_field}_signature")
        if f"{score_field}_flags" in table.columns:
            system.flags = _stored_flags(path, table.rows, f"{score_field}_flags")
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


def check_same_scorer(systems: Sequence[SystemTable]) -> str | None:
    """For tables with stored scores: a ValueError naming two files whose signatures differ in a field of
    :data:`~density_metric.signature.SCORE_DEFINING_FIELDS` (checkpoint, by its revision; max_length;
    max_response_length; dtype; floor; specials), and the fields that differ (:func:`unsigned_warning` names the
    files without a signature).

    Returns the signature to report: the files' one signature, their distinct signatures joined by " + "
    where only library versions differ, or None where no file has one.
    """
    signed = [system for system in systems if system.signature is not None]
    for other in signed[1:]:
        differences = Signature.parse(signed[0].signature).differences(Signature.parse(other.signature))
        if differences:
            differ = ", ".join(f"{name} {ours!r} against {theirs!r}" for name, (ours, theirs) in differences.items())
            raise ValueError(
                f"{signed[0].path} and {other.path} were scored differently ({differ}): scores of two checkpoints "
                "or settings are not compared; score every file with one checkpoint and the same options (the "
                f"signatures' {SCORE_DEFINING_WORDS} must agree)"
            )
    return " + ".join(dict.fromkeys(system.signature for system in signed)) or None


def compare_tables(
    systems: Sequence[SystemTable],
    scorer_factory: Callable[[], Scorer] | None = None,
    *,
    baseline: str | None = None,
    **options: Any,
) -> tuple[ComparisonResult, list[SystemTable]]:
    """Compare system tables with the same contexts: all with stored scores, or all scored now.

    ``scorer_factory()`` returns the DensityScorer; it is called only if the tables need scoring. ``baseline``: a
    system's name; each other system is then tested against it alone, else every pair (Holm-corrected either way:
    :func:`density_metric.comparison.significance.compare`). ``options``: that function's others (``test``, ``seed``...).

    Raises:
        ValueError: some tables have stored scores and others not (:func:`check_all_or_none_stored`), stored
            scores of two checkpoints or settings (:func:`check_same_scorer`), or a ``baseline`` that names none
            of the systems (before anything is scored).
    """
    if len(systems) < 2:
        raise ValueError(f"give at least 2 system files to compare, got {len(systems)}")
    names = [system.name for system in systems]
    if len(set(names)) != len(names):
        duplicate = next(name for name in names if names.count(name) > 1)
        raise ValueError(f"{duplicate!r} names two systems (file stems); give --names")
    check_baseline(baseline, names)
    check_same_contexts(systems)
    check_all_or_none_stored(systems)
    stored = systems[0].scores is not None  # every table's, or none (check_all_or_none_stored)
    stored_signature = check_same_scorer(systems) if stored else None
    scorer = None
    for system in systems:
        if system.scores is not None:
            continue
        if scorer is None:
            scorer = scorer_factory()
        result = scorer.score(
            [row.context for row in system.rows], [row.response for row in system.rows], warn=False
        )  # report_flags warns once, naming the system
        system.scores, system.calibrated, system.flags = result.scores, result.calibrated, result.flags
    signature = scorer.signature if scorer is not None else stored_signature
    calibrated = None
    if all(system.calibrated is not None for system in systems):
        calibrated = {system.name: system.calibrated for system in systems}
    result = compare(
        {system.name: system.scores for system in systems},
        calibrated=calibrated,
        scorer_signature=signature,
        baseline=baseline,
        **options,
    )
    if stored:
        _warn(result, unsigned_warning(systems))
    report_flags(result, {system.name: system.flags for system in systems})
    return result, list(systems)


def unsigned_warning(systems: Sequence[SystemTable]) -> str | None:
    """The warning naming the tables whose stored scores carry no signature (nothing checks their scorer), or None."""
    unsigned = [str(system.path) for system in systems if system.signature is None]
    if not unsigned:
        return None
    return (
        f"{', '.join(unsigned)} carry stored scores without a signature column: nothing checks that one checkpoint "
        "scored every file (score them again with `python -m density_metric score` to write one)"
    )


def report_flags(result: ComparisonResult, flags: Mapping[str, Sequence[Sequence[str]] | None]) -> None:
    """Add each system's flagged rows to ``result.systems``: ``flagged``, the rows whose reply is degenerate (empty,
    unreadable, no letter or digit: floored, :data:`~density_metric.row_flags.FLOORED`); ``truncated``, the rows the encoder read only in part
    (counted apart: long human dialogues are often cut, 8 % of DailyDialog test pairs); ``flag_counts``, the rows per
    flag; all None where the flags are unknown. Where the systems with known flags have different numbers of
    degenerate rows, one warning names those with the most; where any has truncated rows, one warning counts them
    per system and cap; where any has ``non-latin`` rows (read, not floored), one warning counts them (all logged, and
    in ``result.warnings``)."""
    known, cut = {}, {}
    for system in result.systems:
        rows = flags.get(system["name"])
        counts = None if rows is None else count_flags(rows)
        degenerate = None if rows is None else sum(not FLOORED.isdisjoint(row) for row in rows)
        system["flagged"] = degenerate
        system["truncated"] = None if counts is None else counts[TRUNCATED]
        system["flag_counts"] = None if counts is None else {flag: counts[flag] for flag in FLAGS if counts[flag]}
        if counts is not None:
            known[system["name"]], cut[system["name"]] = degenerate, counts
    n = result.systems[0]["n"] if result.systems else 0
    for warning in (_truncation_warning(n, cut), _non_latin_warning(n, cut)):
        _warn(result, warning)
    if len(set(known.values())) < 2:
        return
    most = max(known.values())
    worst = [name for name, count in known.items() if count == most]
    others = [f"{name!r} {count}" for name, count in known.items() if count < most]
    warning = (
        f"{' and '.join(map(repr, worst))} {'has' if len(worst) == 1 else 'have'} more degenerate replies than the "
        f"other systems ({most} of {result.systems[0]['n']}, against {', '.join(others)}): empty, unreadable and "
        "wordless replies score the floor; see the 'flagged' column"
    )
    _warn(result, warning)


def _warn(result: ComparisonResult, warning: str | None) -> None:
    """Log ``warning`` (None: nothing) and keep it in ``result.warnings``, which the report prints."""
    if warning:
        logger.warning(warning)
        result.warnings.append(warning)


def _non_latin_warning(n: int, counts: Mapping[str, Mapping[str, int]]) -> str | None:
    """One sentence on the systems with ``non-latin`` rows (read and scored, not floored), or None where none has any."""
    parts = [f"{name!r} {system[NON_LATIN]} of {n}" for name, system in counts.items() if system[NON_LATIN]]
    if not parts:
        return None
    return (
        f"non-latin rows, mostly letters outside the Latin script: {', '.join(parts)}; the model reads English, so "
        "their scores say little of them; see the 'flags' of the rows"
    )


def _truncation_warning(n: int, counts: Mapping[str, Mapping[str, int]]) -> str | None:
    """One sentence on the truncated rows of the systems whose flag ``counts`` are known, or None where none has any:
    per system its truncated rows of ``n``, and how many of them the reply's cap and the context's cut."""
    if not any(system[TRUNCATED] for system in counts.values()):
        return None
    parts = []
    for name, system in counts.items():
        caps = ((TRUNCATED_REPLY, "reply past max_response_length"), (TRUNCATED_CONTEXT, "context cut"))
        detail = ", ".join(f"{system[flag]} {words}" for flag, words in caps if system[flag])
        parts.append(f"{name!r} {system[TRUNCATED]} of {n}{f' ({detail})' if detail else ''}")
    advice = ""
    if any(system[TRUNCATED_REPLY] for system in counts.values()):
        advice = "; a reply's tokens past max_response_length are not read (--max-response-length raises the cap)"
    return (
        f"truncated rows, whose scores read only part of the pair: {', '.join(parts)}{advice}; see the 'truncated' "
        "column"
    )
