"""What the command line refuses before it reads, scores or writes anything (issue 60): an output that would
replace an input, an output field that would replace an input column, a device this torch cannot score on, a
baseline that names no system."""

import json

import pytest
import torch

from density_metric import distributed
from density_metric.cli import compare as command
from density_metric.cli import main
from tests.density_metric.comparison.test_compare import BAD, GOOD, run_compare, system_rows

from .test_cli import ROWS, error_line, read_jsonl, run, write_jsonl


def nothing_is_scored(monkeypatch):
    """Make scoring (score's and compare's) and compare's reading fail the test: a refusal comes before them."""
    monkeypatch.setattr(distributed, "score_distributed", lambda *a, **k: pytest.fail("scored before the refusal"))
    monkeypatch.setattr(command, "compare_tables", lambda *a, **k: pytest.fail("compared before the refusal"))
    monkeypatch.setattr(command, "read_system", lambda *a, **k: pytest.fail("read a system before the refusal"))


@pytest.fixture
def systems(tmp_path):
    """Three system files, and their bytes: a refused run must leave them as they were."""
    paths = [tmp_path / f"{name}.jsonl" for name in ("a", "b", "c")]
    for path, responses in zip(paths, (GOOD, BAD, GOOD[::-1])):
        write_jsonl(path, system_rows(responses))
    return paths, [path.read_bytes() for path in paths]


# ---------------------------------------------------------------- compare --json never replaces a system file


def test_compare_json_placed_before_the_system_files_is_refused(tiny_checkpoint, systems, capsys, monkeypatch):
    # argparse takes a.jsonl as the --json path: the user's system file would be overwritten by the report.
    (a, b, c), before = systems
    nothing_is_scored(monkeypatch)
    line = error_line(capsys, run_compare, tiny_checkpoint, "--json", a, b, c)
    assert line.startswith(f"error: --json {a}: exists and is not a compare report") and "after the system" in line
    assert [path.read_bytes() for path in (a, b, c)] == before


@pytest.mark.parametrize("spelling", ["same", "dot-slash", "symlink"])
def test_compare_json_that_is_one_of_the_system_files_is_refused(
    tiny_checkpoint, systems, tmp_path, capsys, monkeypatch, spelling
):
    (a, b, c), before = systems
    nothing_is_scored(monkeypatch)
    report = {"same": a, "dot-slash": tmp_path / "." / a.name, "symlink": tmp_path / "link.jsonl"}[spelling]
    if spelling == "symlink":
        report.symlink_to(a)
    line = error_line(capsys, run_compare, tiny_checkpoint, a, b, c, "--json", report)
    assert line.startswith(f"error: --json {report}: ") and f"system file {a}" in line
    assert [path.read_bytes() for path in (a, b, c)] == before


def test_compare_json_that_names_an_existing_file_other_than_a_report_is_refused(
    tiny_checkpoint, systems, tmp_path, capsys, monkeypatch
):
    # A system file with a .json name, taken as the --json path: not a table extension, but no report either.
    (a, b, c), _ = systems
    nothing_is_scored(monkeypatch)
    other = tmp_path / "other.json"
    write_jsonl(other, system_rows(GOOD))
    before = other.read_bytes()
    line = error_line(capsys, run_compare, tiny_checkpoint, "--json", other, b, c)
    assert line.startswith(f"error: --json {other}: ") and "not a compare report" in line
    assert other.read_bytes() == before


def test_compare_json_replaces_an_earlier_report(tiny_checkpoint, systems, tmp_path):
    (a, b, _), _ = systems
    report = tmp_path / "report.json"
    assert run_compare(tiny_checkpoint, a, b, "--json", report) == 0
    first = json.loads(report.read_text())
    assert run_compare(tiny_checkpoint, a, b, "--names", "x,y", "--json", report) == 0
    assert [system["name"] for system in first["systems"]] == ["a", "b"]
    assert [system["name"] for system in json.loads(report.read_text())["systems"]] == ["x", "y"]


