"""The command line: JSONL, CSV and parquet round trips, every row kept in order, bad rows."""

import csv
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from density_metric.cli import main

ROWS = [
    {"id": 1, "context": ["hi", "how are you"], "response": "fine thanks"},
    {"id": 2, "context": ["what is the weather"], "response": "nice day"},
    {"id": 3, "context": [], "response": "hello"},
]


def run(tiny_checkpoint, *args):
    return main(
        [
            "score",
            *map(str, args),
            "--checkpoint",
            str(tiny_checkpoint),
            "--device",
            "cpu",
            "--dtype",
            "float32",
            "--no-progress",
        ]
    )


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def expected_scores(tiny_scorer, rows):
    return tiny_scorer.score([r["context"] for r in rows], [r["response"] for r in rows]).scores


def test_jsonl_round_trip_keeps_every_row_in_order_and_adds_scores(tiny_checkpoint, tiny_scorer, tmp_path):
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    assert run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl") == 0
    out = read_jsonl(tmp_path / "out.jsonl")
    assert [row["id"] for row in out] == [1, 2, 3]
    assert [row["context"] for row in out] == [row["context"] for row in ROWS]
    np.testing.assert_allclose([row["density"] for row in out], expected_scores(tiny_scorer, ROWS), rtol=1e-5)
    assert all(0 <= row["density_calibrated"] <= 1 for row in out)


def test_csv_round_trip_with_context_separator(tiny_checkpoint, tiny_scorer, tmp_path):
    with open(tmp_path / "in.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=["id", "context", "response"])
        writer.writeheader()
        for row in ROWS:
            writer.writerow({**row, "context": " || ".join(row["context"])})
    assert run(tiny_checkpoint, tmp_path / "in.csv", "-o", tmp_path / "out.csv", "--context-sep", " || ") == 0
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as handle:
        out = list(csv.DictReader(handle))
    assert [row["id"] for row in out] == ["1", "2", "3"]
    assert out[0]["context"] == "hi || how are you"
    np.testing.assert_allclose([float(row["density"]) for row in out], expected_scores(tiny_scorer, ROWS), rtol=1e-5)


def test_parquet_round_trip(tiny_checkpoint, tiny_scorer, tmp_path):
    pq.write_table(pa.Table.from_pylist(ROWS), tmp_path / "in.parquet")
    assert run(tiny_checkpoint, tmp_path / "in.parquet", "-o", tmp_path / "out.jsonl") == 0
    out = read_jsonl(tmp_path / "out.jsonl")
    np.testing.assert_allclose([row["density"] for row in out], expected_scores(tiny_scorer, ROWS), rtol=1e-5)


def test_bad_row_stops_the_run_with_its_line_number(tiny_checkpoint, tmp_path):
    (tmp_path / "in.jsonl").write_text(
        json.dumps(ROWS[0]) + "\n" + json.dumps({"context": ["hi"], "response": None}) + "\n{broken\n", encoding="utf-8"
    )
    bad_row = r"line 2: response must be a string, got NoneType \(2 bad row\(s\)"
    with pytest.raises(SystemExit, match=bad_row) as stop:
        run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl")
    message = str(stop.value)
    assert message.startswith("error: ") and message.endswith("--on-error skip scores the others and marks these")
    assert not (tmp_path / "out.jsonl").exists()


def test_skipped_bad_rows_stay_in_the_output_unscored_and_are_reported(tiny_checkpoint, tiny_scorer, tmp_path, caplog):
    (tmp_path / "in.jsonl").write_text(
        json.dumps(ROWS[0]) + "\n{broken\n" + json.dumps({"context": ["hi"]}) + "\n" + json.dumps(ROWS[1]) + "\n",
        encoding="utf-8",
    )
    assert run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl", "--on-error", "skip") == 0
    out = read_jsonl(tmp_path / "out.jsonl")
    assert len(out) == 4
    assert out[1]["density"] is None and out[1]["density_error"].startswith("line 2: invalid JSON")
    assert out[2]["density"] is None and out[2]["density_error"] == "line 3: missing field 'response'"
    assert out[0]["density_error"] is None
    np.testing.assert_allclose(
        [out[0]["density"], out[3]["density"]], expected_scores(tiny_scorer, ROWS[:2]), rtol=1e-5
    )
    assert "skipped" in caplog.text and "line 3" in caplog.text


def test_unknown_extension_asks_for_format(tiny_checkpoint, tmp_path):
    (tmp_path / "in.txt").write_text("x")
    with pytest.raises(SystemExit, match="use --format"):
        run(tiny_checkpoint, tmp_path / "in.txt", "-o", tmp_path / "out.jsonl")


def test_unknown_output_extension_asks_for_output_format(tiny_checkpoint, tmp_path):
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    with pytest.raises(SystemExit, match=r"error: cannot tell the format of .*out\.txt.*; use --output-format"):
        run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.txt")


def test_unreadable_input_is_an_error_naming_the_file(tiny_checkpoint, tmp_path):
    (tmp_path / "in.jsonl").write_bytes(b'{"context": ["caf\xe9"], "response": "x"}\n')
    with pytest.raises(SystemExit, match=r"error: .*in\.jsonl: not UTF-8 text"):
        run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl")
