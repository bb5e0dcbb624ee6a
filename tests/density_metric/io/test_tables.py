"""density_metric.io.tables: formats, reading and checking rows, scoring in chunks, writing; no model needed."""

import csv
import json
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from density_metric.io.tables import (
    Row,
    output_columns,
    raise_for_bad_rows,
    raise_for_missing_column,
    read_rows,
    read_table,
    score_columns,
    score_rows,
    table_format,
    write_records,
)
from density_metric.scoring import DensityResult

RECORDS = [
    {"id": 1, "context": ["hi", "how are you"], "response": "fine thanks"},
    {"id": 2, "context": ["what is the weather"], "response": "nice day, ça va"},
    {"id": 3, "context": [], "response": "hello"},
]


# The columns score_rows adds to every row (with error_column, density_error after them).
SCORE_COLUMNS = ["density", "density_calibrated", "density_flags", "density_signature"]


def fake_scorer(calls=None):
    """A score_chunk without a model: raw score = -(response length), calibrated = 1 / (1 + length)."""

    def score_chunk(contexts, responses):
        if calls is not None:
            calls.append(len(responses))
        lengths = np.array([len(r) for r in responses], dtype=np.float64)
        return DensityResult(-lengths, 1.0 / (1.0 + lengths), "fake")

    return score_chunk


def write_jsonl_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


@pytest.mark.parametrize(
    "name, fmt", [("a.jsonl", "jsonl"), ("a.JSON", "jsonl"), ("a.csv", "csv"), ("a.parquet", "parquet")]
)
def test_format_comes_from_the_extension(tmp_path, name, fmt):
    assert table_format(tmp_path / name) == fmt


def test_given_format_wins_and_unknown_ones_name_the_file(tmp_path):
    assert table_format(tmp_path / "a.txt", "csv") == "csv"
    with pytest.raises(ValueError, match=r"cannot tell the format of .*a\.txt from its extension '\.txt'"):
        table_format(tmp_path / "a.txt")
    with pytest.raises(ValueError, match=r"unknown table format 'xml' for .*a\.txt"):
        table_format(tmp_path / "a.txt", "xml")


def test_jsonl_rows_are_checked_and_kept_in_file_order(tmp_path):
    write_jsonl_lines(
        tmp_path / "in.jsonl",
        [
            json.dumps(RECORDS[0]),
            "",  # blank lines are skipped but still counted
            "{broken",
            "[1, 2]",
            json.dumps({"context": ["hi"]}),
            json.dumps({"context": ["hi", 3], "response": "x"}),
            json.dumps({"context": None, "response": "x"}),
            json.dumps({"context": "one turn", "response": None}),
            json.dumps(RECORDS[2]),
        ],
    )
    rows = read_rows(tmp_path / "in.jsonl", "jsonl", context_field="context", response_field="response")
    assert [row.where for row in rows] == [f"line {n}" for n in (1, 3, 4, 5, 6, 7, 8, 9)]
    assert [row.error for row in rows] == [
        None,
        "invalid JSON (Expecting property name enclosed in double quotes)",
        "not a JSON object",
        "missing field 'response'",
        "context[1] must be a string, got int",
        "context is None; give a list of turns (an empty list for no context)",
        "response must be a string, got NoneType",
        None,
    ]
    assert rows[0].record == RECORDS[0]
    assert rows[0].context == ["hi", "how are you"] and rows[0].response == "fine thanks"
    assert rows[1].record == {"line": "{broken"} and rows[2].record == {"value": [1, 2]}
    assert rows[-1].context == [] and rows[-1].response == "hello"


def test_a_missing_field_is_a_value_error_naming_file_line_and_field(tmp_path):
    write_jsonl_lines(tmp_path / "in.jsonl", [json.dumps(RECORDS[0]), json.dumps({"context": ["hi"]}), "{broken"])
    rows = read_rows(tmp_path / "in.jsonl", "jsonl")
    with pytest.raises(ValueError, match=r"in\.jsonl, line 2: missing field 'response' \(2 bad row\(s\) in all\)"):
        raise_for_bad_rows(tmp_path / "in.jsonl", rows)
    raise_for_bad_rows(tmp_path / "in.jsonl", rows[:1])  # good rows only: no error