def test_compare_with_an_unknown_baseline_is_refused_before_reading(tiny_checkpoint, systems, capsys, monkeypatch):
    (a, b, c), _ = systems
    nothing_is_scored(monkeypatch)
    line = error_line(capsys, run_compare, tiny_checkpoint, a, b, c, "--baseline", "d")
    assert line == "error: --baseline 'd' is none of the systems ('a', 'b', 'c')"
    line = error_line(capsys, run_compare, tiny_checkpoint, a, b, "--names", "base,new", "--baseline", "a")
    assert line == "error: --baseline 'a' is none of the systems ('base', 'new')"


# ---------------------------------------------------------------- score -o never replaces its input


@pytest.mark.parametrize("spelling", ["same", "dot-slash", "symlink"])
def test_score_output_that_is_the_input_file_is_refused(tiny_checkpoint, tmp_path, capsys, monkeypatch, spelling):
    nothing_is_scored(monkeypatch)
    data = tmp_path / "data.jsonl"
    write_jsonl(data, ROWS)
    before = data.read_bytes()
    output = {"same": data, "dot-slash": tmp_path / "." / "data.jsonl", "symlink": tmp_path / "link.jsonl"}[spelling]
    if spelling == "symlink":
        output.symlink_to(data)
    line = error_line(capsys, run, tiny_checkpoint, data, "-o", output)
    assert line.startswith(f"error: -o {output}: ") and f"input file {data}" in line
    assert data.read_bytes() == before
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted({"data.jsonl", output.name})


def test_score_output_in_another_folder_with_the_input_name_is_not_the_input(tiny_checkpoint, tmp_path):
    write_jsonl(tmp_path / "data.jsonl", ROWS)
    (tmp_path / "scored").mkdir()
    assert run(tiny_checkpoint, tmp_path / "data.jsonl", "-o", tmp_path / "scored" / "data.jsonl") == 0
    assert [row["id"] for row in read_jsonl(tmp_path / "scored" / "data.jsonl")] == [1, 2, 3]


# ---------------------------------------------------------------- --output-field never replaces an input column


@pytest.mark.parametrize(
    "field, column",
    [("response", "response"), ("context", "context"), ("id", "id"), ("note", "note_flags"), ("x", "x_signature")],
)
def test_an_output_field_whose_columns_an_input_column_has_is_refused(
    tiny_checkpoint, tmp_path, capsys, monkeypatch, field, column
):
    nothing_is_scored(monkeypatch)
    write_jsonl(tmp_path / "in.jsonl", [{**row, "note_flags": "kept", "x_signature": "mine"} for row in ROWS])
    line = error_line(
        capsys, run, tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl", "--output-field", field
    )
    assert line.startswith("error: --output-field ") and f"input column {column!r}" in line
    assert not (tmp_path / "out.jsonl").exists()


def test_a_density_column_that_no_score_wrote_is_not_replaced(tiny_checkpoint, tmp_path, capsys, monkeypatch):
    # The user's own "density" column (no density_signature beside it): not an earlier score of this command.
    nothing_is_scored(monkeypatch)
    write_jsonl(tmp_path / "in.jsonl", [{**row, "density": "high"} for row in ROWS])
    line = error_line(capsys, run, tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl")
    assert line.startswith("error: --output-field density: ") and "input column 'density'" in line


def test_scoring_a_scored_file_again_replaces_its_earlier_scores(tiny_checkpoint, tiny_scorer, tmp_path):
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    assert run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "once.jsonl") == 0
    rows = read_jsonl(tmp_path / "once.jsonl")
    write_jsonl(tmp_path / "edited.jsonl", [{**row, "density": 0.0} for row in rows])
    assert run(tiny_checkpoint, tmp_path / "edited.jsonl", "-o", tmp_path / "twice.jsonl") == 0
    assert read_jsonl(tmp_path / "twice.jsonl") == rows


