"""Comparing systems: ``python -m density_metric compare`` and ``DensityScorer.compare``, with the tiny checkpoint."""

import csv
import json

import numpy as np
import pytest

from density_metric import compare
from density_metric.cli import main
from density_metric.comparison.result import flagged_cell
from tests.density_metric.cli.test_cli import error_line, run, write_jsonl

CONTEXTS = [["hi", "how are you"], ["what is the weather"], ["see you tomorrow"], ["good morning"]]
GOOD = ["fine thanks", "nice and sunny", "see you", "morning"]
BAD = ["you you you", "the the the", "see see see", "good good good"]


def system_rows(responses, contexts=CONTEXTS):
    return [{"id": i, "context": c, "response": r} for i, (c, r) in enumerate(zip(contexts, responses))]


def run_compare(tiny_checkpoint, *args):
    options = ["--checkpoint", str(tiny_checkpoint), "--device", "cpu", "--dtype", "float32"]
    return main(["compare", *map(str, args), *options, "--resamples", "200", "--trials", "500"])


@pytest.fixture
def two_systems(tmp_path):
    write_jsonl(tmp_path / "good.jsonl", system_rows(GOOD))
    write_jsonl(tmp_path / "bad.jsonl", system_rows(BAD))
    return tmp_path / "good.jsonl", tmp_path / "bad.jsonl"


def test_json_output_has_the_documented_shape_and_the_scorers_numbers(
    tiny_checkpoint, tiny_scorer, two_systems, tmp_path, capsys
):
    assert run_compare(tiny_checkpoint, *two_systems, "--json", tmp_path / "out.json") == 0
    out = json.loads((tmp_path / "out.json").read_text())
    assert set(out) == {"systems", "pairs", "signature", "warnings", "correction"}
    assert [s["name"] for s in out["systems"]] == ["good", "bad"]
    for system in out["systems"]:
        assert {"name", "n", "mean", "ci", "calibrated_mean"} <= set(system) and len(system["ci"]) == 2
    (pair,) = out["pairs"]
    assert {"a", "b", "delta", "ci", "p_value", "test", "wins_a", "wins_b", "ties"} <= set(pair)
    good = tiny_scorer.score(CONTEXTS, GOOD)
    bad = tiny_scorer.score(CONTEXTS, BAD)
    assert out["systems"][0]["mean"] == pytest.approx(good.scores.mean(), rel=1e-5)
    assert out["systems"][1]["calibrated_mean"] == pytest.approx(bad.calibrated.mean(), rel=1e-5)
    assert pair["delta"] == pytest.approx(good.scores.mean() - bad.scores.mean(), rel=1e-5)
    assert pair["wins_a"] == np.mean(good.scores > bad.scores)
    assert out["signature"].startswith("test:ar|ar:500|bs:200|seed:12345|rtol:1e-05|density_metric=")
    printed = capsys.readouterr().out
    assert "row - column" in printed and out["signature"] in printed


def test_names_option_names_the_systems(tiny_checkpoint, two_systems, tmp_path):
    run_compare(tiny_checkpoint, *two_systems, "--names", "base,tuned", "--json", tmp_path / "out.json")
    out = json.loads((tmp_path / "out.json").read_text())
    assert [s["name"] for s in out["systems"]] == ["base", "tuned"]
    assert (out["pairs"][0]["a"], out["pairs"][0]["b"]) == ("base", "tuned")