def test_custom_fields_and_context_separator(tmp_path):
    with open(tmp_path / "in.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["history", "reply"])
        writer.writeheader()
        writer.writerows([{"history": "hi || how are you", "reply": "fine"}, {"history": "[]", "reply": "hello"}])
    rows = read_rows(tmp_path / "in.csv", context_field="history", response_field="reply", context_sep=" || ")
    assert [(row.where, row.context, row.response, row.error) for row in rows] == [
        ("line 2", ["hi", "how are you"], "fine", None),
        ("line 3", [], "hello", None),
    ]
    # Without a separator a string context is one turn; the default field names are then missing.
    assert read_rows(tmp_path / "in.csv", context_field="history", response_field="reply")[0].context == [
        "hi || how are you"
    ]
    assert read_rows(tmp_path / "in.csv")[0].error == "missing field 'context'"


def test_parquet_rows_are_named_by_their_index(tmp_path):
    pq.write_table(pa.Table.from_pylist([RECORDS[0], {**RECORDS[1], "response": None}]), tmp_path / "in.parquet")
    rows = read_rows(tmp_path / "in.parquet")
    assert [(row.where, row.error) for row in rows] == [
        ("row 0", None),
        ("row 1", "response must be a string, got NoneType"),
    ]


def test_unreadable_files_are_value_errors_naming_the_file(tmp_path):
    (tmp_path / "latin1.jsonl").write_bytes(b'{"context": ["caf\xe9"], "response": "x"}\n')
    with pytest.raises(ValueError, match=r"latin1\.jsonl: not UTF-8 text"):
        read_rows(tmp_path / "latin1.jsonl")


@pytest.mark.parametrize("damage", ["not parquet", "truncated"])
def test_a_damaged_parquet_file_is_a_value_error_naming_it(tmp_path, damage):
    pq.write_table(pa.Table.from_pylist(RECORDS * 20), tmp_path / "whole.parquet")
    data = (tmp_path / "whole.parquet").read_bytes()
    path = tmp_path / "in.parquet"
    path.write_bytes(b"id,context,response\n" if damage == "not parquet" else data[: len(data) // 2] + data[-64:])
    with pytest.raises(ValueError, match=f"^{re.escape(str(path))}: not a readable parquet file "):
        read_rows(path)


def test_a_field_that_no_row_has_is_a_value_error_naming_the_columns(tmp_path):
    (tmp_path / "in.csv").write_text("id,ctx,response\n1,hi,fine\n", encoding="utf-8")
    table = read_table(tmp_path / "in.csv")
    with pytest.raises(
        ValueError, match=r"in\.csv: no row has the field 'context' \(columns: 'id', 'ctx', 'response'\)"
    ):
        raise_for_missing_column(tmp_path / "in.csv", table, "context")
    raise_for_missing_column(tmp_path / "in.csv", table, "ctx")  # some row has it: no error


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_records_written_read_back_unchanged(tmp_path, fmt):
    path = tmp_path / "sub" / f"out.{fmt}"  # the directory is created
    records = [{**record, "context": " | ".join(record["context"])} for record in RECORDS]
    write_records(path, fmt, records)
    rows = read_rows(path, context_sep=" | ")
    expected = [{key: str(value) for key, value in record.items()} for record in records] if fmt == "csv" else records
    assert [row.record for row in rows] == expected
    assert [row.context for row in rows] == [record["context"] for record in RECORDS]
    assert all(row.error is None for row in rows)


def test_csv_columns_are_the_union_of_keys_first_seen_first(tmp_path):
    write_records(tmp_path / "out.csv", "csv", [{"b": 1, "a": 2}, {"a": 3, "c": 4}])
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as handle:
        assert list(csv.reader(handle)) == [["b", "a", "c"], ["1", "2", ""], ["", "3", "4"]]


def test_csv_writes_nan_and_infinities_as_empty_fields_like_none(tmp_path):
    records = [{"s": float("nan"), "t": float("inf"), "u": -float("inf"), "v": None, "w": 1.5}]
    write_records(tmp_path / "out.csv", "csv", records)
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as handle:
        assert list(csv.reader(handle)) == [["s", "t", "u", "v", "w"], ["", "", "", "", "1.5"]]


def test_score_columns_names_the_output_columns():
    columns = score_columns(fake_scorer(), [["hi"], []], ["abc", ""], field="s")
    assert columns == {
        "s": [-3.0, -0.0],
        "s_calibrated": [0.25, 1.0],
        "s_flags": [[], []],
        "s_signature": ["fake", "fake"],
    }
    assert all(type(value) is float for name in ("s", "s_calibrated") for value in columns[name])


def test_score_rows_scores_good_rows_in_chunks_and_marks_bad_ones():
    rows = [Row({"id": i}, f"line {i + 1}", ["hi"], "x" * i) for i in range(5)]
    rows[2] = Row({"id": 2}, "line 3", error="missing field 'response'")
    calls, tracked = [], []

    def track(chunks):
        tracked.append([len(chunk) for chunk in chunks])
        return iter(chunks)

    score_rows(rows, fake_scorer(calls), chunk_rows=3, track=track, error_column=True)
    assert calls == [3, 1] and tracked == [[3, 1]]
    assert [list(row.record) for row in rows] == [["id", *SCORE_COLUMNS, "density_error"]] * 5
    assert [row.record["density_signature"] for row in rows] == ["fake", "fake", None, "fake", "fake"]
    assert [row.record["density"] for row in rows] == [0.0, -1.0, None, -3.0, -4.0]
    assert [row.record["density_calibrated"] for row in rows] == [1.0, 0.5, None, 0.25, 0.2]
    assert [row.record["density_error"] for row in rows] == [None, None, "line 3: missing field 'response'", None, None]


def test_score_rows_without_error_column_or_good_rows():
    rows = [Row({}, "row 0", error="not a JSON object")]
    calls = []
    score_rows(rows, fake_scorer(calls), field="s")
    assert calls == [] and rows[0].record == {"s": None, "s_calibrated": None, "s_flags": None, "s_signature": None}


def read_csv_lines(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_a_csv_field_over_the_default_csv_limit_is_read(tmp_path):
    # Python's csv module stops at 131,072 characters a field unless told otherwise.
    (tmp_path / "long.csv").write_text("context,response\nhi,fine\nhi," + "x" * 200_000 + "\n", encoding="utf-8")
    rows = read_rows(tmp_path / "long.csv")
    assert [row.error for row in rows] == [None, None] and rows[1].response == "x" * 200_000


@pytest.mark.parametrize(
    "name, text",
    [
        ("bom.jsonl", '{"context": ["hi"], "response": "fine"}\n'),
        ("bom.csv", "context,response\nhi,fine\n"),
    ],
)
def test_a_utf8_byte_order_mark_is_not_part_of_the_first_line(tmp_path, name, text):
    (tmp_path / name).write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    table = read_table(tmp_path / name)
    assert [(row.context, row.response, row.error) for row in table.rows] == [(["hi"], "fine", None)]
    assert table.columns == ["context", "response"]


def test_a_header_only_csv_keeps_its_columns_in_the_output(tmp_path):
    (tmp_path / "empty.csv").write_text("id,context,response\n", encoding="utf-8")
    table = read_table(tmp_path / "empty.csv")
    assert table.rows == [] and table.columns == ["id", "context", "response"]
    columns = output_columns(table.columns, field="density", error_column=True)
    assert columns == ["id", "context", "response", *SCORE_COLUMNS, "density_error"]
    write_records(tmp_path / "out.csv", "csv", [], columns=columns)
    assert read_csv_lines(tmp_path / "out.csv") == [columns]
    write_records(tmp_path / "out.parquet", "parquet", [], columns=columns)
    assert pq.read_table(tmp_path / "out.parquet").column_names == columns


def test_a_csv_row_with_more_values_than_columns_is_a_bad_row_naming_the_counts(tmp_path):
    (tmp_path / "in.csv").write_text("id,context,response\n1,hi,fine\n2,hi,fine,extra,more\n", encoding="utf-8")
    rows = read_rows(tmp_path / "in.csv")
    assert [(row.where, row.error) for row in rows] == [("line 2", None), ("line 3", "5 values for 3 columns")]
    assert rows[1].record == {"line": "2,hi,fine,extra,more"}  # its raw line, as a JSONL line that is not JSON
    with pytest.raises(ValueError, match=r"in\.csv, line 3: 5 values for 3 columns"):
        raise_for_bad_rows(tmp_path / "in.csv", rows)


def test_csv_writes_list_contexts_as_json_arrays_and_reads_them_back_as_lists(tmp_path):
    records = [
        {"context": ["Hi, you", 'say "x"', "two\nlines"], "response": "fine"},
        {"context": [], "response": "hello"},
        {"context": "one turn, not a list", "response": "ok"},
    ]
    write_records(tmp_path / "out.csv", "csv", records)
    assert read_csv_lines(tmp_path / "out.csv")[1][0] == '["Hi, you", "say \\"x\\"", "two\\nlines"]'
    rows = read_rows(tmp_path / "out.csv")
    assert [row.context for row in rows] == [["Hi, you", 'say "x"', "two\nlines"], [], ["one turn, not a list"]]
    assert [row.record["context"] for row in rows] == [record["context"] for record in records]


@pytest.mark.parametrize("text", ["[not json", '["a", 1]', '{"a": "b"}', "[]x"])
def test_a_csv_context_that_is_not_a_json_array_of_strings_is_one_turn_or_split(tmp_path, text):
    write_records(tmp_path / "in.csv", "csv", [{"context": text + " | b", "response": "r"}])
    assert read_rows(tmp_path / "in.csv")[0].context == [text + " | b"]
    assert read_rows(tmp_path / "in.csv", context_sep=" | ")[0].context == [text, "b"]


def test_parquet_columns_come_from_every_row_not_the_first(tmp_path):
    records = [{"context": ["hi"], "response": "a"}, {"context": ["hi"], "response": "b", "late": 2.5}]
    write_records(tmp_path / "out.parquet", "parquet", records)
    assert [row.record for row in read_rows(tmp_path / "out.parquet")] == [{**records[0], "late": None}, records[1]]


def test_parquet_after_a_malformed_first_line_keeps_every_input_column(tmp_path):
    write_jsonl_lines(tmp_path / "in.jsonl", ["{broken", json.dumps(RECORDS[0]), json.dumps(RECORDS[1])])
    table = read_table(tmp_path / "in.jsonl")
    assert table.columns == ["id", "context", "response"]  # a bad line's {"line": ...} is not an input column
    score_rows(table.rows, fake_scorer(), error_column=True)
    columns = output_columns(table.columns, field="density", error_column=True)
    write_records(tmp_path / "out.parquet", "parquet", [row.record for row in table.rows], columns=columns)
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.column_names == [*columns, "line"]
    assert out.column("id").to_pylist() == [None, 1, 2]
    assert out.column("density").to_pylist() == [None, -11.0, -15.0]


def test_parquet_mixed_list_and_string_contexts_are_one_list_column(tmp_path):
    records = [{"context": ["hi", "there"], "response": "a"}, {"context": "one turn", "response": "b"}]
    write_records(tmp_path / "out.parquet", "parquet", records)
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.schema.field("context").type == pa.list_(pa.string())
    assert [row.context for row in read_rows(tmp_path / "out.parquet")] == [["hi", "there"], ["one turn"]]


def test_parquet_columns_of_mixed_types_fall_back_to_strings(tmp_path):
    records = [
        {"id": 1, "meta": {"a": 1}, "flag": True, "x": 1, "context": ["hi"], "response": "a"},
        {"id": "b-2", "meta": [1, "x"], "flag": 2, "x": 2.5, "context": ["hi"], "response": "b"},
        {"id": None, "meta": None, "flag": None, "x": None, "context": ["hi"], "response": "c"},
    ]
    write_records(tmp_path / "out.parquet", "parquet", records)
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.column("id").to_pylist() == ["1", "b-2", None]
    assert out.column("meta").to_pylist() == ['{"a": 1}', '[1, "x"]', None]
    assert out.column("flag").to_pylist() == ["true", "2", None]
    assert out.column("x").to_pylist() == [1.0, 2.5, None]  # ints and floats are numbers: one float column


class Interrupt:
    """A value whose text is asked for while the file is being written: Ctrl-C at that moment."""

    def __str__(self):
        raise KeyboardInterrupt


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_an_interrupted_write_leaves_the_previous_file_whole_and_no_temporary_file(tmp_path, fmt):
    path = tmp_path / f"out.{fmt}"
    path.write_text("previous\n", encoding="utf-8")
    records = [{"context": ["hi"], "response": "x" * 100}] * 5000 + [{"context": ["hi"], "response": Interrupt()}]
    with pytest.raises(KeyboardInterrupt):
        write_records(path, fmt, records)
    assert path.read_text(encoding="utf-8") == "previous\n"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_a_finished_write_replaces_the_file_and_keeps_its_usual_permissions(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_text("previous\n", encoding="utf-8")
    write_records(path, "jsonl", RECORDS)
    (tmp_path / "plain").write_text("")
    assert [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] == RECORDS
    assert path.stat().st_mode == (tmp_path / "plain").stat().st_mode  # the umask's, not mkstemp's 0600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl", "plain"]


def test_a_csv_row_with_more_values_than_columns_is_written_back_with_every_value(tmp_path):
    """--on-error skip keeps a bad row; the values past the header's columns must survive into the output."""
    text = 'id,context,response\n1,hi,fine\n2,"two\nlines",fine,extra,"more, and more"\n'
    (tmp_path / "in.csv").write_text(text, encoding="utf-8")
    table = read_table(tmp_path / "in.csv")
    score_rows(table.rows, fake_scorer(), error_column=True)
    columns = output_columns(table.columns, error_column=True)
    for fmt in ("jsonl", "csv"):
        write_records(tmp_path / f"out.{fmt}", fmt, [row.record for row in table.rows], columns=columns)
    bad = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()][1]
    assert bad["line"] == '2,"two\nlines",fine,extra,"more, and more"'
    assert bad["density"] is None and bad["density_error"] == "line 4: 5 values for 3 columns"  # where the row ends
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as handle:
        assert list(csv.DictReader(handle))[1]["line"] == bad["line"]


@pytest.mark.parametrize("header", ["context,response,response", "response,context,Id,id,context"])
def test_a_csv_header_that_names_a_column_twice_is_refused_naming_it(tmp_path, header):
    (tmp_path / "in.csv").write_text(header + "\n" + ",".join("x" * len(header.split(","))) + "\n", encoding="utf-8")
    name = "response" if header.startswith("context") else "context"
    with pytest.raises(ValueError, match=rf"in\.csv, line 1: the header names column '{name}' twice"):
        read_table(tmp_path / "in.csv")


def test_a_parquet_file_that_names_a_column_twice_is_refused_naming_it(tmp_path):
    table = pa.Table.from_arrays(
        [pa.array(["hi"]), pa.array(["a"]), pa.array(["b"])], ["context", "response", "response"]
    )
    pq.write_table(table, tmp_path / "in.parquet")
    with pytest.raises(ValueError, match=r"in\.parquet: the schema names column 'response' twice"):
        read_table(tmp_path / "in.parquet")


def test_a_jsonl_object_that_gives_a_key_twice_is_a_bad_row_naming_it(tmp_path):
    write_jsonl_lines(
        tmp_path / "in.jsonl", ['{"context": "hi", "response": "a", "response": "b"}', json.dumps(RECORDS[0])]
    )
    rows = read_rows(tmp_path / "in.jsonl")
    assert [(row.where, row.error) for row in rows] == [("line 1", "gives key 'response' twice"), ("line 2", None)]
    assert rows[0].record == {"line": '{"context": "hi", "response": "a", "response": "b"}'}
