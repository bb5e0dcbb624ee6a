"""Where score's rows come from and where its results go (issue 60): standard input and output, line-aligned
plain-text files, CSV contexts as pandas writes lists, and the system-level mean with its interval."""

import io
import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from density_metric import distributed

from .test_cli import REPO, ROWS, error_line, read_jsonl, run, write_jsonl


def stdin_of(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def reference_interval(scores, resamples=1000, seed=12345):
    """sacrebleu's paired bootstrap, by a naive loop: (mean, lower, upper) of the 95 % percentile interval."""
    scores = np.asarray(scores, dtype=np.float64)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(scores), size=(resamples, len(scores)), dtype=np.int32)
    means = sorted(float(np.mean([scores[i] for i in row])) for row in draws)
    cut = resamples // 40
    return float(np.mean(scores)), means[cut], means[resamples - cut - 1]


MEAN_LINE = re.compile(
    r"^(?P<field>\w+): mean (?P<mean>\S+), 95% CI \[(?P<lower>\S+), (?P<upper>\S+)\] over n=(?P<n>\d+) rows "
    r"\(bootstrap percentile interval, 1000 resamples, seed 12345; (?P<floored>\d+) floored rows included\)$"
)


def mean_line(text: str) -> re.Match:
    (match,) = [m for m in map(MEAN_LINE.match, text.splitlines()) if m]
    return match


# ---------------------------------------------------------------- standard input and output


