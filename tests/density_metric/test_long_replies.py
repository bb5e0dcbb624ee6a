"""Long replies (issue 68): the reply's cap is a scoring option, in the signature; a truncated row says which cap cut
it; ``compare`` warns about truncated rows; and two smaller ``compare`` defects of the same issue."""

import json
from pathlib import Path

import numpy as np
import pytest

from density_metric import DensityScorer, compare
from density_metric.cli import main
from density_metric.comparison.significance import compare as compare_scores
from density_metric.comparison.systems import SystemTable, check_same_scorer
from density_metric.encoding.length_options import with_lengths
from density_metric.encoding.packing import pack
from density_metric.encoding.pair_format import PairFormat
from tests.density_metric.cli.test_cli import error_line, read_jsonl, run, write_jsonl

CONTEXTS = [["hi", "how are you"], ["what is the weather"], ["see you tomorrow"], ["good morning"]]
SHORT = ["fine thanks", "nice day", "good day to you", "hello"]
# 30 to 36 words of the tiny vocabulary, a token each: past the tiny checkpoints' cap of 24
LONG = [" ".join([reply] * repeat) for reply, repeat in zip(SHORT, (15, 18, 8, 33))]
POSITIONS = 128  # the tiny encoder's max_position_embeddings (tests/tiny.py)


def scorer(checkpoint, **options) -> DensityScorer:
    return DensityScorer(str(checkpoint), device="cpu", dtype="float32", batch_size=8, **options)


def reply_tokens(scorer_: DensityScorer, replies) -> list[int]:
    tokenizer = scorer_.encoder.tokenizer
    return [len(tokenizer(reply, add_special_tokens=False)["input_ids"]) for reply in replies]


@pytest.mark.parametrize("layout", ["paper", "shared-context"])
def test_a_raised_reply_cap_reads_long_replies_and_leaves_short_ones_as_they_were(
    tiny_checkpoint, tiny_shared_checkpoint, layout
):
    checkpoint = tiny_checkpoint if layout == "paper" else tiny_shared_checkpoint
    default, raised = scorer(checkpoint), scorer(checkpoint, max_response_length=40)
    assert max(reply_tokens(default, LONG)) <= 40 < POSITIONS and min(reply_tokens(default, LONG)) > 24
    # the context keeps its budget: max_length moves with the cap in the shared-context layout, stays in the paper one
    assert raised.encoder.pair_format.max_length == (64 + 16 if layout == "shared-context" else 64)
    tokenizer = default.encoder.tokenizer
    for short in SHORT:  # the same token ids (and positions) at either cap
        rows = [pack(s.encoder.pair_format, tokenizer, [CONTEXTS[0]], [[short]]).rows[0] for s in (default, raised)]
        assert rows[0] == rows[1]
    np.testing.assert_array_equal(raised.score(CONTEXTS, SHORT).scores, default.score(CONTEXTS, SHORT).scores)
    before, after = default.score(CONTEXTS, LONG), raised.score(CONTEXTS, LONG)
    assert before.flags == [["truncated", "truncated_reply"]] * 4 and after.flags == [[]] * 4
    assert np.all(before.scores != after.scores)  # the reply's tokens past 24 are read now


def test_the_cap_beside_the_context_is_what_the_encoders_positions_leave(tiny_checkpoint, tiny_shared_checkpoint):
    context = 64 - 24 - 4  # the shared-context layout's context budget: max_length - cap - [CLS] [SEP] [CLS] [SEP]
    largest = POSITIONS - context - 4
    assert scorer(tiny_shared_checkpoint, max_response_length=largest).encoder.max_length == POSITIONS
    for bad in (largest + 1, 0):
        with pytest.raises(ValueError, match=rf"^max_response_length must be in \[1, {largest}\] for this checkpoint"):
            scorer(tiny_shared_checkpoint, max_response_length=bad)
    # the paper layout: the reply takes its tokens from max_length, less [CLS] [SEP] [SEP]
    with pytest.raises(ValueError, match=r"^max_response_length must be in \[1, 61\] for this checkpoint, got 62"):
        scorer(tiny_checkpoint, max_response_length=62)
    with pytest.raises(ValueError, match="max_response_length must be an integer number of tokens, got '40'"):
        scorer(tiny_checkpoint, max_response_length="40")
    # both options: as given
    both = with_lengths(PairFormat(max_length=64, max_response_length=24, layout="shared-context"), 100, 50, 4, 128)
    assert (both.max_length, both.max_response_length) == (100, 50)


def test_the_signature_names_a_cap_that_is_not_the_checkpoints_and_compare_refuses_two_caps(tiny_checkpoint):
    default, raised = scorer(tiny_checkpoint), scorer(tiny_checkpoint, max_response_length=40)
    assert "max_response_length" not in default.signature
    assert "|max_length=64|max_response_length=40|" in raised.signature
    assert scorer(tiny_checkpoint, max_response_length=24).signature == default.signature
    systems = [
        SystemTable(name, Path(f"{name}.jsonl"), [], np.zeros(0), signature=s.signature)
        for name, s in (("a", default), ("b", raised))
    ]
    with pytest.raises(ValueError, match=r"scored differently \(max_response_length '' against '40'\)"):
        check_same_scorer(systems)


def test_the_warning_of_score_names_the_cap_that_cut_the_rows(tiny_scorer, caplog):
    tiny_scorer.score([["hi"], ["how are you " * 40]], [LONG[0], "fine"])
    assert "2 truncated (1 reply cut at max_response_length tokens, 1 context cut to fit max_length)" in caplog.text
    assert "truncated to max_length" not in caplog.text