def test_a_differing_context_is_an_error_naming_the_row(tiny_checkpoint, tmp_path, capsys):
    write_jsonl(tmp_path / "a.jsonl", system_rows(GOOD))
    write_jsonl(tmp_path / "b.jsonl", system_rows(BAD, [*CONTEXTS[:2], ["something else"], CONTEXTS[3]]))
    line = error_line(capsys, run_compare, tiny_checkpoint, tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    assert f"{tmp_path / 'b.jsonl'}, line 3: its context ['something else'] differs from" in line
    assert f"{tmp_path / 'a.jsonl'}, line 3" in line


def test_a_missing_row_is_an_error_naming_the_first_row_without_a_counterpart(tiny_checkpoint, tmp_path, capsys):
    write_jsonl(tmp_path / "a.jsonl", system_rows(GOOD))
    write_jsonl(tmp_path / "b.jsonl", system_rows(BAD[:3]))
    line = error_line(capsys, run_compare, tiny_checkpoint, tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    assert f"{tmp_path / 'a.jsonl'}, line 4: {tmp_path / 'b.jsonl'} ends before this row (3 rows against 4)" in line


@pytest.mark.parametrize(
    "args, message",
    [
        (["only.jsonl"], "at least 2 system files"),
        (["a.jsonl", "missing.jsonl"], "missing.jsonl: no such file"),
        (["a.jsonl", "a.jsonl"], "'a' names two systems"),
        (["a.jsonl", "b.jsonl", "--names", "x"], "--names gives 1 names for 2 system files"),
    ],
)
def test_bad_arguments_are_one_error_line(tiny_checkpoint, tmp_path, capsys, monkeypatch, args, message):
    write_jsonl(tmp_path / "a.jsonl", system_rows(GOOD))
    write_jsonl(tmp_path / "b.jsonl", system_rows(BAD))
    write_jsonl(tmp_path / "only.jsonl", system_rows(BAD))
    monkeypatch.chdir(tmp_path)
    assert message in error_line(capsys, run_compare, tiny_checkpoint, *args)


def test_a_bad_row_is_an_error_naming_it(tiny_checkpoint, tmp_path, capsys):
    write_jsonl(tmp_path / "a.jsonl", system_rows(GOOD))
    rows = system_rows(BAD)
    del rows[1]["response"]
    write_jsonl(tmp_path / "b.jsonl", rows)
    line = error_line(capsys, run_compare, tiny_checkpoint, tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    assert f"{tmp_path / 'b.jsonl'}, line 2: missing field 'response'" in line


def test_files_with_a_score_column_are_not_scored_again(tmp_path, capsys):
    """No checkpoint is loaded (the one named does not exist) and the stored scores are used."""
    a_scores, b_scores = [1.0, 2.0, 3.0, 4.0], [0.5, 2.5, 1.0, 3.0]
    write_jsonl(tmp_path / "a.jsonl", [{**row, "s": s} for row, s in zip(system_rows(GOOD), a_scores)])
    with open(tmp_path / "b.csv", "w", newline="") as handle:  # CSV: the scores are text
        writer = csv.DictWriter(handle, ["context", "response", "s"])
        writer.writeheader()
        for row, s in zip(system_rows(BAD), b_scores):
            writer.writerow({"context": json.dumps(row["context"]), "response": row["response"], "s": s})
    args = [tmp_path / "a.jsonl", tmp_path / "b.csv", "--score-field", "s", "--json", tmp_path / "out.json"]
    assert main(["compare", *map(str, args), "--checkpoint", str(tmp_path / "no-such-checkpoint")]) == 0
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["pairs"][0]["delta"] == pytest.approx(np.mean(a_scores) - np.mean(b_scores))
    assert out["systems"][0]["calibrated_mean"] is None
    assert out["signature"] == "test:ar|ar:10000|bs:1000|seed:12345|rtol:1e-05"


def test_a_stored_score_that_is_not_a_number_is_an_error_naming_the_row(tmp_path, capsys):
    write_jsonl(tmp_path / "a.jsonl", [{**row, "density": 1.0} for row in system_rows(GOOD)])
    rows = [{**row, "density": 1.0} for row in system_rows(BAD)]
    rows[2]["density"] = None  # a row `score --on-error skip` left unscored
    write_jsonl(tmp_path / "b.jsonl", rows)
    line = error_line(capsys, main, ["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")])
    assert f"{tmp_path / 'b.jsonl'}, line 3: 'density' is None, not a score" in line


def test_the_seed_reproduces_the_output(tiny_checkpoint, two_systems, tmp_path):
    for name in ("one", "two"):
        run_compare(tiny_checkpoint, *two_systems, "--seed", "5", "--json", tmp_path / f"{name}.json")
    assert (tmp_path / "one.json").read_text() == (tmp_path / "two.json").read_text()


def test_scorer_compare_equals_compare_on_its_scores(tiny_scorer):
    result = tiny_scorer.compare(CONTEXTS, {"good": GOOD, "bad": BAD}, resamples=100, trials=100)
    expected = compare(
        {"good": tiny_scorer.score(CONTEXTS, GOOD).scores, "bad": tiny_scorer.score(CONTEXTS, BAD).scores},
        resamples=100,
        trials=100,
    )
    assert result.pairs == expected.pairs
    assert result.signature == expected.signature + "|" + tiny_scorer.signature


def test_scorer_compare_names_the_system_with_a_bad_response(tiny_scorer):
    with pytest.raises(ValueError, match=r"systems\['bad'\]: responses\[1\] must be a string"):
        tiny_scorer.compare(CONTEXTS, {"good": GOOD, "bad": ["a", None, "c", "d"]})


def test_stored_and_fresh_scores_are_not_mixed_the_error_names_the_files(tiny_checkpoint, tmp_path, capsys):
    write_jsonl(tmp_path / "a.jsonl", [{**row, "density": 1.0} for row in system_rows(GOOD)])
    write_jsonl(tmp_path / "b.jsonl", system_rows(BAD))
    write_jsonl(tmp_path / "c.jsonl", [{**row, "density": 2.0} for row in system_rows(BAD)])
    paths = [tmp_path / name for name in ("a.jsonl", "b.jsonl", "c.jsonl")]
    line = error_line(capsys, run_compare, tiny_checkpoint, *paths)
    assert f"{paths[0]}, {paths[2]} carry stored scores but {paths[1]} do not" in line
    # a column that none has: all are scored now
    assert run_compare(tiny_checkpoint, *paths, "--score-field", "none_has_it") == 0


def signed_rows(responses, scores, signature):
    return [{**row, "density": s, "density_signature": signature} for row, s in zip(system_rows(responses), scores)]


SIGNATURE = (
    "density_metric=0.1.0|checkpoint=org/a@sha256:1111|max_length=256|dtype=float32|torch=2.13.0|transformers=5.24.0"
)


def test_files_scored_by_score_compare_as_scored_now_and_name_their_scorer(tiny_checkpoint, tiny_scorer, tmp_path):
    for name, responses in (("good", GOOD), ("bad", BAD)):
        write_jsonl(tmp_path / f"{name}.jsonl", system_rows(responses))
        assert run(tiny_checkpoint, tmp_path / f"{name}.jsonl", "-o", tmp_path / f"{name}.scored.jsonl") == 0
    stored = [tmp_path / "good.scored.jsonl", tmp_path / "bad.scored.jsonl", "--json", tmp_path / "stored.json"]
    options = ["--checkpoint", str(tmp_path / "no-such-checkpoint"), "--resamples", "200", "--trials", "500"]
    assert main(["compare", *map(str, stored), *options]) == 0
    fresh = [tmp_path / "good.jsonl", tmp_path / "bad.jsonl", "--json", tmp_path / "fresh.json"]
    assert run_compare(tiny_checkpoint, *fresh) == 0
    stored, fresh = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("stored", "fresh"))
    assert stored["signature"].endswith("|" + tiny_scorer.signature)
    assert stored["signature"] == fresh["signature"]
    assert stored["pairs"][0]["delta"] == pytest.approx(fresh["pairs"][0]["delta"], rel=1e-6)


@pytest.mark.parametrize(
    "field, other",
    [("checkpoint", "org/b@sha256:2222"), ("checkpoint", "org/a@sha256:2222"), ("dtype", "bfloat16")],
)
def test_stored_scores_of_another_checkpoint_or_dtype_are_not_compared(tmp_path, capsys, field, other):
    theirs = "|".join(f"{field}={other}" if part.startswith(f"{field}=") else part for part in SIGNATURE.split("|"))
    write_jsonl(tmp_path / "a.jsonl", signed_rows(GOOD, [1.0, 2.0, 3.0, 4.0], SIGNATURE))
    write_jsonl(tmp_path / "b.jsonl", signed_rows(BAD, [0.5, 2.5, 1.0, 3.0], theirs))
    line = error_line(capsys, main, ["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")])
    original = dict(part.split("=", 1) for part in SIGNATURE.split("|"))[field]
    assert f"{tmp_path / 'a.jsonl'} and {tmp_path / 'b.jsonl'} were scored differently" in line
    assert f"{field} {original!r} against {other!r}" in line


