"""Tables of (context, response) rows: reading, checking, scoring and writing them.

A table is a file with one record per row, in one of three formats (:data:`FORMATS`):

- ``jsonl``: one JSON object a line (``.jsonl``, ``.json``); blank lines are skipped;
- ``csv``: a header row, then one row a line; every value is a string. Fields may be of any
  length. An empty, unquoted cell of the context or response column is a missing value (pandas writes NaN and None
  so): the row is bad, never scored as empty text (an empty string is ``""``; no context, ``[]``). A row with more values than the header has columns is a bad row (``"5 values for
  3 columns"``), kept as its raw text in ``line`` (as a JSONL line that is not JSON, so no value
  is lost); one with fewer gets None for the missing columns;
- ``parquet``: any columns; ``to_pylist`` gives one dict per row.

A header or schema that names a column twice is refused, naming it (one of the two would be
dropped); a JSON object that gives a key twice is a bad row, kept as its line.

Text is UTF-8; a byte order mark at the start of the file is skipped. The path ``-`` (:data:`STDIN`) reads
standard input (JSONL unless a format is given), named ``<stdin>`` in messages. The input's columns
(:class:`Table`) are the CSV header, the parquet schema, or the keys of the JSON objects,
first seen first.

The context field holds a list of turns (oldest first) or a string: one turn, or split on
``context_sep``. In CSV, a context that parses as a JSON array of strings (as lists are
written, below), or as Python's text of a list of strings (as pandas' ``to_csv`` writes a list), is that list
of turns, in the record too; any other string is one turn or split. The response field holds a string. A row that cannot be read or checked is kept, in
place, with its problem (:class:`Row`); nothing is dropped.

:func:`score_rows` adds to every record ``{field}`` (raw DEnsity score, float),
``{field}_calibrated`` (float in [0, 1]), ``{field}_flags`` (a list of the flags that say the score means little:
``empty``, ``unreadable``, ``punctuation``, ``non-latin``, ``truncated``; :mod:`density_metric.row_flags`) and ``{field}_signature``
(the scorer's signature: checkpoint and revision, max_length, dtype, versions); all are None for a bad row. With
``error_column=True`` it also adds ``{field}_error``: None, or ``"line 3: missing field
'response'"``. Records are written back in input order, with their other fields unchanged.

:func:`read_lines` and :func:`text_pairs` make a table of two line-aligned plain-text files (contexts and
responses, one row a line).

:func:`write_records` writes tables back (:mod:`density_metric.io.table_writer`, re-exported here).

Problems with a whole file are ``ValueError``s naming the file (and the line or row where
known); the command line (``density_metric.cli``) and the demo (``app.py``) turn them into messages.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..results import ScoreChunk, added_columns, score_columns
from .csv_cells import missing_cell
from .inputs import as_context, as_response
from .table_writer import FORMATS, arrow_table, check_format, check_writable, write_records

__all__ = [
    "FORMATS",
    "Row",
    "Table",
    "arrow_table",
    "check_record",
    "check_writable",
    "output_columns",
    "raise_for_bad_rows",
    "raise_for_missing_column",
    "read_lines",
    "read_rows",
    "read_table",
    "score_columns",
    "score_rows",
    "table_format",
    "text_pairs",
    "unify_contexts",
    "write_records",
]

_KNOWN_SUFFIXES = ", ".join(FORMATS)
STDIN = "-"  # the path that reads standard input; messages name it <stdin>
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


def table_format(path: str | Path, fmt: str | None = None) -> str:
    """``fmt`` if given, else the format named by the extension of ``path``: ``"jsonl"``, ``"csv"`` or ``"parquet"``.

    Raises:
        ValueError: for an unknown ``fmt``, or an extension not in :data:`FORMATS`.
    """
    if fmt:
        return check_format(fmt, path)
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"cannot tell the format of {path} from its extension {suffix!r} (known: {_KNOWN_SUFFIXES})")
    return FORMATS[suffix]


Records = list[tuple[dict[str, Any], str, str | None]]  # (record, where, problem or None) per row


def source_name(path: str | Path) -> str:
    """``path`` as messages name it: ``<stdin>`` for :data:`STDIN`."""
    return "<stdin>" if str(path) == STDIN else str(path)


def _open_text(path: Path, newline: str | None = None):
    """The text of ``path`` (of standard input for :data:`STDIN`): UTF-8, a byte order mark skipped."""
    if str(path) == STDIN:  # read whole, so that closing the reader leaves sys.stdin open
        return io.TextIOWrapper(io.BytesIO(sys.stdin.buffer.read()), encoding="utf-8-sig", newline=newline)
    return open(path, encoding="utf-8-sig", newline=newline)


def _read_records(path: Path, fmt: str, fields: Sequence[str] = ()) -> tuple[Records, list[str]]:
    """(record, where, problem or None) per row, in file order, and the table's columns; ``fields``: the columns
    of the pair, where a CSV's empty cell is a missing value (:func:`_read_csv`)."""
    name = source_name(path)
    if fmt == "jsonl":
        rows: Records = []
        columns: dict[str, None] = {}  # an ordered set
        with _open_text(path) as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                if not rows and line.lstrip().startswith("["):  # one JSON array: its lines are no records
                    raise ValueError(
                        f"{name}, line {number}: a JSON array, not JSON Lines; write one object a line "
                        f"(for example: jq -c '.[]' {path.name if name == str(path) else ''})"
                    )
                try:
                    record = json.loads(line, object_pairs_hook=_unique_keys)
                except json.JSONDecodeError as err:
                    rows.append(({"line": line.rstrip("\n")}, f"line {number}", f"invalid JSON ({err.msg})"))
                    continue
                except ValueError as err:  # a key given twice
                    rows.append(({"line": line.rstrip("\n")}, f"line {number}", str(err)))
                    continue
                if not isinstance(record, dict):
                    rows.append(({"value": record}, f"line {number}", "not a JSON object"))
                else:
                    rows.append((record, f"line {number}", None))
                    columns.update(dict.fromkeys(record))
        return rows, list(columns)
    if fmt == "csv":
        return _read_csv(path, fields)
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = pa.BufferReader(sys.stdin.buffer.read()) if str(path) == STDIN else path
    try:
        schema = pq.read_schema(source)
        _refuse_repeated(schema.names, f"{name}: the schema")  # read_table's own error names no file
        table = pq.read_table(source)
    except (pa.ArrowException, OSError) as err:
        if isinstance(err, OSError) and err.errno is not None:
            raise  # the file cannot be opened (missing, no permission): an OSError, as for the other formats
        # A damaged file: pyarrow's ArrowInvalid (a ValueError) or its errno-less OSError, neither naming the file.
        raise ValueError(f"{name}: not a readable parquet file ({err})") from None
    return [(record, f"row {index}", None) for index, record in enumerate(table.to_pylist())], table.column_names


