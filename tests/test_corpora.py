"""Corpora as datasets, training pairs, and negatives."""

import json
from pathlib import Path

import pytest

from train.corpora import (
    load_convai2,
    load_dailydialog,
    load_hub_dialogues,
    load_jsonl_dialogues,
    response_pairs,
    response_pairs_with_dialogues,
)
from train.data import SelectionData, epoch_negatives

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

CONVAI2 = """1 your persona: i like dogs.
2 your persona: i am a nurse.
3 hi how are you ?\tgood , just walked my dog .
4 what breed ?\ta poodle .
1 your persona: i sing.
2 hello\thi there , i just sang .
"""


def test_convai2_persona_is_prefix_and_only_self_turns_are_responses(tmp_path):
    (tmp_path / "c.txt").write_text(CONVAI2)
    corpus = load_convai2(tmp_path / "c.txt")
    assert len(corpus) == 2
    contexts, responses = response_pairs(corpus)
    assert responses == ["good , just walked my dog .", "a poodle .", "hi there , i just sang ."]
    assert contexts[1] == [
        "your persona: i like dogs.",
        "your persona: i am a nurse.",
        "hi how are you ?",
        "good , just walked my dog .",
        "what breed ?",
    ]
    assert contexts[2] == ["your persona: i sing.", "hello"]


def test_pairs_with_dialogues_add_each_pairs_turns_and_gold_index_without_the_prefix(tmp_path):
    (tmp_path / "c.txt").write_text(CONVAI2)
    corpus = load_convai2(tmp_path / "c.txt")
    contexts, responses, turns, indices = response_pairs_with_dialogues(corpus)
    assert (contexts, responses) == response_pairs(corpus)
    assert indices == [1, 3, 1]
    assert turns[0] == ["hi how are you ?", "good , just walked my dog .", "what breed ?", "a poodle ."]
    assert turns[0] is turns[1]  # one list per dialogue
    assert all(t[i] == r for t, i, r in zip(turns, indices, responses))
    plain = response_pairs_with_dialogues([["a", "b", "c"]])
    assert plain == ([["a"], ["a", "b"]], ["b", "c"], [["a", "b", "c"], ["a", "b", "c"]], [1, 2])
    data = SelectionData.from_pairs(*response_pairs_with_dialogues(corpus))
    assert data.pool == SelectionData.from_pairs(*response_pairs(corpus)).pool and data.turn_indices == indices


def test_malformed_convai2_line_names_file_and_line(tmp_path):
    (tmp_path / "c.txt").write_text("1 your persona: x.\n2 no tab here\n")
    with pytest.raises(ValueError, match=r"c.txt, line 2: expected 'partner<TAB>self'"):
        load_convai2(tmp_path / "c.txt")


def test_jsonl_dialogues_make_every_later_turn_a_response(tmp_path):
    (tmp_path / "d.jsonl").write_text(json.dumps(["a", "b", "c"]) + "\n" + json.dumps({"turns": ["x", "y"]}) + "\n")
    contexts, responses = response_pairs(load_jsonl_dialogues(tmp_path / "d.jsonl"))
    assert responses == ["b", "c", "y"] and contexts == [["a"], ["a", "b"], ["x"]]
    (tmp_path / "bad.jsonl").write_text(json.dumps({"turns": "not a list"}) + "\n")
    with pytest.raises(ValueError, match="bad.jsonl, line 1"):
        load_jsonl_dialogues(tmp_path / "bad.jsonl")


def test_hub_style_dataset_folder_loads_through_datasets(tmp_path):
    for split in ("train", "validation"):
        (tmp_path / f"{split}.jsonl").write_text(json.dumps({"turns": [f"{split} a", f"{split} b"]}) + "\n")
    assert response_pairs(load_hub_dialogues(str(tmp_path), "validation"))[1] == ["validation b"]


@pytest.mark.skipif(not (DATA / "dailydialog").is_dir(), reason="shared data not beside the checkout")
def test_dailydialog_and_convai2_pair_counts_match_their_sources():
    assert len(response_pairs(load_dailydialog(DATA / "dailydialog", "validation"))[1]) == 7_069
    assert len(response_pairs(load_convai2(DATA / "convai2" / "valid_self_original_no_cands.txt"))[1]) == 7_801


def test_negatives_never_include_the_gold_or_a_context_turn_and_are_seeded():
    contexts = [["u1", "u2"], ["u3"], ["u4", "u5", "u6"]] * 5
    responses = ["r1", "r2", "r3"] * 5
    data = SelectionData.from_pairs(contexts, responses)
    negatives = data.negatives(3, seed=42)
    for context, gold, chosen in zip(contexts, responses, negatives):
        assert len(chosen) == len(set(chosen)) == 3
        assert gold not in chosen and not set(context) & set(chosen)
    assert negatives == data.negatives(3, seed=42)
    assert epoch_negatives(data, 3, 42, epoch=1, resample=False) == negatives
    assert epoch_negatives(data, 3, 42, epoch=1, resample=True) != negatives


def test_train_cli_names_the_missing_corpus_option(train_cli_error):
    assert "--corpus dailydialog needs --data-dir" in train_cli_error(["fit", "--out", "unused"])
    assert "--corpus jsonl needs --valid-file" in train_cli_error(
        ["train", "--corpus", "jsonl", "--train-file", "a.jsonl", "--out", "unused"]
    )
