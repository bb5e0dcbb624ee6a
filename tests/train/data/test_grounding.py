"""Grounded training contexts (train/data/grounding.py): lines the gold uses, never the gold, never benchmark text."""

import json

import numpy as np
import pytest

from density_train.data.corpora import response_pairs_with_dialogues
from density_train.data.examples import SelectionData
from density_train.data.grounding import (
    PERSONA,
    GroundingIndex,
    GroundingSpec,
    benchmark_sentences,
    ground_pairs,
)
from density_train.data.text import content_words, normalise
from density_train.negatives.mix import NegativeMix, draw_labelled_negatives

DIALOGUES = [
    ["Do you play the violin ?", "Yes , I practise the violin every morning before school .", "That is great ."],
    ["My sister bought a new violin yesterday .", "Was it expensive ?", "Very , it cost a fortune ."],
    ["I went fishing at the lake .", "Did you catch any trout ?", "Two big trout , we grilled them ."],
    ["The lake was frozen this winter .", "Could you skate on it ?", "Yes , we skated every weekend ."],
    ["Where is the station ?", "Turn left at the bakery .", "Thanks , the bakery smells lovely ."],
    ["I love violin concerts at the old hall .", "Which one was the best ?", "The winter concert ."],
    ["Yes , I practise the violin every morning before school .", "Wow .", "Indeed ."],  # the gold, verbatim
]


def gold_and_owner(text):
    for number, turns in enumerate(DIALOGUES):
        if text in turns:
            return number
    raise AssertionError(text)


def test_spec_parses_its_items_and_names_the_flag_in_errors():
    assert GroundingSpec.parse("") is None
    assert GroundingSpec.parse("rate=1,used=1") == GroundingSpec(rate=1.0, used=1, distractors=2)
    assert str(GroundingSpec.parse("distractors=3")) == "rate=0.5,used=2,distractors=3"
    for bad in ("rate=0", "used=0", "colour=red", "rate=x", "used"):
        with pytest.raises(ValueError, match="--grounding"):
            GroundingSpec.parse(bad)


def test_used_lines_share_content_words_with_the_gold_and_come_from_other_dialogues():
    index = GroundingIndex(DIALOGUES)
    gold = "Yes , I practise the violin every morning before school ."
    spec = GroundingSpec(used=2, distractors=1)
    lines = index.lines(gold, 0, spec, np.random.default_rng(0))
    assert len(lines) == 3 and all(line.startswith(PERSONA) for line in lines)
    texts = [line[len(PERSONA) :] for line in lines]
    sharing = [text for text in texts if set(content_words(text)) & set(content_words(gold))]
    assert len(sharing) == 2  # the used lines; the distractor shares no content word
    assert all(gold_and_owner(text) != 0 for text in texts)


def test_no_line_is_the_gold_or_a_near_copy_of_it():
    index = GroundingIndex(DIALOGUES)
    gold = "Yes , I practise the violin every morning before school ."
    for seed in range(20):
        for line in index.lines(gold, 0, GroundingSpec(used=3, distractors=2), np.random.default_rng(seed)):
            assert normalise(line[len(PERSONA) :]) != normalise(gold)
            words = set(content_words(line))
            assert sum(token in words for token in content_words(gold)) / len(content_words(gold)) < 0.8


def test_lines_are_a_function_of_the_seed():
    index = GroundingIndex(DIALOGUES)
    gold, spec = "Yes , I practise the violin every morning before school .", GroundingSpec(used=1, distractors=2)
    first = index.lines(gold, 0, spec, np.random.default_rng(5))
    assert first is not None and first == index.lines(gold, 0, spec, np.random.default_rng(5))
    assert any(first != index.lines(gold, 0, spec, np.random.default_rng(s)) for s in range(6, 12))


def test_a_gold_that_no_other_sentence_grounds_gets_no_lines():
    assert GroundingIndex(DIALOGUES).lines("Wow , indeed .", 6, GroundingSpec(), np.random.default_rng(0)) is None


def test_excluded_sentences_are_never_chosen():
    banned = {normalise("I love violin concerts at the old hall .")}
    index = GroundingIndex(DIALOGUES, excluded=banned)
    gold = "Yes , I practise the violin every morning before school ."
    for seed in range(20):
        for line in index.lines(gold, 0, GroundingSpec(used=3, distractors=3), np.random.default_rng(seed)):
            assert normalise(line[len(PERSONA) :]) not in banned


