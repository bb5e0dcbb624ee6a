"""Missing cells (issue 68): a NaN or None context or reply in a table is a bad row, named by its row and column, or
skipped with ``--on-error skip``; never scored as empty text, never counted in the mean."""

import csv

import numpy as np
import pandas as pd
import pytest

from density_metric.cli import main
from density_metric.io.tables import read_table, write_records
from tests.density_metric.cli.test_cli import error_line, read_jsonl, run

FRAME = pd.DataFrame(
    {
        "context": ["hi", None, np.nan, "how are you", "good day"],
        "response": ["hello", "fine", "nice day", np.nan, "good day to you"],
    }
)
MISSING = {"line 3": "context", "line 4": "context", "line 5": "response"}  # pandas writes NaN and None alike


def test_an_empty_unquoted_csv_cell_is_a_bad_row_naming_its_line_and_column(tmp_path):
    """Issue 68: pandas' NaN context was scored as an empty context, its NaN reply as an empty reply."""
    FRAME.to_csv(tmp_path / "in.csv", index=False)
    rows = read_table(tmp_path / "in.csv").rows
    bad = {row.where: row.error for row in rows if row.error}
    assert set(bad) == set(MISSING)
    for where, column in MISSING.items():
        assert bad[where].startswith(f"{column} is an empty cell, a missing value (NaN, None), not empty text")
    assert [(row.context, row.response) for row in rows if not row.error] == [
        (["hi"], "hello"),
        (["good day"], "good day to you"),
    ]


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_null_and_nan_cells_of_parquet_and_jsonl_are_bad_rows_too(tmp_path, fmt):
    path = tmp_path / f"in.{fmt}"
    if fmt == "parquet":
        FRAME.to_parquet(path)
    else:
        FRAME.to_json(path, orient="records", lines=True)
    rows = read_table(path).rows
    assert [row.error is not None for row in rows] == [False, True, True, True, False]
    assert all(("context" if i < 3 else "response") in rows[i].error for i in (1, 2, 3))


def test_an_empty_string_is_written_quoted_and_reads_back_as_empty_text(tmp_path):
    records = [{"context": "", "response": "", "id": None}, {"context": [], "response": "x", "id": 2}]
    write_records(tmp_path / "out.csv", "csv", records, ["context", "response", "id"])
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as handle:
        assert handle.read().splitlines()[1] == '"","",'
    rows = read_table(tmp_path / "out.csv").rows
    assert [(row.context, row.response, row.error) for row in rows] == [([""], "", None), ([], "x", None)]
    assert rows[0].record["id"] == ""  # another column's empty cell is kept as it was


def test_the_score_command_refuses_a_missing_cell_or_skips_it_out_of_the_mean(tiny_checkpoint, tmp_path, capsys):
    FRAME.to_csv(tmp_path / "in.csv", index=False)
    line = error_line(capsys, run, tiny_checkpoint, tmp_path / "in.csv", "-o", tmp_path / "out.jsonl")
    assert "in.csv, line 3: context is an empty cell" in line and "(3 bad row(s) in all)" in line
    assert run(tiny_checkpoint, tmp_path / "in.csv", "-o", tmp_path / "out.jsonl", "--on-error", "skip") == 0
    out = capsys.readouterr().out
    records = read_jsonl(tmp_path / "out.jsonl")
    assert [record["density"] is None for record in records] == [False, True, True, True, False]
    scored = [record["density"] for record in records if record["density"] is not None]
    assert f"density: mean {np.mean(scored):.4f}," in out and "over n=2 rows" in out


def test_compare_refuses_a_system_file_with_a_missing_reply(tiny_checkpoint, tmp_path, capsys):
    with open(tmp_path / "a.csv", "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([["context", "response"], ["hi", "hello"], ["how are you", ""]])
    with open(tmp_path / "b.csv", "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([["context", "response"], ["hi", "fine"], ["how are you", "good"]])
    options = ["--checkpoint", str(tiny_checkpoint), "--device", "cpu"]
    line = error_line(capsys, main, ["compare", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), *options])
    assert "a.csv, line 3: response is an empty cell" in line


def test_the_first_rows_raw_text_leaves_the_header_out(tmp_path):
    """The header's line was kept in the raw text of the first row, which the missing-cell check reads."""
    (tmp_path / "in.csv").write_text('context,response\n"a","b",c\n', encoding="utf-8")
    [row] = read_table(tmp_path / "in.csv").rows
    assert (row.record, row.error) == ({"line": '"a","b",c'}, "3 values for 2 columns")
