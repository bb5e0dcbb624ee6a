"""Tables of (context, response) rows: reading, checking, scoring and writing them.

A table is a file with one record per row, in one of three formats (:data:`FORMATS`):

- ``jsonl``: one JSON object a line (``.jsonl``, ``.json``); blank lines are skipped;
- ``csv``: a header row, then one row a line; every value is a string. Fields may be of any
  length. A row with more values than the header has columns is a bad row (``"5 values for
  3 columns"``), written back with the header's columns only; one with fewer gets None for
  the missing columns;
- ``parquet``: any columns; ``to_pylist`` gives one dict per row.

Text is UTF-8; a byte order mark at the start of the file is skipped. The input's columns
(:class:`Table`) are the CSV header, the parquet schema, or the keys of the JSON objects,
first seen first.

The context field holds a list of turns (oldest first) or a string: one turn, or split on
``context_sep``. In CSV, a context that parses as a JSON array of strings (as lists are
written, below) is that list of turns, in the record too; any other string is one turn or
split. The response field holds a string. A row that cannot be read or checked is kept, in
place, with its problem (:class:`Row`); nothing is dropped.

:func:`score_rows` adds to every record ``{field}`` (raw DEnsity score, float),
``{field}_calibrated`` (float in [0, 1]) and ``{field}_signature`` (the scorer's signature: checkpoint
and revision, max_length, dtype, versions); all are None for a bad row. With
``error_column=True`` it also adds ``{field}_error``: None, or ``"line 3: missing field
'response'"``. Records are written back in input order, with their other fields unchanged.

:func:`write_records` writes the columns it is given (the input's and the score columns:
:func:`output_columns`), then any other key of any record, first seen first; so a
header-only CSV keeps its header. It writes to a hidden temporary file next to the target
and renames it over the target when complete: a file at the path is always a whole table,
and an interrupted write (Ctrl-C) leaves the previous file, or none, and no temporary file
(``kill -9`` can leave a ``.NAME.*.tmp``, never a partial NAME). A symlink at the path is
written through (:func:`~density_metric.outputs.output_target`): the file it points to is replaced, the link stays.
:func:`check_writable` creates and removes such a temporary file, so a read-only folder fails
before any scoring. Values, by format:

- ``jsonl``: as JSON; what JSON cannot hold as null (NaN, infinities) or as its ``str`` (dates or
  bytes from parquet); a lone surrogate (``"\ud800"`` in a JSON input: a bad row) as JSON's escape;
- ``csv``: lists and dicts as JSON text (a context ``["Hi", "How are you?"]`` reads back as
  that list), None, NaN and infinities as an empty field, anything else as its ``str``; a lone surrogate in a string
  as U+FFFD (UTF-8 cannot hold it);
- ``parquet``: one type a column, from all rows. A column of strings and lists of strings
  (contexts given both ways) is written as lists: a string ``s`` as ``[s]``, the one turn it
  is read as (:func:`unify_contexts` first sets good rows' strings to the turns they were
  scored with, which keeps a ``context_sep`` split). Any other column that no one arrow type holds (ids ``1`` and ``"b-2"``,
  ``True`` and ``2``) is written as strings: strings as they are, other values as JSON text.
  Ints and floats together are floats. A lone surrogate in a string is written as U+FFFD.

Problems with a whole file are ``ValueError``s naming the file (and the line or row where
known); the command line (``cli.py``) and the demo (``app.py``) turn them into messages.
"""

from __future__ import annotations

import csv
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .inputs import SURROGATE, as_context, as_response
from .outputs import output_target, sync, temporary_path
from .results import ScoreChunk, score_columns

if TYPE_CHECKING:
    import pyarrow as pa

FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".parquet": "parquet"}
_FORMAT_NAMES = sorted(set(FORMATS.values()))
_KNOWN_SUFFIXES = ", ".join(FORMATS)
CHUNK_ROWS = 4096  # rows per score_chunk call: bounds the memory of one call, not of the table
# csv's default is 131,072 characters a field. Its limit is a C long: 32 bits on Windows.
CSV_FIELD_LIMIT = min(sys.maxsize, 2**31 - 1)


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


@dataclass
class Table:
    """The rows of a table, in file order, and its columns (see the module docstring), kept for the output."""

    rows: list[Row]
    columns: list[str]


