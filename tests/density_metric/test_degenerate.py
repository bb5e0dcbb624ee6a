"""Degenerate replies (issue 56): empty, blank and unreadable replies score the floor, every row says when its score
means little, and a run warns once with the counts. The tiny random checkpoint: the guarantee holds whatever the
model learned. The bundled model's checks are in tests/test_integration.py."""

import json
import logging

import numpy as np
import pyarrow.parquet as pq
import pytest

from density_metric.cli import main
from density_metric.encoding.packing import pack
from density_metric.encoding.pair_format import PairFormat, join_context, special_token_layout
from density_metric.encoding.text_ids import reply_ids as text_reply_ids
from density_metric.row_flags import count_flags, flag_summary, floor_distance, floor_distances

from ..tiny import synthetic_pairs

BLANK = ["", "   ", "\n\t ", "\u200b"]  # the last: a zero-width space, which the tokenizer drops
UNREADABLE = ["😀", "😀😂👍", "😀 😂"]  # the tiny vocabulary knows no emoji: every token is [UNK]


def flag_warnings(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "density_metric.row_flags"]


# ------------------------------------------------------------------ the floor


@pytest.mark.parametrize("reply", BLANK + UNREADABLE)
def test_an_empty_blank_or_unreadable_reply_scores_below_every_human_reply(tiny_scorer, reply):
    contexts, responses = synthetic_pairs(200, seed=40)
    human = tiny_scorer.score(contexts, responses)
    degenerate = tiny_scorer.score(contexts, [reply] * len(contexts))
    assert degenerate.scores.max() < human.scores.min()
    assert np.all(degenerate.scores <= -2 * tiny_scorer.stats.quantiles[-1])  # below every held-out human reply
    assert np.all(degenerate.calibrated == 0.0)
    assert np.isfinite(degenerate.mean_score)


def test_the_floor_is_twice_the_largest_held_out_distance_and_never_raises_a_score():
    quantiles = np.linspace(1.0, 10.0, 1001)
    assert floor_distance(quantiles) == 20.0
    distances = np.array([3.0, 3.0, 3.0, 3.0, 50.0])
    flags = [["empty"], ["unreadable", "truncated"], ["punctuation"], [], ["empty"]]
    np.testing.assert_array_equal(floor_distances(distances, flags, quantiles), [20.0, 20.0, 20.0, 3.0, 50.0])
    assert distances[0] == 3.0  # a new array


def test_a_truncated_reply_keeps_its_own_score(tiny_scorer):
    contexts = [["hi"], ["how are you " * 40]]
    responses = ["fine thanks", "fine thanks"]
    features = tiny_scorer.features(contexts, responses)
    result = tiny_scorer.score(contexts, responses)
    assert result.flags == [[], ["truncated", "truncated_context"]]
    np.testing.assert_allclose(result.scores, -tiny_scorer.stats.distances(features), rtol=1e-6)


# No letter or digit in any script: Latin punctuation, CJK and Arabic punctuation, symbols, emoji with punctuation.
NO_WORDS = ["...", "?!", ":)", "-", "。！", "؟", "😀!", "!!! ???", "$ % &"]
WORDS = ["ok", "2", "é!", "日本", "٣", "ok?!"]  # a letter or a digit in some script


@pytest.mark.parametrize("reply", NO_WORDS)
def test_a_reply_without_a_letter_or_digit_gets_the_floor_and_says_why(tiny_scorer, reply):
    contexts, responses = synthetic_pairs(100, seed=41)
    human = tiny_scorer.score(contexts, responses)
    wordless = tiny_scorer.score(contexts, [reply] * len(contexts))
    assert wordless.scores.max() < human.scores.min()
    assert np.all(wordless.scores <= -2 * tiny_scorer.stats.quantiles[-1])
    assert np.all(wordless.calibrated == 0.0)
    assert all(flags[0] in ("punctuation", "unreadable") for flags in wordless.flags)


@pytest.mark.parametrize("reply", WORDS)
def test_a_reply_with_a_letter_or_digit_in_any_script_is_not_floored(tiny_scorer, reply):
    result = tiny_scorer.score([["hi"]], [reply])
    # The tiny vocabulary knows no CJK or Arabic-Indic digit; 日本 is in another script than Latin (not floored).
    assert [flag for flag in result.flags[0] if flag != "non-latin"] in ([], ["unreadable"])
    if "unreadable" not in result.flags[0]:
        assert result.scores[0] == pytest.approx(
            -tiny_scorer.stats.distances(tiny_scorer.features([["hi"]], [reply]))[0]
        )


# ------------------------------------------------------------------ the flags


