"""Missing cells of a CSV table: an empty, unquoted cell is a missing value (pandas writes NaN and None so), which
:mod:`density_metric.io.tables` never reads as empty text; an empty string is a quoted ``""``, as
:func:`~density_metric.io.table_writer.write_records` writes it. Python's ``csv`` reader gives both as ``""`` (its
``QUOTE_NOTNULL`` reading needs Python 3.12), so the row's own text says which it was.
"""

from __future__ import annotations

from collections.abc import Sequence


def missing_cell(header: Sequence[str], values: Sequence[str], raw: str, fields: Sequence[str]) -> str | None:
    """The problem of a CSV row whose cell of one of ``fields`` is empty and unquoted, or None. Such a cell is a
    missing value (the module docstring), never read as empty text. ``fields``: the context's column, then the
    response's."""
    columns = [header.index(field) for field in fields if field in header]
    empty = [index for index in columns if index < len(values) and values[index] == ""]
    if not empty:
        return None
    quoted = quoted_fields(raw)
    for index in empty:
        if not quoted[index]:
            hint = "[] for no context" if index == header.index(fields[0]) else '"" (quoted) for an empty reply'
            return f"{header[index]} is an empty cell, a missing value (NaN, None), not empty text; write {hint}"
    return None


def quoted_fields(raw: str) -> list[bool]:
    """Per field of one CSV row's text (the default dialect), whether it opens with a quote."""
    quoted, in_quotes, start = [], False, True
    for char in raw:
        if start:
            quoted.append(char == '"')
            start, in_quotes = False, char == '"'
            if in_quotes:
                continue
        if char == '"' and (in_quotes or quoted[-1]):
            in_quotes = not in_quotes  # a closing quote, or the second of an escaped pair ("")
        elif char == "," and not in_quotes:
            start = True
    return quoted + [False] * start