def _check_format(fmt: str | None, path: str | Path) -> str:
    """``fmt`` itself, or a ValueError naming it and the file."""
    if fmt not in _FORMAT_NAMES:
        raise ValueError(f"unknown table format {fmt!r} for {path}; formats: {', '.join(_FORMAT_NAMES)}")
    return fmt


def table_format(path: str | Path, fmt: str | None = None) -> str:
    """``fmt`` if given, else the format named by the extension of ``path``: ``"jsonl"``, ``"csv"`` or ``"parquet"``.

    Raises:
        ValueError: for an unknown ``fmt``, or an extension not in :data:`FORMATS`.
    """
    if fmt:
        return _check_format(fmt, path)
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"cannot tell the format of {path} from its extension {suffix!r} (known: {_KNOWN_SUFFIXES})")
    return FORMATS[suffix]


Records = list[tuple[dict[str, Any], str, str | None]]  # (record, where, problem or None) per row


def _read_records(path: Path, fmt: str) -> tuple[Records, list[str]]:
    """(record, where, problem or None) per row, in file order, and the table's columns."""
    if fmt == "jsonl":
        rows: Records = []
        columns: dict[str, None] = {}  # an ordered set
        with open(path, encoding="utf-8-sig") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                if not rows and line.lstrip().startswith("["):  # one JSON array: its lines are no records
                    raise ValueError(
                        f"{path}, line {number}: a JSON array, not JSON Lines; write one object a line "
                        f"(for example: jq -c '.[]' {path.name})"
                    )
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as err:
                    rows.append(({"line": line.rstrip("\n")}, f"line {number}", f"invalid JSON ({err.msg})"))
                    continue
                if not isinstance(record, dict):
                    rows.append(({"value": record}, f"line {number}", "not a JSON object"))
                else:
                    rows.append((record, f"line {number}", None))
                    columns.update(dict.fromkeys(record))
        return rows, list(columns)
    if fmt == "csv":
        # Process-wide and left raised: putting it back could cut short another thread's read.
        csv.field_size_limit(CSV_FIELD_LIMIT)
        with open(path, encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            try:
                rows = [_csv_record(record, len(reader.fieldnames), f"line {reader.line_num}") for record in reader]
            except csv.Error as err:  # a broken file, not a bad row: the rows after it cannot be placed
                # DictReader.line_num is updated only after a good row; its csv.reader's counts the failing line too.
                raise ValueError(f"{path}, line {reader.reader.line_num}: not valid CSV ({err})") from None
            return rows, list(reader.fieldnames or [])
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    return [(record, f"row {index}", None) for index, record in enumerate(table.to_pylist())], table.column_names


def _csv_record(record: dict[Any, Any], n_columns: int, where: str) -> tuple[dict[str, Any], str, str | None]:
    """A DictReader record; values past the header's columns (DictReader's key None) make it a bad row."""
    extra = record.pop(None, None)  # dropped: a key None could not be written back
    problem = f"{n_columns + len(extra)} values for {n_columns} columns" if extra is not None else None
    return record, where, problem


def _json_turns(text: str) -> list[str] | None:
    """The turns a CSV context holds if it is a JSON array of strings (how lists are written), else None."""
    if not text.startswith("["):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if isinstance(value, list) and all(isinstance(turn, str) for turn in value):
        return value
    return None


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
        # No row index in the errors: the row is named by `where`.
        row.context = as_context(context, None, field=context_field)
        row.response = as_response(record[response_field], None, field=response_field)
    except ValueError as err:
        row.error = str(err)
    return row


def read_table(
    path: str | Path,
    fmt: str | None = None,
    *,
    context_field: str = "context",
    response_field: str = "response",
    context_sep: str | None = None,
) -> Table:
    """Read and check every row of a table, in file order; bad rows are kept with their ``error``.

    Args:
        path: the table.
        fmt: ``"jsonl"``, ``"csv"`` or ``"parquet"``; None: from the extension (:func:`table_format`).
        context_field, response_field: the columns holding the pair.
        context_sep: split string contexts into turns on this; None: a string is one turn.

    Returns:
        The rows and the input's columns (for a table with no rows, the CSV header or parquet schema).

    Raises:
        ValueError: naming the file, for an unknown format, text that is not UTF-8, broken CSV (with
            its line), a JSON array in place of JSON Lines or a broken parquet file (pyarrow's ArrowInvalid);
            or for an empty ``context_sep``.
        OSError: the file cannot be opened (missing, a directory, no permission).
    """
    if context_sep == "":
        raise ValueError("context_sep must not be empty (None: a string context is one turn)")
    path = Path(path)
    fmt = table_format(path, fmt)
    try:
        records, columns = _read_records(path, fmt)
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err.reason})") from None
    rows = []
    for record, where, problem in records:
        if problem:
            rows.append(Row(record, where, error=problem))
            continue
        if fmt == "csv" and isinstance(record.get(context_field), str):
            turns = _json_turns(record[context_field])
            if turns is not None:
                record[context_field] = turns  # the list it was written from
        rows.append(
            check_record(
                record, where, context_field=context_field, response_field=response_field, context_sep=context_sep
            )
        )
    return Table(rows, columns)


