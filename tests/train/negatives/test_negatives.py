"""Hard negatives: each generator's rules, the mix, batch-independent seeding, a corpus mix's own-corpus draws."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from density_train.data.corpora import response_pairs_with_dialogues
from density_train.data.examples import SelectionData, epoch_negatives
from density_train.data.text import normalise
from density_train.negatives.kinds import (
    CONTEXT_KINDS,
    KINDS,
    bland_negative,
    drop_negative,
    earlier_negative,
    echo_negative,
    grounding_negative,
    random_negative,
    repeat_negative,
    same_dialogue_negative,
    shuffle_negative,
    span_negative,
    speaker_negative,
)
from density_train.negatives.mix import (
    NegativeMix,
    acceptable,
    draw_labelled_negatives,
    draw_negatives,
    validation_candidates,
)
from density_train.negatives.retrieval import PoolMismatchError, RetrievalIndex, retrieved_negative

from ...dialogues import DIALOGUES, hand_index

MIX = NegativeMix.parse(
    "random:8,same-dialogue:2,echo:1,speaker:1,repeat:1,drop:1,shuffle:1,retrieved:1,earlier:1,span:1"
)


@pytest.fixture(scope="module")
def data():
    return SelectionData.from_pairs(*response_pairs_with_dialogues(DIALOGUES))


@pytest.fixture(scope="module")
def retrieval(data):
    return hand_index(data.pool)


def rng(seed=0):
    return np.random.default_rng(seed)


# --- the generators -------------------------------------------------------------------------


def test_normalise_ignores_case_punctuation_and_spaces():
    assert normalise("Thank you !") == normalise("thank you.") == normalise(" THANK  you ") == "thankyou"
    assert normalise("I ’ m fine") == normalise("I'm fine")


def test_random_negative_is_never_the_gold_a_copy_or_a_context_turn():
    pool = ["Thank you !", "thank you .", "Hello .", "Bye .", "What ?"]
    for seed in range(50):
        chosen = random_negative(pool, "Thank you !", ["Hello ."], rng(seed))
        assert chosen in {"Bye .", "What ?"}
    assert random_negative(["a", "b"], "a", ["b"], rng()) is None  # nothing left in the pool


def test_same_dialogue_skips_the_gold_its_neighbours_and_their_copies():
    turns = ["t0", "t1", "t2", "gold", "t4", "t5", "Gold !"]
    seen = {same_dialogue_negative(turns, 3, rng(seed)) for seed in range(100)}
    assert seen == {"t0", "t1", "t5"}  # never t2 (last context turn), t4 (next), "Gold !" (a copy)
    assert same_dialogue_negative(["hi", "hello", "how are you"], 1, rng()) is None  # nothing non-adjacent
    # a one-turn context still has later, non-adjacent turns
    assert same_dialogue_negative(["hi", "hello", "how are you", "fine"], 1, rng()) == "fine"


def test_echo_is_mostly_the_last_turn_and_never_a_copy_of_the_gold():
    context = ["first turn", "second turn", "last turn"]
    picks = [echo_negative(context, "my reply", rng(seed)) for seed in range(2000)]
    assert set(picks) == set(context)
    assert 0.66 < picks.count("last turn") / len(picks) < 0.74
    assert echo_negative(["only turn"], "reply", rng()) == "only turn"  # one-turn context
    assert echo_negative(["Reply ."], "reply", rng()) is None  # the only turn is a copy of the gold
    assert {echo_negative(["other", "Reply"], "reply", rng(s)) for s in range(20)} == {"other"}


def test_speaker_joins_the_previous_turn_before_or_after_the_gold():
    outputs = {speaker_negative(["a b", "how are you ?"], "fine .", rng(seed)) for seed in range(40)}
    assert outputs == {"how are you ? fine .", "fine . how are you ?"}
    assert speaker_negative(["?"], "fine .", rng()) is None  # the previous turn has no word


def test_earlier_is_a_context_turn_before_the_last_and_never_the_gold():
    context = ["first turn", "Reply .", "second turn", "last turn"]
    picks = {earlier_negative(context, "reply", rng(seed)) for seed in range(200)}
    assert picks == {"first turn", "second turn"}  # never the last turn, never a copy of the gold
    assert earlier_negative(["only turn"], "reply", rng()) is None
    assert earlier_negative(["last turn", "last turn ."], "reply", rng()) is None  # the last turn's text


def test_span_is_3_to_12_consecutive_words_of_a_context_turn_mostly_the_last():
    last = " ".join(f"w{i}" for i in range(20))
    context = ["a b c d e", last]
    picks = [span_negative(context, rng(seed)) for seed in range(2000)]
    from_last = [p for p in picks if p.startswith("w")]
    assert 0.65 < len(from_last) / len(picks) < 0.75  # SPAN_LAST = 0.7 (+ never from a one-turn context)
    for pick in from_last:
        tokens = pick.split()
        assert 3 <= len(tokens) <= 12 and f" {pick} " in f" {last} "
    assert {len(p.split()) for p in from_last} == set(range(3, 13))
    assert {p for p in picks if not p.startswith("w")} <= {"a b c", "b c d", "c d e", "a b c d", "b c d e", "a b c d e"}
    assert span_negative(["ok ?"], rng()) == "ok ?"  # shorter than the span: the whole turn
    assert span_negative(["? !"], rng()) is None


GOLD = "well , i think we should leave before the rain starts ."
CONTEXT = ["shall we go out ?", "it looks like rain .", "maybe , what do you think ?"]
GENERATORS = {
    "random": lambda r: random_negative(sorted({*DIALOGUES[0], *DIALOGUES[2]}), GOLD, CONTEXT, r),
    "same-dialogue": lambda r: same_dialogue_negative([*CONTEXT, GOLD, "ok", "fine", "bye", "see you"], 3, r),
    "echo": lambda r: echo_negative(CONTEXT, GOLD, r),
    "speaker": lambda r: speaker_negative(CONTEXT, GOLD, r),
    "repeat": lambda r: repeat_negative(GOLD, r),
    "drop": lambda r: drop_negative(GOLD, r),
    "shuffle": lambda r: shuffle_negative(GOLD, r),
    "earlier": lambda r: earlier_negative(CONTEXT, GOLD, r),
    "span": lambda r: span_negative(CONTEXT, r),
}


@pytest.mark.parametrize("kind", sorted(GENERATORS))
def test_generators_are_deterministic_under_their_seed(kind):
    generator = GENERATORS[kind]
    assert [generator(rng(s)) for s in range(20)] == [generator(rng(s)) for s in range(20)]
    assert len({generator(rng(s)) for s in range(20)}) > 1


def test_retrieved_is_deterministic_under_its_seed(retrieval):
    gold = "Fine , thanks . And you ?"
    picks = [retrieved_negative(gold, [], retrieval, rng(s)) for s in range(20)]
    assert picks == [retrieved_negative(gold, [], retrieval, rng(s)) for s in range(20)] and len(set(picks)) > 1


def test_repeat_says_one_word_three_or_four_times_or_a_span_two_or_three_times():
    gold = "i like green tea ."
    words = gold.split()
    allowed = {
        " ".join(words[:start] + words[start : start + length] * times + words[start + length :])
        for length, counts in ((1, (3, 4)), (2, (2, 3)), (3, (2, 3)), (4, (2, 3)))
        for times in counts
        for start in range(len(words) - length + 1)
        if any(w != "." for w in words[start : start + length])
    }
    outputs = {repeat_negative(gold, rng(seed)) for seed in range(300)}
    assert outputs <= allowed and len(outputs) > 10
    assert repeat_negative("yes", rng()) in {"yes yes yes", "yes yes yes yes"}  # one-word reply
    assert repeat_negative("? !", rng()) is None


def test_drop_removes_20_to_50_percent_of_the_words_keeping_punctuation():
    gold = "one two three four five six seven eight nine ten ."
    for seed in range(200):
        tokens = drop_negative(gold, rng(seed)).split()
        assert 2 <= 10 - (len(tokens) - 1) <= 5 and tokens[-1] == "."
        assert tokens == [t for t in gold.split() if t in tokens]  # order kept
    for seed in range(20):
        assert drop_negative("hello there .", rng(seed)) in {"hello .", "there ."}
    assert drop_negative("yes .", rng()) is None  # one word: nothing to drop and keep


def test_shuffle_moves_tokens_only_within_windows_of_three_or_four():
    gold = " ".join(f"w{i}" for i in range(12))
    for seed in range(100):
        tokens = shuffle_negative(gold, rng(seed)).split()
        assert sorted(tokens) == sorted(gold.split()) and tokens != gold.split()
        assert all(abs(int(token[1:]) - i) <= 3 for i, token in enumerate(tokens))
    assert shuffle_negative("yes", rng()) is None and shuffle_negative("yes .", rng()) is None
    assert shuffle_negative("ha ha ha", rng()) is None  # no order differs
    assert shuffle_negative("thank you", rng()) == "you thank"


WORDS = st.sampled_from(["i", "you", "fine", "Yes", "no", "the", "cat", ",", ".", "?", "!", "ok", "OK"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(WORDS, min_size=1, max_size=12),
    st.lists(st.lists(WORDS, min_size=1, max_size=6), min_size=1, max_size=4),
    st.integers(0, 2**32 - 1),
)
def test_no_generator_returns_a_copy_of_the_gold(gold_words, context_words, seed):
    gold, context = " ".join(gold_words), [" ".join(words) for words in context_words]
    turns = [*context, gold, "later turn", "much later turn"]
    outputs = {
        "echo": echo_negative(context, gold, rng(seed)),
        "speaker": speaker_negative(context, gold, rng(seed)),
        "repeat": repeat_negative(gold, rng(seed)),
        "drop": drop_negative(gold, rng(seed)),
        "shuffle": shuffle_negative(gold, rng(seed)),
        "same-dialogue": same_dialogue_negative(turns, len(context), rng(seed)),
        "grounding": grounding_negative(["your persona: " + turn for turn in context], gold, rng(seed)),
        "bland": bland_negative([gold.upper() + " !", *context, "ok ."], context, gold, rng(seed)),
    }
    for kind, output in outputs.items():
        if output is not None:
            assert normalise(output) != normalise(gold), (kind, output)
            if kind in {"repeat", "drop", "shuffle"}:
                assert output.split() != gold.split()
            if kind == "bland":
                assert output not in context and normalise(output) not in map(normalise, context)


def test_retrieved_picks_a_neighbour_but_never_a_context_turn_or_the_gold(data, retrieval):
    gold = "Fine , thanks . And you ?"
    neighbours = retrieval.neighbours_of(gold)
    assert neighbours and gold not in neighbours
    picks = {retrieved_negative(gold, [neighbours[0]], retrieval, rng(s)) for s in range(50)}
    assert picks <= set(neighbours[1:]) and picks
    assert retrieved_negative(gold, neighbours, retrieval, rng()) is None  # every neighbour is in the context
    assert retrieved_negative("not in the pool", [], retrieval, rng()) is None


def test_acceptable_applies_the_copy_and_context_rules():
    context = ["hello there", "how are you ?"]
    assert not acceptable("drop", "Fine !", "fine .", context)  # a normalised copy
    assert not acceptable("shuffle", "fine .", "fine .", context)
    assert not acceptable("speaker", "how are you ?", "fine .", context)  # a context turn
    assert acceptable("echo", "how are you ?", "fine .", context)  # echoes are context turns
    assert not acceptable("repeat", "fine fine .", "fine .", context, taken=["fine fine ."])
    assert acceptable("repeat", "fine fine fine .", "fine .", context)


# --- the mix ----------------------------------------------------------------------------------


def test_mix_parses_formats_and_names_bad_input():
    text = "random:8,same-dialogue:2,echo:1,speaker:1,repeat:1,drop:1,retrieved:1"
    assert str(NegativeMix.parse(text)) == text
    assert str(NegativeMix.parse(" random : 2.5 , echo ")) == "random:2.5,echo:1"
    assert NegativeMix.parse("random:1").random_only and not NegativeMix.parse("random:1,echo:1").random_only
    with pytest.raises(ValueError, match="unknown negative kind 'paraphrase'"):
        NegativeMix.parse("random:1,paraphrase:2")
    for bad in ("echo:x", "echo:-1", "echo:0", "echo:nan", "echo:inf"):
        with pytest.raises(ValueError, match="bad weight .* 'echo'"):
            NegativeMix.parse(f"random:1,{bad}")
    with pytest.raises(ValueError, match="'echo' is given twice"):
        NegativeMix.parse("echo:1,echo:2")
    with pytest.raises(ValueError, match="empty negative kind"):
        NegativeMix.parse("random:1,")


def test_allocation_gives_every_kind_its_share_in_expectation():
    mix = NegativeMix.parse("random:8,same-dialogue:2,echo:1,speaker:1,repeat:1,drop:1,retrieved:1")
    n, contexts = 7, 20_000
    totals = dict.fromkeys(mix.kinds, 0)
    for row in range(contexts):
        counts = mix.allocate(n, np.random.default_rng([0, row]))
        assert sum(counts.values()) == n
        for kind, count in counts.items():
            quota = n * dict(mix.weights)[kind] / 15
            assert int(quota) <= count <= int(quota) + 1  # largest-remainder bounds
            totals[kind] += count
    for kind, weight in mix.weights:
        assert totals[kind] / contexts == pytest.approx(n * weight / 15, abs=0.02)
    assert NegativeMix.parse("random:1,echo:1").allocate(4, rng()) == {"random": 2, "echo": 2}


def test_default_mix_reproduces_todays_negatives_exactly(data):
    rows = list(range(len(data)))
    mix = NegativeMix.parse("random:1")
    assert draw_negatives(data, rows, 5, mix, seed=42, epoch=3) == data.negatives(5, 42)
    assert draw_negatives(data, rows, 5, mix, seed=42, epoch=3) == epoch_negatives(data, 5, 42, 3, resample=False)
    resampled = draw_negatives(data, rows, 5, mix, seed=42, epoch=3, resample=True)
    assert resampled == epoch_negatives(data, 5, 42, 3, resample=True)


def test_draw_does_not_depend_on_the_batch_or_the_call(data, retrieval):
    def draw(rows, epoch=1):
        return draw_negatives(data, rows, 6, MIX, seed=7, epoch=epoch, retrieval=retrieval, resample=True)

    both = draw([3, 7])
    assert draw([7, 3]) == both[::-1]
    assert draw([3]) + draw([7]) == both
    assert draw([3, 7]) == both  # a resumed run draws the same
    fresh = SelectionData.from_pairs(*response_pairs_with_dialogues(DIALOGUES))  # a new process
    assert draw_negatives(fresh, [3, 7], 6, MIX, seed=7, epoch=1, retrieval=retrieval, resample=True) == both
    assert draw([3, 7], epoch=2) != both  # random ones are drawn afresh


def test_hard_negatives_stay_and_random_ones_move_across_epochs(data, retrieval):
    def labelled(epoch):
        return draw_labelled_negatives(
            data, range(len(data)), 6, MIX, seed=1, epoch=epoch, retrieval=retrieval, resample=True
        )

    first, second = labelled(0), labelled(1)
    hard = [[item for item in row if item[0] != "random"] for row in first]
    assert hard == [[item for item in row if item[0] != "random"] for row in second]
    assert [[t for k, t in row if k == "random"] for row in first] != [
        [t for k, t in row if k == "random"] for row in second
    ]


def test_every_context_gets_n_distinct_valid_negatives(data, retrieval):
    rows = list(range(len(data)))
    labelled = draw_labelled_negatives(data, rows, 6, MIX, seed=3, epoch=0, retrieval=retrieval)
    kinds_seen = set()
    for row, negatives in zip(rows, labelled):
        context, gold = data.contexts[row], data.responses[row]
        texts = [text for _, text in negatives]
        assert len(texts) == len(set(texts)) == 6
        for kind, text in negatives:
            kinds_seen.add(kind)
            assert normalise(text) != normalise(gold)
            if kind not in CONTEXT_KINDS:
                assert text not in context, (kind, text)
    assert kinds_seen == set(KINDS) - {
        "grounding",
        "bland",
    }  # MIX: every kind but those (tests/train/negatives/test_bland.py)


def test_grounding_is_a_persona_line_without_its_prefix_never_a_turn_nor_the_gold():
    context = ["your persona: i love cats .", "your persona: I work at a bank.", "Hi , do you have pets ?"]
    picks = {grounding_negative(context, "I have two cats .", rng(s)) for s in range(40)}
    assert picks == {"i love cats .", "I work at a bank."}
    assert {grounding_negative(context, "I work at a bank !", rng(s)) for s in range(20)} == {"i love cats ."}
    assert grounding_negative(["Hi , do you have pets ?", "Yes ."], "I do .", rng(0)) is None
    data = SelectionData.from_pairs([context[:2] + ["Hello ."], ["Hello ."]], ["Hi .", "Fine ."])
    [[(label, negative)], [(fallback, _)]] = draw_labelled_negatives(
        data, [0, 1], 1, NegativeMix.parse("grounding:1"), seed=0, epoch=0
    )
    assert label == "grounding" and negative in {"i love cats .", "I work at a bank."}
    assert fallback == "random"  # no grounding line in that context


def test_one_turn_contexts_and_one_word_replies_fall_back_to_random():
    data = SelectionData.from_pairs(*response_pairs_with_dialogues([["Hi .", "Yes ."], *DIALOGUES]))
    only = {"same-dialogue": "same-dialogue:1", "drop": "drop:1", "shuffle": "shuffle:1"}
    for kind, text in only.items():
        [[(label, negative)]] = draw_labelled_negatives(data, [0], 1, NegativeMix.parse(text), seed=0, epoch=0)
        assert label == "random" and negative not in {"Hi .", "Yes ."}, kind
    [[(label, negative)]] = draw_labelled_negatives(data, [0], 1, NegativeMix.parse("echo:1"), seed=0, epoch=0)
    assert (label, negative) == ("echo", "Hi .")
    [[(label, negative)]] = draw_labelled_negatives(data, [0], 1, NegativeMix.parse("repeat:1"), seed=0, epoch=0)
    assert label == "repeat" and set(negative.split()) == {"Yes", "."}


def test_kinds_that_need_more_say_so(data):
    with pytest.raises(ValueError, match="'retrieved' needs a retrieval index"):
        draw_negatives(data, [0], 3, NegativeMix.parse("retrieved:1"), seed=0, epoch=0)
    plain = SelectionData.from_pairs(data.contexts, data.responses)
    with pytest.raises(ValueError, match="'same-dialogue' needs the pairs' dialogues"):
        draw_negatives(plain, [0], 3, NegativeMix.parse("same-dialogue:1"), seed=0, epoch=0)
    other = hand_index(["some", "other", "pool"])
    with pytest.raises(PoolMismatchError):
        draw_negatives(data, [0], 3, NegativeMix.parse("retrieved:1"), seed=0, epoch=0, retrieval=other)


def test_validation_candidates_are_fixed_and_one_per_pair(data, retrieval):
    kinds = ["random", "echo", "drop", "retrieved"]
    first = validation_candidates(data, kinds, seed=5, retrieval=retrieval)
    assert first == validation_candidates(data, kinds, seed=5, retrieval=retrieval)
    assert set(first) == set(kinds) and all(len(values) == len(data) for values in first.values())
    for row, gold in enumerate(data.responses):
        assert all(normalise(first[kind][row]) != normalise(gold) for kind in kinds)
    strict = validation_candidates(data, ["drop"], seed=5, fallback=False)["drop"]
    one_word = [
        row for row, gold in enumerate(data.responses) if sum(any(c.isalnum() for c in t) for t in gold.split()) < 2
    ]
    assert one_word and all(strict[row] is None for row in one_word)


# --- SelectionData with dialogues -------------------------------------------------------------


def test_selection_data_keeps_dialogues_checks_them_and_selects_rows(data):
    assert data.pool == SelectionData.from_pairs(data.contexts, data.responses).pool
    assert all(turns[i] == gold for turns, i, gold in zip(data.dialogues, data.turn_indices, data.responses))
    subset = data.select([4, 1])
    assert subset.responses == [data.responses[4], data.responses[1]] and subset.pool is data.pool
    assert subset.turn_indices == [data.turn_indices[4], data.turn_indices[1]]
    with pytest.raises(ValueError, match="pair 0: turn 0 of its dialogue is not its gold"):
        SelectionData.from_pairs([["a"]], ["b"], [["a", "b"]], [0])
    with pytest.raises(ValueError, match="give both or neither"):
        SelectionData.from_pairs([["a"]], ["b"], [["a", "b"]])


# --- the retrieval index ----------------------------------------------------------------------


# --- a corpus mix: negatives from the context's own corpus -------------------------------------------------


def two_corpus_data():
    """Pairs of two corpora whose utterances never coincide: upper case (corpus A) and lower case (corpus b)."""
    upper = [[f"A{d} TURN {t} ." for t in range(4)] for d in range(12)]
    lower = [[f"b{d} turn {t} ." for t in range(4)] for d in range(12)]
    contexts, responses, turns, indices, sources = [], [], [], [], []
    for name, dialogues in (("A", upper), ("b", lower)):
        found = response_pairs_with_dialogues(dialogues)
        for side, values in zip((contexts, responses, turns, indices), found):
            side += values
        sources += [name] * len(found[1])
    return SelectionData.from_pairs(contexts, responses, turns, indices, sources)


def own_corpus(text: str, source: str) -> bool:
    letters = [char for char in text if char.isalpha()]
    return all(char.isupper() for char in letters) if source == "A" else all(char.islower() for char in letters)


def test_random_negatives_of_a_mix_come_from_the_pairs_own_corpus():
    data = two_corpus_data()
    for row, negatives in enumerate(data.negatives(6, seed=3)):
        assert all(own_corpus(text, data.sources[row]) for text in negatives)
    for resample in (False, True):
        mix = NegativeMix.parse("random:8,same-dialogue:2,echo:1,speaker:1,repeat:1,drop:1,shuffle:1,earlier:1,span:1")
        drawn = draw_negatives(data, range(len(data)), 6, mix, seed=3, epoch=1, resample=resample)
        for row, negatives in enumerate(drawn):
            assert all(own_corpus(text, data.sources[row]) for text in negatives)


def test_validation_candidates_of_a_mix_come_from_the_pairs_own_corpus():
    data = two_corpus_data()
    candidates = validation_candidates(data, ["random", "same-dialogue", "echo"], seed=0)
    for values in candidates.values():
        assert all(own_corpus(text, source) for text, source in zip(values, data.sources))


def test_retrieved_neighbours_from_another_corpus_are_skipped():
    data = two_corpus_data()
    # An index whose every neighbour is an utterance of the other corpus.
    texts = sorted(set(data.pool))
    others = {t: [u for u in texts if u[0].isupper() != t[0].isupper()][:3] for t in texts}
    index = RetrievalIndex(
        texts,
        np.asarray([[texts.index(u) for u in others[t]] for t in texts], dtype=np.int32),
        np.ones((len(texts), 3), dtype=np.float32),
        None,
    )
    drawn = draw_labelled_negatives(
        data, range(len(data)), 2, NegativeMix.parse("retrieved:1"), seed=0, epoch=0, retrieval=index
    )
    for row, negatives in enumerate(drawn):
        assert all(kind == "random" and own_corpus(text, data.sources[row]) for kind, text in negatives)


def test_one_source_draws_the_same_negatives_as_no_source():
    plain = SelectionData.from_pairs(*response_pairs_with_dialogues(DIALOGUES))
    named = SelectionData.from_pairs(*response_pairs_with_dialogues(DIALOGUES), sources=["dd"] * len(plain))
    assert not named.mixed and named.negatives(4, seed=42) == plain.negatives(4, seed=42)
    rows = range(len(plain))
    assert draw_negatives(named, rows, 4, MIX.parse("random:2,echo:1"), seed=1, epoch=0) == draw_negatives(
        plain, rows, 4, MIX.parse("random:2,echo:1"), seed=1, epoch=0
    )


def test_a_selection_of_a_mix_keeps_each_pairs_corpus_and_pool():
    data = two_corpus_data()
    rows = [0, len(data) - 1]
    part = data.select(rows)
    assert part.sources == [data.sources[0], data.sources[-1]] and part.mixed
    assert part.pool_of(1) == data.pool_of(len(data) - 1)
    with pytest.raises(ValueError, match="2 pairs but 1 sources"):
        SelectionData(part.contexts, part.responses, part.pool, sources=["A"])
