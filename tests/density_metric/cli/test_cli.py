"""The command line: JSONL, CSV and parquet round trips, every row kept in order, bad rows, errors, Ctrl-C."""

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from density_metric import distributed
from density_metric.cli import main
from density_metric.io.tables import read_rows
from tests.density_metric.io.test_tables import SCORE_COLUMNS

from ...tiny import synthetic_pairs

REPO = Path(__file__).resolve().parents[3]

ROWS = [
    {"id": 1, "context": ["hi", "how are you"], "response": "fine thanks"},
    {"id": 2, "context": ["what is the weather"], "response": "nice day"},
    {"id": 3, "context": [], "response": "hello"},
]


def run(tiny_checkpoint, *args, progress="--no-progress"):
    options = ["--checkpoint", str(tiny_checkpoint), "--device", "cpu", "--dtype", "float32"]
    return main(["score", *map(str, args), *options, *([progress] if progress else [])])


def error_line(capsys, call, *args, **kwargs) -> str:
    """Run a failing command: exit code 2 and one ``error: ...`` line on stderr, no traceback; that line."""
    with pytest.raises(SystemExit) as stop:
        call(*args, **kwargs)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error: " in line]
    assert len(errors) == 1 and errors[0] == err.splitlines()[-1] and "Traceback" not in err, err
    return errors[0]


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
            # an empty cell is a missing value (issue 68); no context is [] (csv writes "" as an empty cell)
            writer.writerow({**row, "context": " || ".join(row["context"]) or "[]"})
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