def read_rows(
    path: str | Path,
    fmt: str | None = None,
    *,
    context_field: str = "context",
    response_field: str = "response",
    context_sep: str | None = None,
) -> list[Row]:
    """The rows of :func:`read_table`: every row of a table, checked, in file order."""
    return read_table(
        path, fmt, context_field=context_field, response_field=response_field, context_sep=context_sep
    ).rows


def raise_for_bad_rows(path: str | Path, rows: Sequence[Row]) -> None:
    """Raise a ValueError naming the first bad row and the count of bad rows.

    E.g. ``"in.jsonl, line 2: missing field 'response' (3 bad row(s) in all)"``.
    """
    bad = [row for row in rows if row.error]
    if bad:
        raise ValueError(f"{path}, {bad[0].where}: {bad[0].error} ({len(bad)} bad row(s) in all)")


def score_rows(
    rows: list[Row],
    score_chunk: ScoreChunk,
    *,
    field: str = "density",
    chunk_rows: int = CHUNK_ROWS,
    track: Callable[[list[list[Row]]], Iterable[list[Row]]] = iter,
    error_column: bool = False,
    rating_column: bool = False,
) -> None:
    """Score the good rows ``chunk_rows`` at a time and add ``field``, ``field_calibrated`` and ``field_signature``
    to every record.

    ``track`` wraps the list of chunks (a progress bar). Bad rows get None, and with
    ``error_column`` every row gets ``field_error`` (None, or where and what the problem is).
    ``rating_column``: the checkpoint has a rating head, so ``field_rating`` is added too.
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
            row.record[field] = row.record[f"{field}_calibrated"] = row.record[f"{field}_signature"] = None
            if rating_column:
                row.record[f"{field}_rating"] = None
        if error_column:
            row.record[f"{field}_error"] = f"{row.where}: {row.error}" if row.error else None


def output_columns(
    columns: Sequence[str], field: str = "density", error_column: bool = False, rating_column: bool = False
) -> list[str]:
    """The columns to write: the input's, then those :func:`score_rows` adds (each once)."""
    added = [
        field,
        f"{field}_calibrated",
        *([f"{field}_rating"] if rating_column else []),
        f"{field}_signature",
        *([f"{field}_error"] if error_column else []),
    ]
    return list(dict.fromkeys([*columns, *added]))


def unify_contexts(rows: Sequence[Row], context_field: str = "context") -> None:
    """Where a table gives contexts both as lists and as strings, set each good row's string context to its turns.

    For parquet, which holds one type a column. :func:`write_records` would write a string ``s`` as ``[s]``;
    that loses a ``context_sep`` split, so the turns the row was scored with are written instead.
    Changes the records in place; a table of one kind is left as it is.
    """
    if any(isinstance(row.record.get(context_field), list) for row in rows):
        for row in rows:
            if not row.error and isinstance(row.record.get(context_field), str):
                row.record[context_field] = list(row.context or [])


def _column_names(records: Sequence[dict[str, Any]], columns: Sequence[str]) -> list[str]:
    """``columns``, then every other key of the records, first seen first."""
    return list(dict.fromkeys([*columns, *(key for record in records for key in record)]))