def test_the_score_command_takes_max_response_length(tiny_checkpoint, tmp_path, capsys):
    write_jsonl(tmp_path / "in.jsonl", [{"context": c, "response": r} for c, r in zip(CONTEXTS, LONG)])
    assert run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl", "--max-response-length", 40) == 0
    records = read_jsonl(tmp_path / "out.jsonl")
    assert [r["density_flags"] for r in records] == [[]] * 4
    assert "|max_response_length=40|" in records[0]["density_signature"]
    np.testing.assert_allclose(
        [r["density"] for r in records], scorer(tiny_checkpoint, max_response_length=40).score(CONTEXTS, LONG).scores
    )
    line = error_line(
        capsys, run, tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "o.jsonl", "--max-response-length", 62
    )
    assert line.startswith("error: max_response_length must be in [1, 61] for this checkpoint, got 62")


def test_the_evaluate_module_takes_max_response_length(tiny_checkpoint):
    import evaluate

    from .test_evaluate_module import MODULE_PATH

    metric = evaluate.load(MODULE_PATH, checkpoint=str(tiny_checkpoint), device="cpu", max_response_length=40)
    results = metric.compute(contexts=CONTEXTS, responses=LONG)
    assert results["flags"] == [[]] * 4 and "|max_response_length=40|" in results["signature"]


def test_compare_counts_truncated_rows_per_system_and_warns_in_the_report_and_the_json(
    tiny_checkpoint, tmp_path, capsys
):
    """Issue 68: compare called one system better over another whose rows were all truncated, with no warning."""
    for name, replies in (("short", SHORT), ("long", LONG)):
        write_jsonl(tmp_path / f"{name}.jsonl", [{"context": c, "response": r} for c, r in zip(CONTEXTS, replies)])
    options = ["--checkpoint", str(tiny_checkpoint), "--device", "cpu", "--resamples", "100", "--trials", "100"]
    paths = [str(tmp_path / "short.jsonl"), str(tmp_path / "long.jsonl")]
    assert main(["compare", *paths, *options, "--json", str(tmp_path / "out.json")]) == 0
    printed = capsys.readouterr().out
    report = json.loads((tmp_path / "out.json").read_text())
    short, long_ = report["systems"]
    assert (short["truncated"], long_["truncated"]) == (0, 4)
    assert long_["flag_counts"] == {"truncated": 4, "truncated_reply": 4}
    [warning] = [w for w in report["warnings"] if w.startswith("truncated rows")]
    assert "'short' 0 of 4, 'long' 4 of 4 (4 reply past max_response_length)" in warning
    assert "--max-response-length" in warning and f"warning: {warning}" in printed
    assert "4 (4 reply)" in printed.splitlines()[3]  # the long system's truncated column
    # raised, the cap reads every reply whole: nothing truncated, no warning
    assert main(["compare", *paths, *options, "--max-response-length", "40", "--json", str(tmp_path / "o.json")]) == 0
    report = json.loads((tmp_path / "o.json").read_text())
    assert [s["truncated"] for s in report["systems"]] == [0, 0]
    assert not [w for w in report["warnings"] if w.startswith("truncated rows")]


def test_truncated_rows_of_a_table_written_before_the_caps_were_told_apart_still_compare(tmp_path):
    from density_metric.comparison.systems import compare_tables, read_system

    signature = "density_metric=0.1.0|checkpoint=org/a@sha256:1|max_length=256|dtype=float32|floor=v2|specials=text"
    for name, flags in (("a", [["truncated"], [], [], []]), ("b", [[], [], [], []])):
        rows = [
            {"context": c, "response": r, "density": float(i), "density_flags": f, "density_signature": signature}
            for i, (c, r, f) in enumerate(zip(CONTEXTS, SHORT, flags))
        ]
        write_jsonl(tmp_path / f"{name}.jsonl", rows)
    systems = [read_system(tmp_path / f"{name}.jsonl") for name in "ab"]
    result, _ = compare_tables(systems, resamples=50, trials=50)
    assert [(s["flagged"], s["truncated"]) for s in result.systems] == [(0, 1), (0, 0)]
    [warning] = [w for w in result.warnings if w.startswith("truncated rows")]
    assert "'a' 1 of 4, 'b' 0 of 4;" in warning


def test_compare_accepts_calibrated_scores_that_list_the_systems_in_another_order():
    rng = np.random.default_rng(3)
    scores = {"a": rng.normal(size=30), "b": rng.normal(size=30) + 1}
    calibrated = {"b": rng.uniform(size=30), "a": rng.uniform(size=30)}
    result = compare(scores, calibrated=calibrated, resamples=50, trials=50)
    assert [s["calibrated_mean"] for s in result.systems] == [calibrated["a"].mean(), calibrated["b"].mean()]
    with pytest.raises(ValueError, match="calibrated: systems"):
        compare(scores, calibrated={"a": calibrated["a"], "c": calibrated["b"]})


def test_a_bootstrap_interval_clear_of_zero_beside_no_significant_difference_says_which_test_decides():
    """Issue 68: the printed line showed a 95 % interval clear of 0 beside "no significant difference"."""
    a = np.random.default_rng(5).normal(0.6, 1, size=10)  # found by a search: the two tests disagree on it
    result = compare_scores({"a": a, "b": np.zeros(10)}, resamples=1000, trials=2000)
    [pair] = result.pairs
    assert pair["ci"][0] > 0 and not pair["significant"]
    lines = result.format().splitlines()
    [line] = [line for line in lines if line.startswith("a ") and "no significant difference" in line]
    assert "by approximate randomization" in line and "the bootstrap's and uncorrected, excludes 0" in line
    assert any("the 95% CI is the paired bootstrap's, uncorrected: it does not decide" in line for line in lines)