def test_standard_input_to_standard_output_gives_jsonl_on_stdout_and_all_else_on_stderr(tiny_checkpoint, tiny_scorer):
    command = [sys.executable, "-m", "density_metric", "score", "-", "-o", "-", "--checkpoint", str(tiny_checkpoint)]
    command += ["--device", "cpu", "--dtype", "float32", "--progress"]
    text = "".join(json.dumps(row) + "\n" for row in ROWS)
    done = subprocess.run(command, input=text, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert [row["id"] for row in out] == [1, 2, 3]
    expected = tiny_scorer.score([r["context"] for r in ROWS], [r["response"] for r in ROWS]).scores
    np.testing.assert_allclose([row["density"] for row in out], expected, rtol=1e-5)
    assert "DEnsity" in done.stderr and "-> <stdout>" in done.stderr  # the progress bar and the log
    assert mean_line(done.stderr)["n"] == "3"


def test_standard_input_reads_the_format_given(tiny_checkpoint, tiny_scorer, tmp_path, monkeypatch):
    csv_text = "id,context,response\n" + "".join(
        f'{row["id"]},"{json.dumps(row["context"]).replace(chr(34), chr(34) * 2)}",{row["response"]}\n' for row in ROWS
    )
    stdin_of(monkeypatch, csv_text.encode())
    assert run(tiny_checkpoint, "-", "--format", "csv", "-o", tmp_path / "out.jsonl") == 0
    out = read_jsonl(tmp_path / "out.jsonl")
    assert [row["context"] for row in out] == [row["context"] for row in ROWS]
    expected = tiny_scorer.score([r["context"] for r in ROWS], [r["response"] for r in ROWS]).scores
    np.testing.assert_allclose([row["density"] for row in out], expected, rtol=1e-5)


def test_a_bad_row_on_standard_input_is_named_as_stdin(tiny_checkpoint, tmp_path, capsys, monkeypatch):
    stdin_of(monkeypatch, (json.dumps(ROWS[0]) + "\n{broken\n").encode())
    line = error_line(capsys, run, tiny_checkpoint, "-", "-o", tmp_path / "out.jsonl")
    assert line.startswith("error: <stdin>, line 2: invalid JSON")


def test_standard_output_gets_nothing_when_the_run_fails(tiny_checkpoint, tmp_path, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("scoring failed")

    monkeypatch.setattr(distributed, "score_distributed", broken)
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    with pytest.raises(ValueError, match="scoring failed"):
        run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", "-")
    assert capsys.readouterr().out == ""


# ---------------------------------------------------------------- line-aligned plain-text files


def test_context_and_response_text_files_are_scored_line_by_line(tiny_checkpoint, tiny_scorer, tmp_path):
    contexts = [["hi", "how are you"], ["what is the weather"], []]
    responses = ["fine thanks", "nice\u2028day", "hello"]  # U+2028 ends no line of a text file
    (tmp_path / "ctx.txt").write_text("hi ||| how are you\r\nwhat is the weather\n\n", encoding="utf-8")
    (tmp_path / "hyp.txt").write_text("\n".join(responses), encoding="utf-8")  # no end to the last line
    args = ["--contexts", tmp_path / "ctx.txt", "--responses", tmp_path / "hyp.txt", "--context-sep", " ||| "]
    assert run(tiny_checkpoint, *args, "-o", tmp_path / "out.jsonl") == 0
    # JSON Lines end at "\n" only (str.splitlines would also end one at the reply's U+2028).
    out = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").split("\n")[:-1]]
    assert [(row["context"], row["response"]) for row in out] == [
        ("hi ||| how are you", "fine thanks"),
        ("what is the weather", "nice\u2028day"),
        ("", "hello"),
    ]
    np.testing.assert_allclose(
        [row["density"] for row in out], tiny_scorer.score(contexts, responses).scores, rtol=1e-5
    )


def test_text_files_of_different_lengths_are_one_error_naming_both(tiny_checkpoint, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(distributed, "score_distributed", None)
    (tmp_path / "ctx.txt").write_text("hi\nhello\nbye\n", encoding="utf-8")
    (tmp_path / "hyp.txt").write_text("fine\nthanks\n", encoding="utf-8")
    args = ["--contexts", tmp_path / "ctx.txt", "--responses", tmp_path / "hyp.txt", "-o", tmp_path / "out.jsonl"]
    line = error_line(capsys, run, tiny_checkpoint, *args)
    assert line == (
        f"error: {tmp_path / 'ctx.txt'} has 3 lines but {tmp_path / 'hyp.txt'} has 2; give one line per row in each"
    )
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    "args, problem",
    [
        (["in.jsonl", "--contexts", "ctx.txt", "--responses", "hyp.txt"], "give INPUT or --contexts and --responses"),
        (["--contexts", "ctx.txt"], "give INPUT (a table), or --contexts FILE and --responses FILE"),
        (["--contexts", "ctx.txt", "--responses", "hyp.txt", "--format", "csv"], "--format is INPUT's"),
        (["--contexts", "ctx.txt", "--responses", "missing.txt"], "missing.txt: no such file"),
    ],
    ids=["both", "contexts-alone", "format", "missing"],
)
def test_text_file_options_that_do_not_fit_are_one_error_line(tiny_checkpoint, tmp_path, capsys, args, problem):
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    (tmp_path / "ctx.txt").write_text("hi\n", encoding="utf-8")
    (tmp_path / "hyp.txt").write_text("fine\n", encoding="utf-8")
    args = [tmp_path / arg if arg.endswith((".jsonl", ".txt")) else arg for arg in args]
    assert problem in error_line(capsys, run, tiny_checkpoint, *args, "-o", tmp_path / "out.jsonl")


def test_a_text_file_is_not_the_output(tiny_checkpoint, tmp_path, capsys):
    (tmp_path / "ctx.jsonl").write_text("hi\n", encoding="utf-8")
    (tmp_path / "hyp.txt").write_text("fine\n", encoding="utf-8")
    args = ["--contexts", tmp_path / "ctx.jsonl", "--responses", tmp_path / "hyp.txt", "-o", tmp_path / "ctx.jsonl"]
    assert f"is the input file {tmp_path / 'ctx.jsonl'}" in error_line(capsys, run, tiny_checkpoint, *args)
    assert (tmp_path / "ctx.jsonl").read_text() == "hi\n"


# ---------------------------------------------------------------- CSV contexts as pandas writes lists


CSV_CONTEXTS = [
    ["Hi!", "How are you?"],
    ['it\'s "fine"', "what is it"],  # both quotes: pandas writes the turn in double quotes, escaping none
    ["a\\b", "two\nlines", "tab\there"],  # Python escapes
    [],
    ["[laughs] okay"],
]


def test_a_csv_written_by_pandas_with_list_contexts_scores_as_the_same_rows_in_jsonl(tiny_checkpoint, tmp_path):
    responses = ["fine thanks", "nice day", "hello", "hi", "good"]
    rows = [{"id": i, "context": c, "response": r} for i, (c, r) in enumerate(zip(CSV_CONTEXTS, responses))]
    pd.DataFrame(rows).to_csv(tmp_path / "in.csv", index=False)
    assert "\"['Hi!', 'How are you?']\"" in (tmp_path / "in.csv").read_text()  # what pandas writes: Python's list text
    write_jsonl(tmp_path / "in.jsonl", rows)
    assert run(tiny_checkpoint, tmp_path / "in.csv", "-o", tmp_path / "from_csv.jsonl") == 0
    assert run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "from_jsonl.jsonl") == 0
    from_csv, from_jsonl = read_jsonl(tmp_path / "from_csv.jsonl"), read_jsonl(tmp_path / "from_jsonl.jsonl")
    assert [row["context"] for row in from_csv] == CSV_CONTEXTS
    assert [row["density"] for row in from_csv] == [row["density"] for row in from_jsonl]


@pytest.mark.parametrize(
    "cell",
    [
        "[laughs] okay",
        "['a', 1]",
        "['a'] + ['b']",
        "[__import__('os').getcwd()]",
        "[" * 100_000 + "]" * 100_000,
        "['a'",
    ],
    ids=["bracketed-words", "not-all-strings", "expression", "call", "deep", "unclosed"],
)
def test_a_csv_cell_that_is_no_list_of_strings_is_one_turn(tiny_checkpoint, tmp_path, cell):
    pd.DataFrame([{"context": cell, "response": "fine"}]).to_csv(tmp_path / "in.csv", index=False)
    assert run(tiny_checkpoint, tmp_path / "in.csv", "-o", tmp_path / "out.jsonl") == 0
    assert read_jsonl(tmp_path / "out.jsonl")[0]["context"] == cell


# ---------------------------------------------------------------- the system-level mean


def test_score_prints_the_mean_with_its_bootstrap_interval_counting_floored_rows(tiny_checkpoint, tmp_path, capsys):
    rows = [*ROWS, {"id": 4, "context": ["hi"], "response": ""}, {"id": 5, "context": ["hi"], "response": "?!"}]
    write_jsonl(tmp_path / "in.jsonl", [*rows[:2], {"id": 9, "context": ["hi"]}, *rows[2:]])
    assert run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl", "--on-error", "skip") == 0
    scored = [row for row in read_jsonl(tmp_path / "out.jsonl") if row["density"] is not None]
    assert [row["density_flags"] for row in scored][-2:] == [["empty"], ["punctuation"]]
    match = mean_line(capsys.readouterr().out)
    mean, lower, upper = reference_interval([row["density"] for row in scored])
    assert (match["field"], match["n"], match["floored"]) == ("density", "5", "2")
    np.testing.assert_allclose([float(match[k]) for k in ("mean", "lower", "upper")], [mean, lower, upper], atol=1e-4)
    assert lower < mean < upper


def test_the_mean_line_goes_to_stderr_when_the_table_goes_to_stdout(tiny_checkpoint, tmp_path, capsys):
    write_jsonl(tmp_path / "in.jsonl", ROWS)
    assert run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", "-", "--output-field", "dens") == 0
    captured = capsys.readouterr()
    assert [json.loads(line)["id"] for line in captured.out.splitlines()] == [1, 2, 3]
    assert mean_line(captured.err)["field"] == "dens"