def _json_text(value: Any) -> str:
    """``value`` as JSON text: NaN and infinities (which JSON cannot hold) as null; a lone surrogate escaped."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)
    except ValueError:  # a float JSON cannot hold: null, as JavaScript's JSON.stringify writes it
        text = json.dumps(_finite(value), ensure_ascii=False, default=str)
    if SURROGATE.search(text):  # UTF-8 cannot hold it; JSON's escape (\ud800) can, and reads back the same
        text = json.dumps(json.loads(text), ensure_ascii=True)
    return text


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float (in lists and dicts too) set to None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def _without_surrogates(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (in lists and dicts too) replaced by U+FFFD."""
    if isinstance(value, str):
        return SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {key: _without_surrogates(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_surrogates(item) for item in value]
    return value


def _csv_cell(value: Any) -> Any:
    """One CSV field: lists and dicts as JSON text, strings without lone surrogates, NaN and infinities empty
    (as None, and as jsonl's null), anything else as it is."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (list, dict)):
        return _json_text(value)
    if isinstance(value, str):
        return _without_surrogates(value)
    return value


def _arrow_column(values: list[Any]) -> pa.Array:
    """One pyarrow array for one column's values (None: null), by the rules of the module docstring."""
    import pyarrow as pa

    present = [value for value in values if value is not None]
    if any(isinstance(value, list) for value in present) and all(
        isinstance(value, str) or (isinstance(value, list) and all(isinstance(turn, str) for turn in value))
        for value in present
    ):
        values = [[value] if isinstance(value, str) else value for value in values]
    try:
        return pa.array(values)
    except UnicodeEncodeError:  # a lone surrogate, which UTF-8 cannot hold
        return _arrow_column(_without_surrogates(values))
    except (pa.ArrowException, OverflowError):  # OverflowError: an int past 64 bits
        return pa.array([v if v is None or isinstance(v, str) else _json_text(v) for v in values], type=pa.string())


def arrow_table(records: Sequence[dict[str, Any]], columns: Sequence[str] = ()) -> pa.Table:
    """The records as a ``pyarrow.Table``: columns as :func:`write_records` orders them, one type each from all rows."""
    import pyarrow as pa

    names = _column_names(records, columns)
    return pa.Table.from_arrays(
        [_arrow_column([record.get(name) for record in records]) for name in names], names=names
    )


def check_writable(path: str | Path, fmt: str, records: Sequence[dict[str, Any]], columns: Sequence[str] = ()) -> None:
    """Fail now, before any scoring, where :func:`write_records` would fail later; creates the parent directory.

    For parquet the records are put in an arrow table (one pass over the values, nothing written).

    Raises:
        ValueError: ``"cannot write PATH: ..."``: the path is a directory, an ancestor is a file, or the
            directory cannot be created; or the format is unknown.
    """
    _check_format(fmt, path)
    target = output_target(path)
    if target.is_dir():
        raise ValueError(f"cannot write {path}: it is a directory")
    for parent in target.parents:  # nearest first: the first that exists must be a directory
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"cannot write {path}: {parent} is not a directory")
            break
    temporary = temporary_path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        try:  # what write_records does first: a read-only folder or file system fails here
            open(temporary, "x").close()
        finally:
            temporary.unlink(missing_ok=True)
    except OSError as err:
        raise ValueError(f"cannot write {path}: {err.strerror or err}") from None
    if fmt == "parquet":
        arrow_table(records, columns)


def write_records(path: str | Path, fmt: str, records: Sequence[dict[str, Any]], columns: Sequence[str] = ()) -> None:
    """Write records as a table, whole or not at all, creating the parent directory.

    Columns are ``columns`` then every other key, first seen first; values as the module docstring
    says. The table goes to a hidden temporary file in the same directory, which replaces ``path``
    once complete (:func:`os.replace`); on any exception, Ctrl-C included, it is removed.
    """
    _check_format(fmt, path)
    path = output_target(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = temporary_path(path)
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            table = arrow_table(records, columns)
            with open(temporary, "xb") as handle:
                pq.write_table(table, handle)
                sync(handle)
        else:
            with open(temporary, "x", encoding="utf-8", newline="") as handle:
                if fmt == "jsonl":
                    for record in records:
                        handle.write(_json_text(record) + "\n")
                else:
                    writer = csv.DictWriter(handle, fieldnames=_column_names(records, columns))
                    writer.writeheader()
                    for record in records:
                        writer.writerow({key: _csv_cell(value) for key, value in record.items()})
                sync(handle)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
