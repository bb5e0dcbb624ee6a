"""Bland replies (train/negatives/bland.py, issue 69): the list mined from the training pairs against a naive count, the
``bland`` kind's rules (never the gold nor a context turn, so a bland gold stays a gold), and a run's validation
``bland`` candidates drawn from the training list."""

import re

import numpy as np
import pytest

from density_train.data.corpora import response_pairs_with_dialogues
from density_train.data.examples import SelectionData
from density_train.evaluation.evaluators import KindAUCs
from density_train.loop.trainer import Trainer
from density_train.negatives.bland import BLAND_FILE, bland_list, bland_replies, use_bland_list
from density_train.negatives.kinds import bland_negative
from density_train.negatives.mix import NegativeMix, draw_labelled_negatives, validation_candidates
from tests.train.loop.test_training import config_for, read_log, synthetic_dialogues

LONG = "I would like to book a table for two tonight , please ."  # 11 words, in every dialogue


def tiny_corpus() -> list[list[str]]:
    """31 dialogues: an opener each, then replies common across dialogues, in a few spellings."""
    dialogues = []
    for i in range(30):
        turns = [f"Question number {i} ?"]
        turns += ["Thank you ."] * (2 if i == 0 else 1) if i < 25 else []
        turns += ["thank you!"] if 25 <= i < 28 else []  # the same key, another text
        turns += ["OK ."] if i < 19 else []
        turns += ["Sure ."] if i < 22 else []
        turns += [LONG, "...", f"Answer {i} ."]
        dialogues.append(turns)
    dialogues.append(["Sure .", "Thank you ."])  # an opener does not count; its reply does
    return dialogues


def naive_bland(dialogues, min_dialogues, max_words):
    """Per key (lowercase, no punctuation or space) of a reply (turn 1..), its first text and the indices of the
    dialogues it is a reply in; the keys in at least ``min_dialogues``, text of at most ``max_words`` words."""
    found = {}
    for index, turns in enumerate(dialogues):
        for turn in turns[1:]:
            key = re.sub(r"[\W_]+", "", turn.lower())
            if key:
                found.setdefault(key, [turn, set()])[1].add(index)
    words = lambda text: len([token for token in text.split() if re.search(r"[^\W_]", token)])  # noqa: E731
    kept = [(text, len(seen)) for text, seen in found.values() if len(seen) >= min_dialogues]
    return sorted([(text, n) for text, n in kept if 0 < words(text) <= max_words], key=lambda row: -row[1])


@pytest.mark.parametrize("min_dialogues, max_words", [(20, 8), (19, 8), (1, 20), (25, 2), (40, 8)])
def test_bland_replies_are_the_naive_count_of_distinct_dialogues(min_dialogues, max_words):
    dialogues = tiny_corpus()
    data = SelectionData.from_pairs(*response_pairs_with_dialogues(dialogues))
    expected = naive_bland(dialogues, min_dialogues, max_words)
    assert bland_replies(data, min_dialogues, max_words) == expected
    # without dialogues, a dialogue is told by its context's first turn: here the same (distinct openers)
    plain = SelectionData.from_pairs(data.contexts, data.responses)
    assert bland_replies(plain, min_dialogues, max_words) == expected


def test_the_default_rule_keeps_common_short_replies_first_spelling_most_dialogues_first():
    data = SelectionData.from_pairs(*response_pairs_with_dialogues(tiny_corpus()))
    # "Thank you ." twice in dialogue 0 counts once, "thank you!" is the same key; "OK ." is in 19 dialogues only
    assert bland_replies(data) == [("Thank you .", 29), ("Sure .", 22)]
    assert bland_list(data) == ("Thank you .", "Sure .") and bland_list(data) is bland_list(data)  # mined once
    with pytest.raises(ValueError, match="min_dialogues and max_words must be >= 1"):
        bland_replies(data, 0)


def test_bland_negative_is_uniform_over_the_list_minus_the_gold_and_the_context():
    replies = ["Thank you .", "Sure .", "OK .", "Why ?"]
    draws = [bland_negative(replies, ["Hello .", "ok!"], "thank you", np.random.default_rng(s)) for s in range(3000)]
    counts = {text: draws.count(text) for text in set(draws)}
    assert set(counts) == {"Sure .", "Why ?"}  # the gold's key and a context turn's key are never drawn
    assert abs(counts["Sure ."] / 3000 - 0.5) < 0.03
    assert bland_negative(replies[:2], ["Sure ."], "Thank you .", np.random.default_rng(0)) is None
    assert bland_negative([], ["Hi ."], "Yes .", np.random.default_rng(0)) is None