def test_bad_row_stops_the_run_with_its_line_number(tiny_checkpoint, tmp_path, capsys):
    (tmp_path / "in.jsonl").write_text(
        json.dumps(ROWS[0]) + "\n" + json.dumps({"context": ["hi"], "response": None}) + "\n{broken\n", encoding="utf-8"
    )
    message = error_line(capsys, run, tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl")
    assert "in.jsonl, line 2: response must be a string, got NoneType (2 bad row(s) in all)" in message
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


def test_unknown_extension_asks_for_format(tiny_checkpoint, tmp_path, capsys):
    (tmp_path / "in.txt").write_text("x")
    assert "use --format" in error_line(capsys, run, tiny_checkpoint, tmp_path / "in.txt", "-o", tmp_path / "out.jsonl")


def test_unknown_output_extension_asks_for_output_format(tiny_checkpoint, tmp_path, capsys):
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    message = error_line(capsys, run, tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.txt")
    assert message.startswith("error: cannot tell the format of ") and message.endswith(
        "; use --output-format jsonl|csv|parquet"
    )


def test_unreadable_input_is_an_error_naming_the_file(tiny_checkpoint, tmp_path, capsys):
    (tmp_path / "in.jsonl").write_bytes(b'{"context": ["caf\xe9"], "response": "x"}\n')
    message = error_line(capsys, run, tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl")
    assert message.startswith("error: ") and "in.jsonl: not UTF-8 text" in message


# ---------------------------------------------------------------- what is written


def test_parquet_output_keeps_the_columns_of_a_skipped_malformed_first_line(tiny_checkpoint, tmp_path):
    (tmp_path / "in.jsonl").write_text("{broken\n" + "".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    assert run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.parquet", "--on-error", "skip") == 0
    out = pq.read_table(tmp_path / "out.parquet")
    assert out.column_names[:8] == ["id", "context", "response", *SCORE_COLUMNS, "density_error"]
    assert out.column("id").to_pylist() == [None, 1, 2, 3]
    assert out.column("density_error").to_pylist()[0].startswith("line 1: invalid JSON")


def test_parquet_output_with_mixed_contexts_and_ids_keeps_what_was_scored(tiny_checkpoint, tmp_path):
    rows = [
        {"id": 1, "context": ["hi", "how are you"], "response": "fine thanks"},
        {"id": "b", "context": "hi || how are you", "response": "fine thanks"},  # the same pair, as a string
        {"id": 3, "context": "hello", "response": "hi", "late": True},
    ]
    write_jsonl(tmp_path / "in.jsonl", rows)
    assert run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.parquet", "--context-sep", " || ") == 0
    out = read_rows(tmp_path / "out.parquet")
    assert [row.context for row in out] == [["hi", "how are you"], ["hi", "how are you"], ["hello"]]
    assert [row.record["id"] for row in out] == ["1", "b", "3"]  # int and str in one column: strings
    assert [row.record["late"] for row in out] == [None, None, True]
    assert out[0].record["density"] == out[1].record["density"]


def test_header_only_csv_gives_a_header_only_csv(tiny_checkpoint, tmp_path):
    (tmp_path / "in.csv").write_text("id,context,response\n", encoding="utf-8")
    assert run(tiny_checkpoint, tmp_path / "in.csv", "-o", tmp_path / "out.csv") == 0
    assert (tmp_path / "out.csv").read_text(encoding="utf-8").splitlines() == [
        "id,context,response,density,density_calibrated,density_flags,density_signature"
    ]


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_input_with_a_utf8_byte_order_mark_is_scored(tiny_checkpoint, tiny_scorer, tmp_path, fmt):
    if fmt == "jsonl":
        text = "".join(json.dumps(row) + "\n" for row in ROWS)
    else:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=["id", "context", "response"])
        writer.writeheader()
        writer.writerows({**row, "context": json.dumps(row["context"])} for row in ROWS)
        text = buffer.getvalue()
    (tmp_path / f"in.{fmt}").write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))  # as Excel and Notepad save
    assert run(tiny_checkpoint, tmp_path / f"in.{fmt}", "-o", tmp_path / "out.jsonl") == 0
    out = read_jsonl(tmp_path / "out.jsonl")
    assert [str(row["id"]) for row in out] == ["1", "2", "3"]
    np.testing.assert_allclose([row["density"] for row in out], expected_scores(tiny_scorer, ROWS), rtol=1e-5)


def test_jsonl_csv_parquet_jsonl_round_trip_gives_identical_scores(tiny_checkpoint, tmp_path):
    rows = [
        {"id": 1, "context": ["hi, you", 'she said "fine"', "two\nlines"], "response": "fine thanks"},
        {"id": 2, "context": [], "response": "hello"},
        {"id": 3, "context": "one turn", "response": "what, is it"},
        {"id": 4, "context": ["ça va", "naïve ☕"], "response": "good day"},
    ]
    write_jsonl(tmp_path / "in.jsonl", rows)
    steps = [("in.jsonl", "a.csv"), ("a.csv", "b.parquet"), ("b.parquet", "c.jsonl")]
    for source, target in steps:
        assert run(tiny_checkpoint, tmp_path / source, "-o", tmp_path / target) == 0
    first = read_rows(tmp_path / "a.csv")
    final = read_jsonl(tmp_path / "c.jsonl")
    assert [row["context"] for row in final] == [
        *(row["context"] for row in rows[:2]),
        ["one turn"],
        rows[3]["context"],
    ]
    assert [row.context for row in first] == [row["context"] if row["id"] != 3 else ["one turn"] for row in rows]
    scores = [float(row.record["density"]) for row in first]
    assert [row.record["density"] for row in read_rows(tmp_path / "b.parquet")] == scores
    assert [row["density"] for row in final] == scores


# ---------------------------------------------------------------- no stale or partial output


def test_ctrl_c_while_scoring_keeps_the_earlier_output_and_exits_130(tiny_checkpoint, tmp_path, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(distributed, "score_distributed", interrupted)
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    earlier = json.dumps({**ROWS[0], "density": -1.0}) + "\n"  # a previous run's
    (tmp_path / "out.jsonl").write_text(earlier)
    assert run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl") == 130
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == "interrupted; no output written" and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]  # no temporary file either
    assert (tmp_path / "out.jsonl").read_text() == earlier


def test_sigint_to_a_running_cli_exits_130_with_one_line_and_the_earlier_file_kept(tiny_checkpoint, tmp_path):
    contexts, responses = synthetic_pairs(6000, seed=3)
    write_jsonl(tmp_path / "in.jsonl", [{"context": c, "response": r} for c, r in zip(contexts, responses)])
    (tmp_path / "out.jsonl").write_text("stale\n")
    command = [sys.executable, "-m", "density_metric", "score", str(tmp_path / "in.jsonl"), "-o"]
    command += [str(tmp_path / "out.jsonl"), "--checkpoint", str(tiny_checkpoint), "--device", "cpu"]
    # A shell starts background jobs with SIGINT ignored, and Python then installs no KeyboardInterrupt
    # handler: restore the default in the child, so the test means the same when CI runs in the background.
    process = subprocess.Popen(
        command,
        cwd=REPO,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    err = bytearray()

    def read_stderr():
        while chunk := process.stderr.read1(1024):
            err.extend(chunk)

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    while b"DEnsity" not in err and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)  # the progress bar (6,000 pairs) shows that scoring has begun
    assert b"DEnsity" in err and process.poll() is None, err.decode(errors="replace")
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=120) == 130
    reader.join(timeout=10)
    text = err.decode()
    assert text.rstrip().splitlines()[-1] == "interrupted; no output written" and "Traceback" not in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]
    assert (tmp_path / "out.jsonl").read_text() == "stale\n"


# ---------------------------------------------------------------- errors: one line, exit code 2