def test_every_row_says_when_its_score_means_little(tiny_scorer):
    contexts = [["hi"], ["hi"], ["hi"], ["hi"], ["hi"], ["how are you " * 40], ["hi"]]
    responses = ["fine thanks", "", "   ", "😀😀", "?!", "fine", "hello " * 30]
    result = tiny_scorer.score(contexts, responses)
    cut_context, cut_reply = ["truncated", "truncated_context"], ["truncated", "truncated_reply"]
    assert result.flags == [[], ["empty"], ["empty"], ["unreadable"], ["punctuation"], cut_context, cut_reply]
    assert result.to_dict()["flags"] == result.flags
    ranked = tiny_scorer.rank(["hi"], ["fine thanks", "", "😀"])
    assert ranked.flags == [[], ["empty"], ["unreadable"]]
    np.testing.assert_allclose(ranked.scores, tiny_scorer.score([["hi"]] * 3, ["fine thanks", "", "😀"]).scores)


def test_an_empty_context_with_an_empty_reply_is_flagged_empty_and_nothing_else(tiny_scorer):
    assert tiny_scorer.score([[]], [""]).flags == [["empty"]]


@pytest.mark.parametrize("layout", ["paper", "shared-context"])
def test_truncated_says_whether_the_encoder_reads_less_than_the_whole_pair(tiny_scorer, layout):
    """Against a naive reference: each pair encoded alone, its kept context and reply tokens counted."""
    tokenizer = tiny_scorer.encoder.tokenizer
    pair_format = PairFormat(max_length=32, max_response_length=10, layout=layout)
    before, between, after = special_token_layout(tokenizer)
    words = "hi how are you fine thanks what a good day".split()
    contexts = [[" ".join(words[: i % 10])] * (i % 4) for i in range(40)]
    responses = [" ".join(words[: (3 * i) % 13]) for i in range(40)]
    reply_ids = text_reply_ids(tokenizer, responses)
    expected = []
    for context, reply in zip(contexts, reply_ids):
        row = pack(pair_format, tokenizer, [context], [[responses[len(expected)]]]).rows[0]
        full_context = len(tokenizer(join_context(context, "[SEP]", tokenizer), add_special_tokens=False)["input_ids"])
        if layout == "paper":
            kept_reply = min(len(reply), pair_format.max_response_length)
            kept_context = len(row.ids) - kept_reply - len(before) - len(between) - len(after)
        else:
            in_context = sum(segment == 0 for segment in row.segments)
            kept_context = in_context - len(before) - len(between)
            kept_reply = len(row.ids) - in_context - len(before) - len(after)
        expected.append(kept_context < full_context or kept_reply < len(reply))
    assert any(expected) and not all(expected)
    assert pack(pair_format, tokenizer, contexts, [[r] for r in responses]).cut.tolist() == expected


# ------------------------------------------------------------------ one warning per run


def test_score_logs_one_warning_with_the_counts(tiny_scorer, caplog):
    contexts = [["hi"]] * 6
    with caplog.at_level(logging.WARNING):
        tiny_scorer.score(contexts, ["", "fine", "   ", "😀", "?!", "hello"])
    [warning] = flag_warnings(caplog)
    assert warning.startswith("4 of 6 rows are flagged: 2 empty or blank, 1 unreadable (every token unknown), 1 ")
    assert "floor" in warning


def test_a_dialogue_gives_each_turn_its_flags_and_the_floor_and_warns_once(tiny_scorer, caplog):
    dialogue = ["hello there", "", "the weather is nice", "😀😀"]
    [result] = tiny_scorer.score_dialogues([dialogue])
    assert result["turn_flags"] == [["empty"], [], ["unreadable"]]
    alone = tiny_scorer.score([["hello there", ""]], ["the weather is nice"]).scores[0]
    assert result["turn_scores"][1] == pytest.approx(alone)  # an unflagged turn keeps its own score
    floor = -2 * tiny_scorer.stats.quantiles[-1]
    assert result["turn_scores"][0] <= floor and result["turn_scores"][2] <= floor
    assert result["turn_calibrated"][0] == result["turn_calibrated"][2] == 0.0
    assert len(flag_warnings(caplog)) == 1


def test_no_warning_without_a_flagged_row_or_with_warn_false(tiny_scorer, caplog):
    with caplog.at_level(logging.WARNING):
        tiny_scorer.score([["hi"]], ["fine thanks"])
        tiny_scorer.score([["hi"]], [""], warn=False)
    assert flag_warnings(caplog) == []


def test_the_summary_counts_rows_and_each_flag():
    counts = count_flags([[], ["empty"], ["unreadable", "truncated"], ["truncated"]])
    assert (counts["rows"], counts["flagged"], counts["empty"], counts["truncated"]) == (4, 3, 1, 2)
    assert flag_summary(count_flags([[], []])) is None
    summary = flag_summary(count_flags([["truncated"]]))  # a table written before the caps were told apart
    assert summary.startswith("1 of 1 row is flagged: 1 truncated;") and "floor" not in summary
    summary = flag_summary(count_flags([["truncated", "truncated_reply"], ["truncated", "truncated_context"]]))
    assert summary.startswith(
        "2 of 2 rows are flagged: 2 truncated (1 reply cut at max_response_length tokens, 1 context cut to fit "
        "max_length);"
    )