def test_a_bland_gold_stays_a_gold_and_a_row_with_no_bland_left_falls_back_to_random():
    data = SelectionData.from_pairs(*response_pairs_with_dialogues(tiny_corpus()))
    rows = list(range(len(data)))
    drawn = draw_labelled_negatives(data, rows, 2, NegativeMix.parse("bland:1"), seed=3, epoch=0)
    assert drawn == draw_labelled_negatives(data, rows[::-1], 2, NegativeMix.parse("bland:1"), seed=3, epoch=0)[::-1]
    for row, negatives in zip(rows, drawn):
        context, gold = data.contexts[row], data.responses[row]
        blands = [text for kind, text in negatives if kind == "bland"]
        assert set(blands) <= set(bland_list(data)) and gold not in blands and not set(blands) & set(context)
        if gold.lower().startswith("thank you"):
            assert "Thank you ." not in blands
    last = len(data) - 1  # "Sure ." -> "Thank you .": the gold and the context hold both bland replies
    assert [kind for kind, _ in drawn[last]] == ["random", "random"]
    assert any(kind == "bland" for row in drawn for kind, _ in row)


def test_a_validation_split_given_the_training_list_draws_from_it():
    train = SelectionData.from_pairs(*response_pairs_with_dialogues(tiny_corpus()))
    valid = SelectionData.from_pairs(*response_pairs_with_dialogues(synthetic_dialogues(10, 1)))
    assert bland_list(valid) == ()  # ten dialogues: a list of its own would be empty
    use_bland_list(valid, bland_list(train))
    values = validation_candidates(valid, ["bland"], seed=0, fallback=False)["bland"]
    assert set(values) - {None} == {"Thank you .", "Sure ."}


def with_bland_replies(dialogues):
    """Synthetic dialogues, 25 of them ending with "Thank you ." and 25 with "OK .": a bland list of two."""
    return [
        [*turns, *(["Thank you ."] if i < 25 else []), *(["OK ."] if i >= 15 else [])]
        for i, turns in enumerate(dialogues)
    ]


def bland_data():
    train = SelectionData.from_pairs(*response_pairs_with_dialogues(with_bland_replies(synthetic_dialogues(40, 0))))
    valid = SelectionData.from_pairs(*response_pairs_with_dialogues(synthetic_dialogues(10, 1)))
    return train, valid


def test_a_runs_validation_bland_kind_uses_the_training_list_and_the_run_writes_it(backbone, tmp_path):
    train, valid = bland_data()
    assert bland_list(train) == ("Thank you .", "OK .")
    trainer = Trainer(
        config_for(backbone, validation_kinds="echo,bland", valid_fit_pairs=12, epochs=1, max_steps_per_epoch=2),
        train,
        valid,
        tmp_path,
    )
    values = trainer.evaluator(KindAUCs).kinds["bland"]
    assert len(values) == len(valid) and set(values) <= {"Thank you .", "OK ."}
    assert (tmp_path / BLAND_FILE).read_text().count("| `") == 2
    trainer.train()
    evaluations = [record for record in read_log(tmp_path) if record["type"] == "eval"]
    assert evaluations and all("auc_density/bland" in record for record in evaluations)


def test_the_bland_kind_without_a_list_is_refused_and_all_leaves_it_out(backbone, tmp_path):
    from tests.train.loop.test_training import data

    train, valid = data()  # no reply is in 20 dialogues
    assert "bland" not in Trainer(config_for(backbone), train, valid, tmp_path / "all").evaluator(KindAUCs).kinds
    with pytest.raises(ValueError, match="--negative-mix: the kind 'bland' has no reply to draw"):
        Trainer(config_for(backbone, negative_mix="random:2,bland:1"), train, valid, tmp_path / "mix")
    with pytest.raises(ValueError, match="--validation-kinds: the kind 'bland' has no reply to draw"):
        Trainer(config_for(backbone, validation_kinds="bland"), train, valid, tmp_path / "valid")