def test_a_missing_input_file_is_an_error(tiny_checkpoint, tmp_path, capsys):
    message = error_line(capsys, run, tiny_checkpoint, tmp_path / "nope.jsonl", "-o", tmp_path / "out.jsonl")
    assert message == f"error: {tmp_path / 'nope.jsonl'}: no such file"


def test_a_directory_as_input_is_an_error(tiny_checkpoint, tmp_path, capsys):
    for name in ("dir.jsonl", "dir"):  # said before the format is asked for
        (tmp_path / name).mkdir()
        message = error_line(capsys, run, tiny_checkpoint, tmp_path / name, "-o", tmp_path / "out.jsonl")
        assert message == f"error: {tmp_path / name}: is a directory, not a table file"


@pytest.mark.parametrize("value", ["0", "-3", "x"])
def test_a_batch_size_below_one_is_an_error(tiny_checkpoint, tmp_path, capsys, value):
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    message = error_line(
        capsys, run, tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl", "--batch-size", value
    )
    assert "argument --batch-size: must be a positive integer" in message


@pytest.mark.parametrize("checkpoint", ["missing/dir/ckpt", "not_a_checkpoint"])
def test_a_bad_checkpoint_is_an_error(tmp_path, capsys, checkpoint):
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    (tmp_path / "not_a_checkpoint").mkdir()
    args = ["score", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--no-progress"]
    message = error_line(capsys, main, [*args, "--checkpoint", str(tmp_path / checkpoint)])
    assert message.startswith("error: ") and checkpoint.split("/")[0] in message


def test_a_max_length_below_four_is_an_error(tiny_checkpoint, tmp_path, capsys):
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    message = error_line(
        capsys, run, tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl", "--max-length", "2"
    )
    assert "max_length must be in [4, " in message


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_device_cuda_without_cuda_is_an_error(tiny_checkpoint, tmp_path, capsys):
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    args = ["score", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "out.jsonl"), "--no-progress"]
    message = error_line(capsys, main, [*args, "--checkpoint", str(tiny_checkpoint), "--device", "cuda"])
    assert message.startswith("error: ") and "cuda" in message.lower()