def _refuse_repeated(columns: Sequence[str], where: str) -> None:
    """A ValueError naming the first column that ``columns`` give twice: a dict per row would keep one value."""
    seen = set()
    for name in columns:
        if name in seen:
            raise ValueError(f"{where} names column {name!r} twice; give each column its own name")
        seen.add(name)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object_pairs_hook: the object, or a ValueError naming a key it gives twice (json keeps the last)."""
    record = dict(pairs)
    if len(record) < len(pairs):
        keys = [key for key, _ in pairs]
        raise ValueError(f"gives key {next(key for key in keys if keys.count(key) > 1)!r} twice")
    return record


def _read_csv(path: Path, fields: Sequence[str] = ()) -> tuple[Records, list[str]]:
    """The CSV rows, as the module docstring says; a row with too many values keeps its raw text, as ``line``, and
    one whose cell of ``fields`` is empty and unquoted (a missing value) is a bad row that names the column."""
    # Process-wide and left raised: putting it back could cut short another thread's read.
    csv.field_size_limit(CSV_FIELD_LIMIT)
    consumed: list[str] = []  # the physical lines of the row being parsed (a quoted field may span several)

    def lines(handle):
        for line in handle:
            consumed.append(line)
            yield line

    rows: Records = []
    with _open_text(path, newline="") as handle:
        reader = csv.reader(lines(handle))
        try:
            header = next(reader, [])
            _refuse_repeated(header, f"{source_name(path)}, line {reader.line_num}: the header")
            consumed.clear()  # the header's lines: the first row's raw text starts after them
            for values in reader:
                raw, where = "".join(consumed).rstrip("\r\n"), f"line {reader.line_num}"
                consumed.clear()
                if not values:  # a blank line
                    continue
                if len(values) > len(header):
                    rows.append(({"line": raw}, where, f"{len(values)} values for {len(header)} columns"))
                else:
                    record = dict(zip(header, values + [None] * (len(header) - len(values))))
                    rows.append((record, where, missing_cell(header, values, raw, fields)))
        except csv.Error as err:  # a broken file, not a bad row: the rows after it cannot be placed
            raise ValueError(f"{source_name(path)}, line {reader.line_num}: not valid CSV ({err})") from None
    return rows, header


def _list_turns(text: str) -> list[str] | None:
    """The turns a CSV context holds if it is a list of strings, else None: a JSON array (as lists are written
    here), or the Python list text that pandas' ``DataFrame.to_csv`` writes (``['Hi!', "I'm fine"]``), read by
    :func:`ast.literal_eval`, which builds literals only and never runs code."""
    if not (text.startswith("[") and text.rstrip().endswith("]")):
        return None
    try:
        value = json.loads(text)
    except RecursionError:  # nested too deep for either reader
        return None
    except ValueError:
        try:
            value = ast.literal_eval(text)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):  # not a literal, or nested too deep
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
        path: the table; ``"-"`` (:data:`STDIN`): standard input, named ``<stdin>`` in messages.
        fmt: ``"jsonl"``, ``"csv"`` or ``"parquet"``; None: from the extension (:func:`table_format`), and
            ``"jsonl"`` for standard input.
        context_field, response_field: the columns holding the pair.
        context_sep: split string contexts into turns on this; None: a string is one turn.

    Returns:
        The rows and the input's columns (for a table with no rows, the CSV header or parquet schema).

    Raises:
        ValueError: naming the file, for an unknown format, text that is not UTF-8, broken CSV (with
            its line), a JSON array in place of JSON Lines or a damaged parquet file;
            or for an empty ``context_sep``.
        OSError: the file cannot be opened (missing, a directory, no permission).
    """
    if context_sep == "":
        raise ValueError("context_sep must not be empty (None: a string context is one turn)")
    path = Path(path)
    fmt = table_format(path, fmt or ("jsonl" if str(path) == STDIN else None))
    try:
        records, columns = _read_records(path, fmt, (context_field, response_field))
    except UnicodeDecodeError as err:
        raise ValueError(f"{source_name(path)}: not UTF-8 text ({err.reason})") from None
    rows = []
    for record, where, problem in records:
        if problem:
            rows.append(Row(record, where, error=problem))
            continue
        if fmt == "csv" and isinstance(record.get(context_field), str):
            turns = _list_turns(record[context_field])
            if turns is not None:
                record[context_field] = turns  # the list it was written from
        rows.append(
            check_record(
                record, where, context_field=context_field, response_field=response_field, context_sep=context_sep
            )
        )
    return Table(rows, columns)