def grounded_data(rate=1.0, seed=0):
    data = SelectionData.from_pairs(*response_pairs_with_dialogues(DIALOGUES))
    return data, *ground_pairs(data, GroundingSpec(rate=rate, used=1, distractors=1), seed)


def test_ground_pairs_puts_lines_before_the_context_and_keeps_pool_and_dialogues():
    data, grounded, count = grounded_data()
    assert 0 < count <= len(data) and grounded.pool == data.pool and grounded.dialogues == data.dialogues
    with_lines = 0
    for before, after in zip(data.contexts, grounded.contexts):
        lines = after[: len(after) - len(before)]
        assert after[len(lines) :] == before and all(line.startswith(PERSONA) for line in lines)
        with_lines += bool(lines)
    assert with_lines == count
    assert grounded_data()[1].contexts == grounded.contexts  # seeded
    assert grounded_data(rate=0.01)[2] < count


def test_copy_negatives_never_copy_a_grounding_line():
    _, grounded, _ = grounded_data()
    mix = NegativeMix.parse("echo:1,earlier:1,span:1")
    drawn = draw_labelled_negatives(grounded, range(len(grounded)), 3, mix, seed=0, epoch=0)
    for context, negatives in zip(grounded.contexts, drawn):
        lines = [line for line in context if line.startswith(PERSONA)]
        for kind, text in negatives:
            assert not text.startswith("your persona") and not any(text in line for line in lines if kind != "random")


def test_benchmark_sentences_read_the_sets_and_dailydialogs_held_out_splits(tmp_path):
    (tmp_path / "usr").mkdir()
    row = {"context": ["Hi there. How are you?"], "response": "Fine!", "reference": None, "score": 1}
    (tmp_path / "usr" / "x.normalized.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "dailydialog").mkdir()
    (tmp_path / "dailydialog" / "dialogues_test.txt").write_text("Good day . __eou__ Same to you . __eou__\n")
    found = benchmark_sentences(tmp_path)
    assert {"hithere", "howareyou", "fine", "goodday", "sametoyou"} == found
    with pytest.raises(ValueError, match="--grounding-exclude"):
        benchmark_sentences(tmp_path / "usr" / "none")


def test_no_line_is_a_sentence_of_the_pairs_own_dialogue_even_when_another_dialogue_repeats_it():
    """A sentence that occurs in two dialogues is indexed once, under the first; the pair's own dialogue must
    still never give it a line (it gave the gold's own context turn, or the turn after the gold, as grounding)."""
    repeated = "I bought a red bicycle yesterday ."
    dialogues = [
        [repeated, "Nice colour ."],
        ["The shop sells a red bicycle and blue helmets .", "Good to know ."],
        [repeated, "Was the red bicycle expensive at the shop ?", "It cost a lot , the red bicycle ."],
    ]
    data = SelectionData.from_pairs(*response_pairs_with_dialogues(dialogues))
    grounded, count = ground_pairs(data, GroundingSpec(rate=1.0, used=2, distractors=0), seed=0)
    assert count > 0
    for context, turns in zip(grounded.contexts, grounded.dialogues):
        own = {normalise(turn) for turn in turns}
        for line in context:
            if line.startswith(PERSONA):
                assert normalise(line[len(PERSONA) :]) not in own, line


def test_benchmark_sentences_include_persona_and_fact_lines_references_and_whole_dialogues(tmp_path):
    (tmp_path / "usr").mkdir()
    rows = [
        {"context": [], "response": "Ok .", "fact": ["your persona: i walk dogs for a living."]},
        {"context": [], "response": "Sure .", "fact": "Flasher will perform at the festival."},
        {"context": [], "response": "Yes .", "references": ["What experience do you have?", "Tell me more."]},
        {"dialogue": ["Hello robot.", "Hi human."], "score": 3},
    ]
    (tmp_path / "usr" / "x.normalized.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    found = benchmark_sentences(tmp_path)
    for key in ("iwalkdogsforaliving", "flasherwillperformatthefestival", "whatexperiencedoyouhave", "tellmemore"):
        assert key in found
    assert {"hellorobot", "hihuman"} <= found