def test_an_output_whose_parent_is_a_file_is_an_error_before_scoring(tiny_checkpoint, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(distributed, "score_distributed", None)  # scoring would fail differently
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    (tmp_path / "file").write_text("")
    message = error_line(capsys, run, tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "file" / "out.jsonl")
    assert message.startswith(f"error: cannot write {tmp_path / 'file' / 'out.jsonl'}: ")


# ---------------------------------------------------------------- progress


def test_no_progress_bar_below_the_python_api_threshold_unless_asked(tiny_checkpoint, tmp_path, capsys):
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    assert run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl", progress=None) == 0
    assert "DEnsity" not in capsys.readouterr().err
    assert run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl", progress="--progress") == 0
    assert "DEnsity" in capsys.readouterr().err


# ---------------------------------------------------------------- hardening: odd values and output paths


def test_a_lone_surrogate_is_that_rows_error_with_on_error_skip(tiny_checkpoint, tiny_scorer, tmp_path):
    # "\ud800" is valid JSON (an escape) but no Unicode text: the row is bad, the others are scored.
    lines = [json.dumps(ROWS[0]), '{"id": 9, "context": ["hi \\ud800"], "response": "ok"}', json.dumps(ROWS[1])]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl", "--on-error", "skip") == 0
    scored = read_jsonl(tmp_path / "out.jsonl")
    assert [row["id"] for row in scored] == [1, 9, 2]
    assert scored[1]["context"] == ["hi \ud800"] and scored[1]["density"] is None
    assert scored[1]["density_error"].startswith("line 2: context[0] ") and "surrogate" in scored[1]["density_error"]
    np.testing.assert_allclose([scored[0]["density"], scored[2]["density"]], expected_scores(tiny_scorer, ROWS[:2]))


def test_nan_in_an_input_row_is_written_back_as_null(tiny_checkpoint, tmp_path):
    (tmp_path / "in.jsonl").write_text(
        '{"id": NaN, "context": ["hi"], "response": "ok", "extra": [Infinity, 1.5]}\n', encoding="utf-8"
    )
    assert run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl") == 0
    text = (tmp_path / "out.jsonl").read_text(encoding="utf-8")
    row = json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
    assert row["id"] is None and row["extra"] == [None, 1.5] and row["density"] < 0


@pytest.fixture
def read_only_folder(tmp_path, monkeypatch):
    """A folder whose file system refuses every change in it (EROFS), as a read-only mount does, also to root."""
    import builtins
    import errno

    folder = tmp_path / "read-only"
    folder.mkdir()

    def refuse(function, writes=lambda *args, **kwargs: True):
        def wrapped(path, *args, **kwargs):
            if Path(os.path.abspath(path)).parent == folder and writes(*args, **kwargs):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
            return function(path, *args, **kwargs)

        return wrapped

    monkeypatch.setattr(builtins, "open", refuse(builtins.open, lambda mode="r", *a, **k: set(mode) & set("wxa+")))
    monkeypatch.setattr(os, "open", refuse(os.open, lambda flags, *a, **k: flags & (os.O_WRONLY | os.O_RDWR)))
    for name in ("unlink", "remove", "replace", "rename"):
        monkeypatch.setattr(os, name, refuse(getattr(os, name)))
    return folder


def test_a_read_only_output_folder_is_one_error_line_before_scoring(
    tiny_checkpoint, tmp_path, capsys, monkeypatch, read_only_folder
):
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    monkeypatch.setattr(distributed, "score_distributed", None)  # scoring would fail differently
    out = read_only_folder / "out.jsonl"
    message = error_line(capsys, run, tiny_checkpoint, tmp_path / "in.jsonl", "-o", out)
    assert message == f"error: cannot write {out}: Read-only file system"


def test_an_output_symlink_is_written_through_and_stays_a_symlink(tiny_checkpoint, tiny_scorer, tmp_path):
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    (tmp_path / "results").mkdir()
    target = tmp_path / "results" / "scored.jsonl"
    target.write_text("a previous run's output\n")
    (tmp_path / "out.jsonl").symlink_to(target)
    assert run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl") == 0
    assert (tmp_path / "out.jsonl").is_symlink() and (tmp_path / "out.jsonl").resolve() == target
    np.testing.assert_allclose([row["density"] for row in read_jsonl(target)], expected_scores(tiny_scorer, ROWS))
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ["scored.jsonl"]  # no temporary file left


def test_the_readme_first_commands_output_is_ignored_by_git():
    """The README's first command writes its output into the checkout; it must not show up as untracked."""
    import re
    import shutil

    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    command = next(line for line in (REPO / "README.md").read_text().splitlines() if " density_metric score " in line)
    output = re.search(r" -o (\S+)", command).group(1)
    ignored = subprocess.run(["git", "check-ignore", "-q", "--no-index", output], cwd=REPO)
    assert ignored.returncode == 0, f"{output} (from {command!r}) is not ignored by git"


def test_an_empty_context_separator_is_an_option_error_not_a_bad_row(tiny_checkpoint, tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    write_jsonl(rows, [{"context": "hi", "response": "hello"}])
    line = error_line(capsys, run, tiny_checkpoint, rows, "-o", tmp_path / "out.jsonl", "--context-sep", "")
    assert line == "error: --context-sep must not be empty"


def test_a_json_array_in_a_json_file_is_refused_naming_json_lines(tiny_checkpoint, tmp_path, capsys):
    # Read as JSON Lines, the array's lines were bad rows, and --on-error skip scored the one that parsed.
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps(ROWS, indent=2), encoding="utf-8")
    line = error_line(capsys, run, tiny_checkpoint, rows, "-o", tmp_path / "out.jsonl", "--on-error", "skip")
    assert f"{rows}, line 1: a JSON array, not JSON Lines" in line


# ---------------------------------------------------------------- the program's name


@pytest.mark.parametrize(
    "command, usage",
    [
        (["density-metric", "score"], "usage: density-metric score"),
        ([sys.executable, "-m", "density_metric", "score"], "usage: python -m density_metric score"),
    ],
)
def test_usage_lines_name_the_command_as_it_was_typed(command, usage):
    if command[0] == "density-metric" and shutil.which("density-metric") is None:
        pytest.skip("the density-metric console script is not installed")
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and run.stderr.startswith(usage), run.stderr


def test_on_error_skip_keeps_every_value_of_a_csv_row_with_too_many(tiny_checkpoint, tmp_path):
    (tmp_path / "in.csv").write_text("id,context,response\n1,hi,fine\n2,hi,fine,extra,more\n", encoding="utf-8")
    assert run(tiny_checkpoint, tmp_path / "in.csv", "-o", tmp_path / "out.csv", "--on-error", "skip") == 0
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert rows[1]["line"] == "2,hi,fine,extra,more" and rows[1]["density_error"] == "line 3: 5 values for 3 columns"
    assert rows[0]["density"] and not rows[1]["density"]


def test_a_csv_header_that_names_a_column_twice_is_one_error_line(tiny_checkpoint, tmp_path, capsys):
    (tmp_path / "in.csv").write_text("context,response,response\nhi,fine,other\n", encoding="utf-8")
    message = error_line(capsys, run, tiny_checkpoint, tmp_path / "in.csv", "-o", tmp_path / "out.jsonl")
    assert message.startswith("error: ") and "the header names column 'response' twice" in message
    assert not (tmp_path / "out.jsonl").exists()
