"""--keep-lines (issue 55): grounding lines read whole where they fit, the oldest dialogue turns cut instead.

PairFormat.keep_lines is checked against a naive reference that joins and tokenises every candidate context as the
encoder would; then the grounding sets and a training run that use it."""

import random

import pytest
from transformers import BertTokenizer

from density_metric.encoding.packing import pack
from density_metric.encoding.pair_format import PairFormat, join_context
from density_train.data.corpora import response_pairs_with_dialogues
from density_train.data.examples import SelectionData
from density_train.data.grounded_corpora import load_personachat
from density_train.evaluation.evaluators import GroundingSignals
from density_train.evaluation.grounding_validation import GroundingSet

from ...tiny import WORDS, tiny_vocab
from .test_grounded_corpora import persona_dialogue, write_jsonl


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    vocab = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    vocab.write_text("\n".join(tiny_vocab()) + "\n", encoding="utf-8")
    return BertTokenizer(vocab=str(vocab), do_lower_case=True)


def naive(tok, pair_format, context, lines):
    """The reference: drop the oldest dialogue turn (never the last) while the joined context, tokenised whole, is
    longer than the context budget."""
    head, turns = list(context[:lines]), list(context[lines:])
    if not lines or not turns:
        return list(context)

    def length(parts):
        text = join_context(parts, pair_format.turn_separator, tok)
        return len(tok(text, add_special_tokens=False)["input_ids"])

    while len(turns) > 1 and length(head + turns) > pair_format.context_budget(tok):
        turns = turns[1:]
    return head + turns


def random_turn(rng):
    if rng.random() < 0.1:
        return rng.choice(["", "   ", "\u200b"])  # blank turns: no tokens, no separator
    return " ".join(rng.choice(WORDS + ["?", "!", "don't"]) for _ in range(rng.randint(1, 9)))


@pytest.mark.parametrize("layout", ["paper", "shared-context"])
def test_keep_lines_agrees_with_the_naive_join_and_tokenise_reference(tok, layout):
    rng = random.Random(0)
    pair_format = PairFormat(max_length=40, max_response_length=8, layout=layout)
    contexts, lines = [], []
    for _ in range(300):
        count = rng.randint(0, 4)
        contexts.append([f"your persona: {random_turn(rng)}" for _ in range(count)])
        contexts[-1] += [random_turn(rng) for _ in range(rng.randint(0, 8))]
        lines.append(count)
    kept = pair_format.keep_lines(tok, contexts, lines)
    assert kept == [naive(tok, pair_format, c, n) for c, n in zip(contexts, lines)]
    changed = [k != c for k, c in zip(kept, contexts)]
    assert 30 < sum(changed) < 270  # the draw has both kinds
    for context, new, count in zip(contexts, kept, lines):
        assert new[:count] == context[:count] and (not context[count:] or new[-1] == context[-1])


def test_a_context_without_lines_or_that_fits_is_left_as_it_is_and_the_last_turn_always_stays(tok):
    pair_format = PairFormat(max_length=24, max_response_length=4)
    long_turns = ["hi you " * 6, "how are you " * 4, "fine"]
    lines = ["your persona: i like dogs .", "your persona: i am hiking ."]
    assert pair_format.keep_lines(tok, [long_turns], [0]) == [long_turns]
    assert pair_format.keep_lines(tok, [lines + ["fine"]], [2]) == [lines + ["fine"]]
    assert pair_format.keep_lines(tok, [lines + long_turns], [2]) == [lines + ["fine"]]
    # The lines and the last turn alone are too long: both stay, and the encoder's left cut takes the lines' head.
    assert pair_format.keep_lines(tok, [lines * 4 + long_turns], [8]) == [lines * 4 + ["fine"]]
    with pytest.raises(ValueError, match="2 contexts but 1 line counts"):
        pair_format.keep_lines(tok, [lines, lines], [1])


def test_the_encoder_then_reads_the_lines_that_plain_left_truncation_cuts(tok):
    pair_format = PairFormat(max_length=24, max_response_length=4)
    context = ["your persona: i like the weather .", "hi you " * 9, "how are you"]
    plain = pack(pair_format, tok, [context], [["fine"]]).rows[0].ids
    kept = pack(pair_format, tok, pair_format.keep_lines(tok, [context], [1]), [["fine"]]).rows[0].ids
    weather = tok.convert_tokens_to_ids("weather")
    assert weather not in plain and weather in kept


def test_a_grounding_set_knows_its_lines_and_keeps_them(tmp_path, tok):
    rows = [persona_dialogue(n) for n in range(30)]
    for row in rows:  # long turns: the persona lines no longer fit before the last turn
        for turn in row["turns"]:
            turn["text"] += " hi you" * 5
    valid = load_personachat(write_jsonl(tmp_path / "p.jsonl", rows), "validation")
    data = GroundingSet.from_dialogues(valid, n=100, distractors=1, name="grounding_personachat")
    assert data.lines == [2] * len(data)
    pair_format = PairFormat(max_length=48, max_response_length=8)
    kept = data.with_lines_kept(tok, pair_format)
    assert kept.contexts == pair_format.keep_lines(tok, data.contexts, data.lines)
    assert any(new != old for new, old in zip(kept.contexts, data.contexts))
    assert kept.golds == data.golds and kept.echoes == [context[-1] for context in kept.contexts]
    assert all(context[:2] == old[:2] for context, old in zip(kept.contexts, data.contexts))
    data.lines = None
    with pytest.raises(ValueError, match="grounding_personachat: which turns are grounding lines is not known"):
        data.with_lines_kept(tok, pair_format)


def test_a_keep_lines_run_trains_and_evaluates_on_the_cut_contexts(backbone, tmp_path):
    from density_train.loop.trainer import Trainer
    from tests.train.loop.test_training import config_for

    rows = [persona_dialogue(n) for n in range(40)]
    for row in rows:
        for turn in row["turns"]:
            turn["text"] += " hi you" * 4
    path = write_jsonl(tmp_path / "p.jsonl", rows)
    train, valid = (
        SelectionData.from_pairs(*response_pairs_with_dialogues(load_personachat(path, split)))
        for split in ("train", "validation")
    )
    grounded = [GroundingSet.from_dialogues(load_personachat(path, "validation"), 6, name="grounding_personachat")]
    config = config_for(backbone, keep_lines=True, validation_kinds="echo", valid_fit_pairs=12, epochs=1)
    trainer = Trainer(config, train, valid, tmp_path / "run", grounding_sets=grounded)
    lines = [len(c) - i for c, i in zip(train.contexts, train.turn_indices)]
    assert trainer.train_data.contexts == config.pair_format.keep_lines(trainer.tokenizer, train.contexts, lines)
    assert trainer.train_data.contexts != train.contexts and trainer.train_data.responses == train.responses
    assert trainer.valid_data.contexts != valid.contexts
    [kept] = [evaluator.data for evaluator in trainer.evaluators if isinstance(evaluator, GroundingSignals)]
    assert kept.contexts == grounded[0].with_lines_kept(trainer.tokenizer, config.pair_format).contexts
    trainer.train()
    assert (tmp_path / "run" / "best").is_dir()
