"""Writing tables: :func:`write_records` (whole or not at all) and :func:`check_writable` (its checks, before any work).

:func:`write_records` writes the columns it is given (the input's and the score columns:
:func:`~density_metric.io.tables.output_columns`), then any other key of any record, first seen first; so a
header-only CSV keeps its header. It writes to a hidden temporary file next to the target
and renames it over the target when complete: a file at the path is always a whole table,
and an interrupted write (Ctrl-C) leaves the previous file, or none, and no temporary file
(``kill -9`` can leave a ``.NAME.*.tmp``, never a partial NAME). A symlink at the path is
written through (:func:`~density_metric.io.outputs.output_target`): the file it points to is replaced, the link stays.
:func:`check_writable` creates and removes such a temporary file, so a read-only folder fails
before any scoring. Values, by format:

- ``jsonl``: as JSON; what JSON cannot hold as null (NaN, infinities) or as its ``str`` (dates or
  bytes from parquet); a lone surrogate (``"\ud800"`` in a JSON input: a bad row) as JSON's escape;
- ``csv``: lists and dicts as JSON text (a context ``["Hi", "How are you?"]`` reads back as
  that list), None, NaN and infinities as an empty field, an empty string as ``""`` (an empty unquoted field reads
  back as a missing value), anything else as its ``str``; a lone surrogate in a string
  as U+FFFD (UTF-8 cannot hold it);
- ``parquet``: one type a column, from all rows. A column of strings and lists of strings
  (contexts given both ways) is written as lists: a string ``s`` as ``[s]``, the one turn it
  is read as (:func:`~density_metric.io.tables.unify_contexts` first sets good rows' strings to the turns they were
  scored with, which keeps a ``context_sep`` split). A column of lists of strings is ``list<string>``, even where
  every list is empty (the flags of a table without a flagged row). Any other column that no one arrow type holds (ids ``1`` and ``"b-2"``,
  ``True`` and ``2``) is written as strings: strings as they are, other values as JSON text.
  Ints and floats together are floats. A lone surrogate in a string is written as U+FFFD.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .inputs import SURROGATE
from .outputs import check_output_path, replacing

if TYPE_CHECKING:
    import pyarrow as pa

FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".csv": "csv", ".parquet": "parquet"}
FORMAT_NAMES = sorted(set(FORMATS.values()))


def check_format(fmt: str | None, path: str | Path) -> str:
    """``fmt`` itself, or a ValueError naming it and the file."""
    if fmt not in FORMAT_NAMES:
        raise ValueError(f"unknown table format {fmt!r} for {path}; formats: {', '.join(FORMAT_NAMES)}")
    return fmt


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


def _csv_line(names: Sequence[str], cells: dict[str, Any]) -> str:
    """One CSV row as ``csv.writer`` writes it, except that an empty string is ``""``: an empty unquoted cell reads
    back as a missing value (:mod:`density_metric.io.csv_cells`), as None and NaN are written."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    fields = []
    for name in names:
        value = cells.get(name)
        if value is None or value == "" and isinstance(value, str):
            fields.append("" if value is None else '""')
            continue
        buffer.seek(0)
        buffer.truncate()
        writer.writerow([value])
        fields.append(buffer.getvalue().removesuffix("\r\n"))
    return ",".join(fields) + "\r\n"


def _arrow_column(values: list[Any]) -> pa.Array:
    """One pyarrow array for one column's values (None: null), by the rules of the module docstring."""
    import pyarrow as pa

    present = [value for value in values if value is not None]
    arrow_type = None
    if any(isinstance(value, list) for value in present) and all(
        isinstance(value, str) or (isinstance(value, list) and all(isinstance(turn, str) for turn in value))
        for value in present
    ):
        values = [[value] if isinstance(value, str) else value for value in values]
        arrow_type = pa.list_(pa.string())  # also where every list is empty (the flags of unflagged rows)
    try:
        return pa.array(values, type=arrow_type)
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
    check_format(fmt, path)
    check_output_path(path)
    if fmt == "parquet":
        arrow_table(records, columns)


def write_records(path: str | Path, fmt: str, records: Sequence[dict[str, Any]], columns: Sequence[str] = ()) -> None:
    """Write records as a table, whole or not at all, creating the parent directory.

    Columns are ``columns`` then every other key, first seen first; values as the module docstring
    says. The table goes to a hidden temporary file in the same directory, which replaces ``path``
    once complete (:func:`os.replace`); on any exception, Ctrl-C included, it is removed.
    """
    check_format(fmt, path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        table = arrow_table(records, columns)
        with replacing(path, "xb") as handle:
            pq.write_table(table, handle)
        return
    with replacing(path, encoding="utf-8", newline="") as handle:
        if fmt == "jsonl":
            for record in records:
                handle.write(_json_text(record) + "\n")
        else:
            names = _column_names(records, columns)
            writer = csv.DictWriter(handle, fieldnames=names)
            writer.writeheader()
            for record in records:
                cells = {key: _csv_cell(value) for key, value in record.items()}
                if any(cell == "" and isinstance(cell, str) for cell in cells.values()):
                    handle.write(_csv_line(names, cells))
                else:
                    writer.writerow(cells)