@pytest.mark.parametrize("field", ["", "  "])
def test_an_empty_output_field_is_refused(tiny_checkpoint, tmp_path, capsys, monkeypatch, field):
    nothing_is_scored(monkeypatch)
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    line = error_line(
        capsys, run, tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl", "--output-field", field
    )
    assert line == f"error: --output-field {field!r} is empty; name the score column, e.g. --output-field density"
    assert not (tmp_path / "out.jsonl").exists()


# ---------------------------------------------------------------- --device: one line for what torch has not here


UNAVAILABLE = ["mps", "xla", "meta", "garbage", "cuda:x"] + ([] if torch.cuda.is_available() else ["cuda", "cuda:0"])


@pytest.mark.parametrize("device", UNAVAILABLE)
def test_a_device_this_torch_cannot_score_on_is_one_error_line_before_the_output_is_touched(
    tiny_checkpoint, tmp_path, capsys, monkeypatch, device
):
    if device == "mps" and torch.backends.mps.is_available():
        pytest.skip("mps is here")
    nothing_is_scored(monkeypatch)
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    (tmp_path / "out.jsonl").write_text("earlier\n")
    args = ["score", str(tmp_path / "in.jsonl"), "-o", str(tmp_path / "new" / "out.jsonl")]
    line = error_line(capsys, main, [*args, "--checkpoint", str(tiny_checkpoint), "--device", device])
    assert line.startswith(f"error: --device {device!r}")
    systems = [str(tmp_path / "in.jsonl"), str(tmp_path / "out.jsonl")]
    line = error_line(capsys, main, ["compare", *systems, "--checkpoint", str(tiny_checkpoint), "--device", device])
    assert line.startswith(f"error: --device {device!r}")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.jsonl", "out.jsonl"]
    assert (tmp_path / "out.jsonl").read_text() == "earlier\n"


# ---------------------------------------------------------------- score: an input without rows


@pytest.mark.parametrize("name", ["empty.jsonl", "empty.csv"])  # a 0-byte parquet file was refused already
def test_an_empty_input_file_is_an_error_and_writes_nothing(tiny_checkpoint, tmp_path, capsys, name):
    """Issue 68: a 0-byte input exited 0 with no mean line, so a pipeline whose generation step wrote nothing went on.
    It is refused (exit 2), as a run whose every row fails is: scoring nothing is no success."""
    (tmp_path / name).write_bytes(b"")
    out = tmp_path / f"out_{name}"
    line = error_line(capsys, run, tiny_checkpoint, tmp_path / name, "-o", out)
    assert line.startswith(f"error: {tmp_path / name}: ") and line.endswith("; nothing was written")
    assert not out.exists()


def test_empty_text_files_are_an_error(tiny_checkpoint, tmp_path, capsys):
    for name in ("contexts.txt", "responses.txt"):
        (tmp_path / name).write_bytes(b"")
    args = [
        "--contexts",
        tmp_path / "contexts.txt",
        "--responses",
        tmp_path / "responses.txt",
        "-o",
        tmp_path / "o.jsonl",
    ]
    line = error_line(capsys, run, tiny_checkpoint, *args)
    assert line.endswith(": empty input (0 bytes), no rows to score; nothing was written")
    assert not (tmp_path / "o.jsonl").exists()


def test_a_header_without_rows_writes_the_header_and_says_there_is_no_mean(tiny_checkpoint, tmp_path, capsys):
    """A CSV header is a table of no rows (tests/density_metric/cli/test_cli.py: its output is a header too); the line where the mean
    would stand says that there is none, rather than nothing."""
    (tmp_path / "in.csv").write_text("context,response\n", encoding="utf-8")
    assert run(tiny_checkpoint, tmp_path / "in.csv", "-o", tmp_path / "out.csv") == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == (
        f"density: no mean: {tmp_path / 'in.csv'} has columns but no rows (0 rows scored)"
    )
