"""Property: any rows, written as JSONL, CSV or parquet and read back, come out complete and in order.

No model: scores come from a fake ``score_chunk``. Text has any unicode (no lone surrogates,
which UTF-8 cannot hold), with quotes, commas, newlines and separators made likely.
"""

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from density_metric.io.tables import output_columns, read_rows, score_rows, write_records
from density_metric.scoring import DensityResult

TEXT = st.text(
    alphabet=st.one_of(
        st.characters(exclude_categories=("Cs",)),
        st.sampled_from(list("\",\n\r'; |[]{}\\é☕\u2028\x00")),
    ),
    max_size=12,
)


def is_json_list_of_strings(text: str) -> bool:
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


# A CSV context that is a JSON array of strings reads back as that list (documented in tables.py), so a
# string context that happens to be one is left out: written as a string, it would not read back as one turn.
CONTEXT = st.one_of(st.lists(TEXT, max_size=4), TEXT.filter(lambda text: not is_json_list_of_strings(text)))
SCALARS = {
    "int": st.integers(-(2**63), 2**63 - 1),
    "float": st.floats(allow_nan=False, allow_infinity=False),
    "bool": st.booleans(),
    "str": TEXT,
}


@st.composite
def tables(draw) -> tuple[list[dict], list[str]]:
    """Records of context, response and up to 3 extra fields of one JSON scalar type each (or None)."""
    kinds = draw(st.dictionaries(st.sampled_from(["id", "note", "weight", "flag"]), st.sampled_from(sorted(SCALARS))))
    records = [
        {
            "context": draw(CONTEXT),
            "response": draw(TEXT),
            **{name: draw(st.none() | SCALARS[kind]) for name, kind in kinds.items()},
        }
        for _ in range(draw(st.integers(0, 8)))
    ]
    return records, ["context", "response", *kinds]


def fake_scorer(contexts, responses) -> DensityResult:
    """Raw score -(number of turns + response length); calibrated 1 / (1 + that)."""
    sizes = np.array([len(c) + len(r) for c, r in zip(contexts, responses)], dtype=np.float64)
    return DensityResult(-sizes, 1.0 / (1.0 + sizes), "fake")


def as_read(fmt: str, value):
    """An extra field's value as it reads back: CSV holds text only (None: an empty field)."""
    if fmt != "csv":
        return value
    return "" if value is None else str(value)


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=tables())
def test_rows_written_and_read_back_are_complete_and_in_order(tmp_path, fmt, table):
    records, columns = table
    path = tmp_path / f"table.{fmt}"
    write_records(path, fmt, records, columns=columns)
    rows = read_rows(path)
    assert len(rows) == len(records)
    assert [row.error for row in rows] == [None] * len(records)
    assert [row.context for row in rows] == [c if isinstance(c, list) else [c] for c in (r["context"] for r in records)]
    assert [row.response for row in rows] == [record["response"] for record in records]
    for name in columns[2:]:
        assert [row.record[name] for row in rows] == [as_read(fmt, record[name]) for record in records]

    # Scored and written again (score columns added), every row and field is still there, in order.
    score_rows(rows, fake_scorer, error_column=True)
    write_records(path, fmt, [row.record for row in rows], columns=output_columns(columns, error_column=True))
    again = read_rows(path)
    assert [row.context for row in again] == [row.context for row in rows]
    assert [row.response for row in again] == [row.response for row in rows]
    for name in [*columns[2:], "density", "density_calibrated"]:
        assert [row.record[name] for row in again] == [as_read(fmt, row.record[name]) for row in rows]