def test_stored_scores_that_differ_only_in_library_versions_compare_under_both_signatures(tmp_path):
    newer = SIGNATURE.replace("torch=2.13.0", "torch=2.14.0")
    write_jsonl(tmp_path / "a.jsonl", signed_rows(GOOD, [1.0, 2.0, 3.0, 4.0], SIGNATURE))
    write_jsonl(tmp_path / "b.jsonl", signed_rows(BAD, [0.5, 2.5, 1.0, 3.0], newer))
    args = [tmp_path / "a.jsonl", tmp_path / "b.jsonl", "--json", tmp_path / "out.json"]
    assert main(["compare", *map(str, args)]) == 0
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["signature"] == f"test:ar|ar:10000|bs:1000|seed:12345|rtol:1e-05|{SIGNATURE} + {newer}"


def test_a_file_with_scores_of_two_runs_is_an_error_naming_the_row(tmp_path, capsys):
    write_jsonl(tmp_path / "a.jsonl", signed_rows(GOOD, [1.0, 2.0, 3.0, 4.0], SIGNATURE))
    rows = signed_rows(BAD, [0.5, 2.5, 1.0, 3.0], SIGNATURE)
    rows[3]["density_signature"] = SIGNATURE.replace("max_length=256", "max_length=128")
    write_jsonl(tmp_path / "b.jsonl", rows)
    line = error_line(capsys, main, ["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")])
    assert f"{tmp_path / 'b.jsonl'}, line 4: 'density_signature' is" in line and "scores of two runs" in line