def read_lines(path: str | Path) -> list[str]:
    """The lines of a plain-text file, one row each, without their ends: UTF-8, a byte order mark skipped.
    A line ends at ``\\n``, ``\\r\\n`` or ``\\r`` only (not at U+2028 or a form feed, as ``str.splitlines`` would).

    Raises:
        ValueError: naming the file, for text that is not UTF-8.
        OSError: the file cannot be opened.
    """
    try:
        with open(path, encoding="utf-8-sig") as handle:  # universal newlines: every end is read as one "\n"
            return [line.removesuffix("\n") for line in handle]
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err.reason})") from None


def text_pairs(
    contexts_path: str | Path,
    contexts: Sequence[str],
    responses_path: str | Path,
    responses: Sequence[str],
    *,
    context_field: str = "context",
    response_field: str = "response",
    context_sep: str | None = None,
) -> Table:
    """A table of line-aligned plain-text files (:func:`read_lines`): row i is ``{context_field: contexts[i],
    response_field: responses[i]}``, checked as :func:`read_table` checks a record (a context is one turn, or
    split on ``context_sep``); ``where`` is ``"line i"``, 1-based.

    Raises:
        ValueError: naming both files and their line counts, where these differ.
    """
    if len(contexts) != len(responses):
        raise ValueError(
            f"{contexts_path} has {len(contexts)} lines but {responses_path} has {len(responses)}; "
            "give one line per row in each"
        )
    rows = [
        check_record(
            {context_field: context, response_field: response},
            f"line {number}",
            context_field=context_field,
            response_field=response_field,
            context_sep=context_sep,
        )
        for number, (context, response) in enumerate(zip(contexts, responses), start=1)
    ]
    return Table(rows, [context_field, response_field])


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


def raise_for_missing_column(path: str | Path, table: Table, field: str) -> None:
    """Raise a ValueError if ``field`` is none of the table's columns: no row could be scored, so the field's
    name is wrong, not the rows. A table whose columns are unknown (no row could be read) passes.

    E.g. ``"in.jsonl: no row has the field 'ctx' (columns: 'context', 'response')"``.
    """
    if table.columns and field not in table.columns:
        names = ", ".join(map(repr, table.columns))
        raise ValueError(f"{path}: no row has the field {field!r} (columns: {names})")


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
    """Score the good rows ``chunk_rows`` at a time and add ``field``, ``field_calibrated``, ``field_flags`` and
    ``field_signature`` to every record.

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
            for name in output_columns((), field, rating_column=rating_column):
                row.record[name] = None
        if error_column:
            row.record[f"{field}_error"] = f"{row.where}: {row.error}" if row.error else None


def output_columns(
    columns: Sequence[str], field: str = "density", error_column: bool = False, rating_column: bool = False
) -> list[str]:
    """The columns to write: the input's, then those :func:`score_rows` adds (:func:`~density_metric.results.added_columns`,
    then ``{field}_error`` with ``error_column``; each once)."""
    added = [*added_columns(field, rating_column), *([f"{field}_error"] if error_column else [])]
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