def test_a_dataset_gets_a_flags_column_of_strings_and_one_warning(tiny_scorer, caplog):
    import datasets

    contexts, responses = synthetic_pairs(10, seed=41)
    responses[7] = ""  # only the second chunk has a flagged row: the column's type comes from the first
    ds = datasets.Dataset.from_dict({"context": contexts, "response": responses})
    with caplog.at_level(logging.WARNING):
        scored = tiny_scorer.score_dataset(ds, chunk_size=4)
    assert scored.features["density_flags"] == datasets.List(datasets.Value("string"))
    assert scored["density_flags"] == [[]] * 7 + [["empty"]] + [[]] * 2
    [warning] = flag_warnings(caplog)
    assert warning.startswith("1 of 10 rows are flagged: 1 empty or blank")


# ------------------------------------------------------------------ the command line


@pytest.fixture
def flagged_rows():
    return [
        {"id": 1, "context": ["hi"], "response": "fine thanks"},
        {"id": 2, "context": ["hi"], "response": ""},
        {"id": 3, "context": ["hi"], "response": "😀"},
        {"id": 4, "context": ["how are you"], "response": "nice day"},
        {"id": 5, "context": ["hi"], "response": "   "},
    ]


def score_file(tiny_checkpoint, source, out, *options):
    args = ["score", str(source), "-o", str(out), "--checkpoint", str(tiny_checkpoint), "--device", "cpu"]
    return main([*args, "--no-progress", *options])


def test_the_score_command_writes_flags_and_warns_once_for_a_file_of_several_chunks(
    tiny_checkpoint, flagged_rows, tmp_path, caplog, monkeypatch
):
    import functools

    from density_metric.cli import score as score_cli
    from density_metric.io import tables

    monkeypatch.setattr(score_cli, "score_rows", functools.partial(tables.score_rows, chunk_rows=2))
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(row) + "\n" for row in flagged_rows), encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert score_file(tiny_checkpoint, tmp_path / "in.jsonl", tmp_path / "out.jsonl") == 0
    out = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [row["density_flags"] for row in out] == [[], ["empty"], ["unreadable"], [], ["empty"]]
    assert [row["density_calibrated"] for row in out][1:3] == [0.0, 0.0]
    [warning] = flag_warnings(caplog)
    assert warning.startswith("3 of 5 rows are flagged: 2 empty or blank, 1 unreadable")


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_csv_and_parquet_outputs_hold_the_flags_as_lists(tiny_checkpoint, flagged_rows, tmp_path, suffix):
    (tmp_path / "in.jsonl").write_text("".join(json.dumps(row) + "\n" for row in flagged_rows), encoding="utf-8")
    assert score_file(tiny_checkpoint, tmp_path / "in.jsonl", tmp_path / f"out.{suffix}") == 0
    if suffix == "csv":
        import csv

        with open(tmp_path / "out.csv", encoding="utf-8", newline="") as handle:
            flags = [json.loads(row["density_flags"]) for row in csv.DictReader(handle)]
    else:
        flags = pq.read_table(tmp_path / "out.parquet").column("density_flags").to_pylist()
    assert flags == [[], ["empty"], ["unreadable"], [], ["empty"]]


def test_a_parquet_output_without_a_flagged_row_has_a_list_of_strings_column(tiny_checkpoint, tmp_path):
    import pyarrow as pa

    (tmp_path / "in.jsonl").write_text(json.dumps({"context": ["hi"], "response": "fine"}) + "\n", encoding="utf-8")
    assert score_file(tiny_checkpoint, tmp_path / "in.jsonl", tmp_path / "out.parquet") == 0
    assert pq.read_table(tmp_path / "out.parquet").schema.field("density_flags").type == pa.list_(pa.string())


@pytest.mark.parametrize("layout", ["paper", "shared-context"])
def test_score_reads_the_flags_of_its_own_rows_as_row_flags_does(tiny_scorer, layout):
    """score() takes each pair's flags from the rows it encoded (grouped by context); row_flags reads them anew."""
    from dataclasses import replace

    from density_metric.row_flags import row_flags

    contexts, responses = synthetic_pairs(30, seed=49)
    contexts = [contexts[i % 7] + (["how are you " * 20] if i % 5 == 0 else []) for i in range(30)]
    responses[2], responses[9], responses[14], responses[21] = "", "?!", "😀", "fine thanks " * 40
    encoder = tiny_scorer.encoder
    format_before = encoder.pair_format
    encoder.pair_format = replace(format_before, layout=layout)
    try:
        flags = tiny_scorer.score(contexts, responses, warn=False).flags
        expected = row_flags(encoder.pair_format, encoder.tokenizer, contexts, responses)
    finally:
        encoder.pair_format = format_before
    assert flags == expected
    assert {"truncated"} <= {flag for row in flags for flag in row} and flags[2] == ["empty"]