def test_stored_scores_without_a_signature_compare_with_a_warning_naming_the_files(tmp_path, capsys):
    write_jsonl(tmp_path / "a.jsonl", signed_rows(GOOD, [1.0, 2.0, 3.0, 4.0], SIGNATURE))
    write_jsonl(tmp_path / "b.jsonl", [{**row, "density": 1.0} for row in system_rows(BAD)])
    report = tmp_path / "r.json"
    assert main(["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--json", str(report)]) == 0
    warning = f"{tmp_path / 'b.jsonl'} carry stored scores without a signature column"
    [printed] = [line for line in capsys.readouterr().out.splitlines() if "without a signature" in line]
    assert printed.startswith(f"warning: {warning}") and str(tmp_path / "a.jsonl") not in printed
    # in the report's warnings too, as every other warning of a comparison (it was only logged)
    assert any(line.startswith(warning) for line in json.loads(report.read_text())["warnings"])


def test_one_checkpoint_loaded_from_two_places_counts_as_one(tmp_path):
    """The checkpoint is told by its revision (a local folder's content hash), not by the path it was loaded from."""
    moved = SIGNATURE.replace("checkpoint=org/a@", "checkpoint=/data/copy-of-a@")
    write_jsonl(tmp_path / "a.jsonl", signed_rows(GOOD, [1.0, 2.0, 3.0, 4.0], SIGNATURE))
    write_jsonl(tmp_path / "b.jsonl", signed_rows(BAD, [0.5, 2.5, 1.0, 3.0], moved))
    assert main(["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]) == 0


def test_a_name_given_twice_in_names_is_blamed_on_names(tiny_checkpoint, two_systems, capsys):
    line = error_line(capsys, run_compare, tiny_checkpoint, *two_systems, "--names", "a,a")
    assert line == "error: --names gives 'a' twice"


def test_the_printed_comparison_does_not_depend_on_the_batch_size(tiny_checkpoint, tmp_path, capsys):
    """Scores move by float noise with the batch size; the p-values and verdicts they give must not."""
    contexts = [[f"hi {word}", "how are you"] for word in "abcdefghijkl"]
    write_jsonl(tmp_path / "a.jsonl", system_rows([f"fine {w} thanks" for w in "abcdefghijkl"], contexts))
    write_jsonl(tmp_path / "b.jsonl", system_rows(["the the the"] * 12, contexts))
    printed = {}
    for batch_size in (1, 5, 64):
        assert run_compare(tiny_checkpoint, tmp_path / "a.jsonl", tmp_path / "b.jsonl", "--batch-size", batch_size) == 0
        lines = capsys.readouterr().out.splitlines()
        printed[batch_size] = [line for line in lines if line.startswith("a ")][-1]  # the pair's line
    assert printed[1] == printed[5] == printed[64]


def test_too_few_rows_are_warned_about_in_the_printed_output(tiny_checkpoint, two_systems, capsys):
    assert run_compare(tiny_checkpoint, *two_systems, "--test", "bs") == 0
    captured = capsys.readouterr()
    assert "warning: 4 rows: too few for approximate randomization to reach p < 0.05: it needs at least 6 rows" in (
        captured.out
    )


def test_a_json_path_that_cannot_be_written_is_an_error_before_anything_is_scored(
    tiny_checkpoint, two_systems, tmp_path, capsys, monkeypatch
):
    from density_metric.cli import compare as command

    monkeypatch.setattr(command, "compare_tables", lambda *a, **k: pytest.fail("scored before --json was checked"))
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "out.json"
    line = error_line(capsys, run_compare, tiny_checkpoint, *two_systems, "--json", out)
    assert line == f"error: cannot write {out}: {tmp_path / 'file'} is not a directory"


def test_a_json_path_in_a_new_folder_is_written_as_score_writes_its_output(tiny_checkpoint, two_systems, tmp_path):
    assert run_compare(tiny_checkpoint, *two_systems, "--json", tmp_path / "new" / "out.json") == 0
    assert [system["name"] for system in json.loads((tmp_path / "new" / "out.json").read_text())["systems"]] == [
        "good",
        "bad",
    ]


# --- flagged rows (issue 56): each system's, and a warning about the one with the most


EMPTY = ["", "   ", "", ""]


def test_each_systems_flagged_rows_are_reported_and_the_one_with_more_is_warned_about(tiny_scorer, caplog):
    with caplog.at_level("WARNING"):
        result = tiny_scorer.compare(CONTEXTS, {"good": GOOD, "empty": EMPTY}, resamples=200, trials=500)
    good, empty = result.systems
    assert (good["flagged"], good["flag_counts"]) == (0, {})
    assert (empty["flagged"], empty["flag_counts"]) == (4, {"empty": 4})
    assert empty["mean"] < good["mean"] and result.pairs[0]["wins_a"] == 1.0  # emptying every reply loses
    [warning] = [w for w in result.warnings if "degenerate" in w]
    assert warning.startswith("'empty' has more degenerate replies than the other systems (4 of 4, against 'good' 0)")
    assert caplog.text.count(warning) == 1 and "rows are flagged" not in caplog.text  # no per-system warning of score()
    table = result.format().splitlines()
    assert table[0].split()[-2:] == ["flagged", "truncated"]
    assert table[2].split()[-2:] == ["0", "0"] and table[3].split()[-4:] == ["4", "(4", "empty)", "0"]


def test_truncated_rows_are_counted_apart_from_degenerate_ones(tiny_scorer):
    """Issue 60: a system of long human replies (truncated) reported "4 flagged" beside a system of empty ones."""
    long_replies = [" ".join([reply] * 40) for reply in GOOD]
    result = tiny_scorer.compare(CONTEXTS, {"long": long_replies, "empty": EMPTY}, resamples=100, trials=100)
    long_, empty = result.systems
    assert (long_["flagged"], long_["truncated"]) == (0, 4) and (empty["flagged"], empty["truncated"]) == (4, 0)
    assert [w for w in result.warnings if "'empty' has more degenerate replies" in w]


RUSSIAN = ["Привет, как дела?", "Спасибо, хорошо.", "Да, конечно.", "Нет, не знаю."]


def test_non_latin_rows_are_not_counted_as_degenerate_and_get_their_own_warning(tiny_scorer):
    """A system of Russian replies is read (not floored): "more degenerate replies ... score the floor" was wrong."""
    result = tiny_scorer.compare(CONTEXTS, {"good": GOOD, "russian": RUSSIAN}, resamples=200, trials=500)
    good, russian = result.systems
    assert (russian["flagged"], russian["flag_counts"]) == (0, {"non-latin": 4}) and good["flagged"] == 0
    assert not [w for w in result.warnings if "degenerate" in w]
    [warning] = [w for w in result.warnings if "non-latin" in w]
    assert "'russian' 4 of 4" in warning and "English" in warning and "'good'" not in warning
    assert [flagged_cell(system) for system in result.systems] == ["0", "0"]


def test_systems_with_as_many_flagged_rows_are_not_warned_about(tiny_scorer):
    result = tiny_scorer.compare(CONTEXTS, {"a": ["", *GOOD[1:]], "b": [*BAD[:3], ""]}, resamples=100, trials=100)
    assert [s["flagged"] for s in result.systems] == [1, 1]
    assert not [w for w in result.warnings if "degenerate" in w]


def test_the_compare_command_reports_flagged_rows_of_scored_and_of_stored_files(tiny_checkpoint, tmp_path, capsys):
    write_jsonl(tmp_path / "good.jsonl", system_rows(GOOD))
    write_jsonl(tmp_path / "empty.jsonl", system_rows(EMPTY))
    fresh = [tmp_path / "good.jsonl", tmp_path / "empty.jsonl", "--json", tmp_path / "a.json"]
    assert run_compare(tiny_checkpoint, *fresh) == 0
    for name in ("good", "empty"):  # the same files, scored first
        assert run(tiny_checkpoint, tmp_path / f"{name}.jsonl", "-o", tmp_path / f"{name}.scored.csv") == 0
    stored = [tmp_path / "good.scored.csv", tmp_path / "empty.scored.csv", "--json", tmp_path / "b.json"]
    assert main(["compare", *map(str, stored), "--checkpoint", str(tmp_path / "none"), "--names", "good,empty"]) == 0
    fresh, stored = (json.loads((tmp_path / f"{name}.json").read_text())["systems"] for name in "ab")
    for systems in (fresh, stored):
        assert [(s["flagged"], s["flag_counts"]) for s in systems] == [(0, {}), (4, {"empty": 4})]
    printed = capsys.readouterr().out
    assert "4 (4 empty)" in printed and "warning: 'empty' has more degenerate replies" in printed


def test_stored_scores_without_a_flags_column_have_unknown_flagged_rows(tmp_path, capsys):
    write_jsonl(tmp_path / "a.jsonl", signed_rows(GOOD, [1.0, 2.0, 3.0, 4.0], SIGNATURE))
    write_jsonl(tmp_path / "b.jsonl", signed_rows(BAD, [0.5, 2.5, 1.0, 3.0], SIGNATURE))
    assert (
        main(["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--json", str(tmp_path / "o.json")]) == 0
    )
    systems = json.loads((tmp_path / "o.json").read_text())["systems"]
    assert [(s["flagged"], s["flag_counts"]) for s in systems] == [(None, None), (None, None)]
    assert capsys.readouterr().out.splitlines()[2].endswith(" -")


def test_scores_from_before_the_floor_are_not_compared_with_floored_ones(tmp_path, capsys):
    """An empty reply scored before issue 56 got a typical score; one scored now gets the floor."""
    write_jsonl(tmp_path / "a.jsonl", signed_rows(GOOD, [1.0, 2.0, 3.0, 4.0], SIGNATURE))
    write_jsonl(tmp_path / "b.jsonl", signed_rows(BAD, [0.5, 2.5, 1.0, 3.0], SIGNATURE + "|floor=v1"))
    line = error_line(capsys, main, ["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")])
    assert "were scored differently (floor '' against 'v1')" in line


def test_the_compare_command_says_each_warning_once(tiny_checkpoint, tmp_path, capsys):
    """Issue 60: the degenerate-replies warning was logged and printed in the report, so read twice."""
    write_jsonl(tmp_path / "good.jsonl", system_rows(GOOD))
    write_jsonl(tmp_path / "empty.jsonl", system_rows(EMPTY))
    assert run_compare(tiny_checkpoint, tmp_path / "good.jsonl", tmp_path / "empty.jsonl") == 0
    captured = capsys.readouterr()
    everything = captured.out + captured.err
    assert everything.count("'empty' has more degenerate replies") == 1
    assert everything.count("too few for approximate randomization") == 1


def test_the_compare_command_tests_each_system_against_a_baseline(tiny_checkpoint, tmp_path, capsys):
    for name, replies in (("base", BAD), ("good", GOOD), ("empty", EMPTY)):
        write_jsonl(tmp_path / f"{name}.jsonl", system_rows(replies))
    files = [tmp_path / f"{name}.jsonl" for name in ("base", "good", "empty")]
    assert run_compare(tiny_checkpoint, *files, "--baseline", "base", "--json", tmp_path / "out.json") == 0
    out = json.loads((tmp_path / "out.json").read_text())
    assert [(p["a"], p["b"]) for p in out["pairs"]] == [("good", "base"), ("empty", "base")]
    assert out["correction"] == {"method": "holm", "tests": 2, "baseline": "base"}
    assert "Holm's correction for 2 tests (against the baseline 'base'" in capsys.readouterr().out


def test_an_unknown_baseline_is_an_error_naming_it_and_the_systems_before_anything_is_scored(tiny_scorer, tmp_path):
    from density_metric.comparison.systems import compare_tables, read_system

    write_jsonl(tmp_path / "good.jsonl", system_rows(GOOD))
    write_jsonl(tmp_path / "bad.jsonl", system_rows(BAD))
    systems = [read_system(tmp_path / "good.jsonl"), read_system(tmp_path / "bad.jsonl")]
    expected = r"baseline 'base' is not one of the systems \['good', 'bad'\]"
    with pytest.raises(ValueError, match=expected):
        compare_tables(systems, lambda: pytest.fail("scored before the baseline was checked"), baseline="base")

    class Unscored:
        signature = "none"

        def score(self, *args, **kwargs):
            pytest.fail("scored before the baseline was checked")

    from density_metric.comparison.systems import compare_responses

    with pytest.raises(ValueError, match=expected):
        compare_responses(Unscored(), CONTEXTS, {"good": GOOD, "bad": BAD}, baseline="base")


def test_scorer_compare_tests_each_system_against_the_baseline_alone(tiny_scorer):
    systems = {"base": BAD, "good": GOOD, "empty": EMPTY}
    result = tiny_scorer.compare(CONTEXTS, systems, baseline="base", resamples=100, trials=100)
    assert [(p["a"], p["b"]) for p in result.pairs] == [("good", "base"), ("empty", "base")]
    good, base = (tiny_scorer.score(CONTEXTS, systems[name]).scores for name in ("good", "base"))
    assert result.pair("good", "base")["delta"] == pytest.approx(good.mean() - base.mean(), rel=1e-6)
    assert result.correction == {"method": "holm", "tests": 2, "baseline": "base"}
