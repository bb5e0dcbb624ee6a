"""Tables of (context, response) rows: reading, checking, scoring and writing them.

A table is a file with one record per row, in one of three formats (:data:`FORMATS`):

- ``jsonl``: one JSON object a line (``.jsonl``, ``.json``); blank lines are skipped;
- ``csv``: a header row, then one row a line; every value is a string;
- ``parquet``: any columns; ``to_pylist`` gives one dict per row.

The context field holds a list of turns (oldest first) or a string: one turn, or split on
``context_sep``. The response field holds a string. A row that cannot be read or checked is
kept, in place, with its problem (:class:`Row`); nothing is dropped.

:func:`score_rows` adds to every record ``{field}`` (raw DEnsity score, float) and
``{field}_calibrated`` (float in [0, 1]); both are None for a bad row. With
``error_column=True`` it also adds ``{field}_error``: None, or ``"line 3: missing field
'response'"``. Records are written back in input order, with their other fields unchanged.

Problems with a whole file are ``ValueError``s naming the file (and the line or row where
known); the command line (``cli.py``) and the demo (``app.py``) turn them into messages.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .inputs import as_context, as_response

if TYPE_CHECKING:
    from .scoring import DensityResult

FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".parquet": "parquet"}
_FORMAT_NAMES = sorted(set(FORMATS.values()))
_KNOWN_SUFFIXES = ", ".join(FORMATS)
CHUNK_ROWS = 4096  # rows per score_chunk call: bounds the memory of one call, not of the table

ScoreChunk = Callable[[Sequence, Sequence], "DensityResult"]  # (n contexts, n responses) -> n scores


@dataclass
class Row:
    """One input row: its record (written back with the scores added), where it was, and its pair or problem.

    ``where`` is ``"line N"`` (JSONL and CSV, 1-based file lines) or ``"row N"`` (parquet, 0-based).
    A good row has ``context`` and ``response`` set; a bad one has ``error`` (naming the field).
    """

    record: dict[str, Any]
    where: str
    context: list[str] | None = None
    response: str | None = None
    error: str | None = None


def table_format(path: str | Path, fmt: str | None = None) -> str:
    """``fmt`` if given, else the format named by the extension of ``path``: ``"jsonl"``, ``"csv"`` or ``"parquet"``.

    Raises:
        ValueError: for an unknown ``fmt``, or an extension not in :data:`FORMATS`.
    """
    if fmt:
        if fmt not in _FORMAT_NAMES:
            raise ValueError(f"unknown table format {fmt!r} for {path}; formats: {', '.join(_FORMAT_NAMES)}")
        return fmt
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"cannot tell the format of {path} from its extension {suffix!r} (known: {_KNOWN_SUFFIXES})")
    return FORMATS[suffix]


def _read_records(path: Path, fmt: str) -> list[tuple[dict[str, Any], str, str | None]]:
    """(record, where, problem or None) per row, in file order."""
    if fmt == "jsonl":
        rows: list[tuple[dict[str, Any], str, str | None]] = []
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as err:
                    rows.append(({"line": line.rstrip("\n")}, f"line {number}", f"invalid JSON ({err.msg})"))
                    continue
                if not isinstance(record, dict):
                    rows.append(({"value": record}, f"line {number}", "not a JSON object"))
                else:
                    rows.append((record, f"line {number}", None))
        return rows
    if fmt == "csv":
        with open(path, encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            try:
                return [(dict(record), f"line {reader.line_num}", None) for record in reader]
            except csv.Error as err:  # a broken file, not a bad row: the rows after it cannot be placed
                # DictReader.line_num is updated only after a good row; its csv.reader's counts the failing line too.
                raise ValueError(f"{path}, line {reader.reader.line_num}: not valid CSV ({err})") from None
    import pyarrow.parquet as pq

    return [(record, f"row {index}", None) for index, record in enumerate(pq.read_table(path).to_pylist())]


def check_record(
    record: dict[str, Any],
    where: str,
    *,
    context_field: str = "context",
    response_field: str = "response",
    context_sep: str | None = None,
) -> Row:
    """Check one record: a :class:`Row` with its (context, response), or with ``error`` naming the field."""
    row = Row(record, where)
    try:
        for field in (context_field, response_field):
            if field not in record:
                raise ValueError(f"missing field {field!r}")
        context = record[context_field]
        if isinstance(context, str) and context_sep is not None:
            context = context.split(context_sep) if context else []
        row.context = as_context(context, 0, field=context_field)
        row.response = as_response(record[response_field], 0, field=response_field)
    except ValueError as err:
        # as_context/as_response name a list index; here the row is named by `where` instead.
        row.error = str(err).replace("[0]", "")
    return row


def read_rows(
    path: str | Path,
    fmt: str | None = None,
    *,
    context_field: str = "context",
    response_field: str = "response",
    context_sep: str | None = None,
) -> list[Row]:
    """Read and check every row of a table, in file order; bad rows are kept with their ``error``.

    Args:
        path: the table.
        fmt: ``"jsonl"``, ``"csv"`` or ``"parquet"``; None: from the extension (:func:`table_format`).
        context_field, response_field: the columns holding the pair.
        context_sep: split string contexts into turns on this; None: a string is one turn.

    Raises:
        ValueError: naming the file, for an unknown format, text that is not UTF-8, broken CSV (with
            its line) or a broken parquet file (pyarrow's ArrowInvalid).
    """
    path = Path(path)
    fmt = table_format(path, fmt)
    try:
        records = _read_records(path, fmt)
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err.reason})") from None
    rows = []
    for record, where, problem in records:
        if problem:
            rows.append(Row(record, where, error=problem))
        else:
            rows.append(
                check_record(
                    record, where, context_field=context_field, response_field=response_field, context_sep=context_sep
                )
            )
    return rows


def raise_for_bad_rows(path: str | Path, rows: Sequence[Row]) -> None:
    """Raise a ValueError naming the first bad row and the count of bad rows.

    E.g. ``"in.jsonl, line 2: missing field 'response' (3 bad row(s) in all)"``.
    """
    bad = [row for row in rows if row.error]
    if bad:
        raise ValueError(f"{path}, {bad[0].where}: {bad[0].error} ({len(bad)} bad row(s) in all)")


def score_columns(
    score_chunk: ScoreChunk, contexts: Sequence, responses: Sequence, *, field: str = "density"
) -> dict[str, list[float]]:
    """The output columns of one chunk of n pairs: ``{field}`` (n raw scores) and ``{field}_calibrated`` (n in [0, 1]).

    The one scoring step under both table paths: :func:`score_rows` (files) and
    ``DensityScorer.score_dataset`` (``datasets``). ``score_chunk(contexts, responses)`` checks
    the n pairs (ValueError naming the row), scores them and returns a DensityResult:
    ``DensityScorer.score``, or ``functools.partial(score_distributed, scorer)`` to shard the
    chunk over the ranks of a process group.
    """
    result = score_chunk(contexts, responses)
    return {field: result.scores.tolist(), f"{field}_calibrated": result.calibrated.tolist()}


def score_rows(
    rows: list[Row],
    score_chunk: ScoreChunk,
    *,
    field: str = "density",
    chunk_rows: int = CHUNK_ROWS,
    track: Callable[[list[list[Row]]], Iterable[list[Row]]] = iter,
    error_column: bool = False,
) -> None:
    """Score the good rows ``chunk_rows`` at a time and add ``field`` and ``field_calibrated`` to every record.

    ``track`` wraps the list of chunks (a progress bar). Bad rows get None, and with
    ``error_column`` every row gets ``field_error`` (None, or where and what the problem is).
    """
    good = [row for row in rows if not row.error]
    for chunk in track([good[i : i + chunk_rows] for i in range(0, len(good), chunk_rows)]):
        contexts, responses = [row.context for row in chunk], [row.response for row in chunk]
        columns = score_columns(score_chunk, contexts, responses, field=field)
        for index, row in enumerate(chunk):
            for name, values in columns.items():
                row.record[name] = values[index]
    for row in rows:
        if row.error:
            row.record[field] = row.record[f"{field}_calibrated"] = None
        if error_column:
            row.record[f"{field}_error"] = f"{row.where}: {row.error}" if row.error else None


def write_records(path: str | Path, fmt: str, records: list[dict[str, Any]]) -> None:
    """Write records as a table, creating the parent directory; CSV columns are the union of keys, first seen first."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        with open(path, "w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    elif fmt == "csv":
        fields = list(dict.fromkeys(key for record in records for key in record))
        with open(path, "w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=fields)
            writer.writeheader()
            writer.writerows(records)
    elif fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(records), path)
    else:
        raise ValueError(f"unknown table format {fmt!r} for {path}; formats: {', '.join(_FORMAT_NAMES)}")
