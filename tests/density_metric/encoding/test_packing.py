"""The packed host path (density_metric.encoding: text_ids, packing.pack) against the former path, kept in
benchmarks/reference_encoding.py: the same ids for text without special-token strings, and special-token text read
as text."""

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer

from benchmarks import reference_encoding as reference
from density_metric.encoding.features import rows_to_batch, segment_mask
from density_metric.encoding.packing import PackedRows, pack
from density_metric.encoding.pair_format import PairFormat
from density_metric.encoding.text_ids import TextIds, gather, reply_ids, within

from ...tiny import slow_encodes

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT.parent / "shared" / "data"
needs_data = pytest.mark.skipif(not (DATA / "dailydialog").is_dir(), reason="../shared/data is not beside the checkout")
FORMATS = [
    PairFormat(layout=layout, max_length=length, max_response_length=min(128, length // 2))
    for layout in ("paper", "shared-context")
    for length in (256, 64, 16)
]


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(ROOT / "density_metric" / "default")


@pytest.fixture(scope="module")
def dialogues():
    from density_train.data.corpora import load_dailydialog

    return list(load_dailydialog(DATA / "dailydialog", "test")["turns"])


def every_turn(dialogues):
    """Every turn of every dialogue against its prefix, as people score a dialogue."""
    pairs = [(turns[:i], turns[i]) for turns in dialogues for i in range(1, len(turns))]
    return [context for context, _ in pairs], [response for _, response in pairs]


def test_gather_and_within_match_a_loop():
    rng = np.random.default_rng(0)
    source = rng.integers(0, 100, 50)
    starts, lengths = rng.integers(0, 40, 12), rng.integers(0, 10, 12)
    assert gather(source, starts, lengths).tolist() == [v for s, n in zip(starts, lengths) for v in source[s : s + n]]
    assert within(lengths).tolist() == [i for n in lengths for i in range(n)]


@needs_data
@pytest.mark.parametrize("pair_format", FORMATS, ids=lambda f: f"{f.layout}-{f.max_length}")
def test_rows_are_those_of_the_joined_context_path_on_dailydialog_test(tokenizer, dialogues, pair_format):
    contexts, responses = every_turn(dialogues[:300])
    candidates = [[response] for response in responses]
    assert list(pack(pair_format, tokenizer, contexts, candidates).rows) == reference.encode_rows(
        pair_format, tokenizer, contexts, candidates
    )


@needs_data
@pytest.mark.parametrize("layout", ["paper", "shared-context"])
def test_rows_are_those_of_the_joined_context_path_with_groups_blank_and_long_turns(tokenizer, dialogues, layout):
    rng = np.random.default_rng(1)
    long_turn = " ".join(dialogues[0] * 20)  # far beyond any budget
    contexts, candidates = [], []
    for turns in dialogues[:80]:
        context = [turn for turn in turns[:-1]]
        context.insert(int(rng.integers(0, len(context) + 1)), [" ", "", "\u200b", long_turn][int(rng.integers(0, 4))])
        contexts.append(context)
        candidates.append(
            list(rng.choice(turns, size=int(rng.integers(0, 5)))) + ["", long_turn][: int(rng.integers(0, 3))]
        )
    for length in (256, 40):
        pair_format = PairFormat(layout=layout, max_length=length, max_response_length=length // 2)
        assert list(pack(pair_format, tokenizer, contexts, candidates).rows) == reference.encode_rows(
            pair_format, tokenizer, contexts, candidates
        )


@needs_data
def test_rows_are_those_of_the_joined_context_path_with_persona_lines(tokenizer):
    from density_train.data.grounded_corpora import load_personachat

    table = load_personachat(DATA / "personachat_train_subset", "validation")
    contexts = [turns[:i] for turns in list(table["turns"])[:60] for i in range(1, len(turns))][:400]
    responses = [[context[-1]] for context in contexts]
    for layout in ("paper", "shared-context"):
        pair_format = PairFormat(layout=layout, max_length=128, max_response_length=64)
        assert list(pack(pair_format, tokenizer, contexts, responses).rows) == reference.encode_rows(
            pair_format, tokenizer, contexts, responses
        )


@needs_data
def test_cuts_are_those_of_the_joined_context_path(tokenizer, dialogues):
    contexts, responses = every_turn(dialogues[:200])
    for pair_format in FORMATS:
        replies = reply_ids(tokenizer, responses)
        joined = tokenizer(
            [reference.join_context(turns, "[SEP]", tokenizer) for turns in contexts], add_special_tokens=False
        )["input_ids"]
        specials = pair_format.special_tokens(tokenizer)
        expected = []
        for context, reply in zip(joined, replies):
            kept = min(len(reply), pair_format.max_response_length)
            budget = pair_format.max_length - specials - (kept if pair_format.layout == "paper" else 0)
            if pair_format.layout != "paper":
                budget -= pair_format.max_response_length
            expected.append(kept < len(reply) or len(context) > budget)
        assert pack(pair_format, tokenizer, contexts, [[r] for r in responses]).cut.tolist() == expected
        assert any(expected) and not all(expected)


LOOK_ALIKES = ["[sep]", "</s>", "<s>", "[SEP][SEP]", "a[CLS]b"]


@pytest.mark.parametrize("layout", ["paper", "shared-context"])
def test_special_token_text_in_a_reply_or_a_turn_is_read_as_text(tokenizer, layout):
    pair_format = PairFormat(layout=layout)
    special_ids = set(tokenizer.all_special_ids)
    texts = [*tokenizer.all_special_tokens, *LOOK_ALIKES]
    assert {"[SEP]", "[CLS]", "[PAD]", "[UNK]", "[MASK]"} <= set(texts)
    plain = pack(pair_format, tokenizer, [["hello there"]], [["fine"]]).rows[0]
    for text in texts:
        rows = pack(pair_format, tokenizer, [["hello there", text]], [[text]]).rows
        ids = rows[0].ids
        # The template's special tokens and the one separator between the two turns, no more.
        expected = sum(token in special_ids for token in plain.ids) + 1
        assert sum(token in special_ids for token in ids) == expected, text
        assert (
            tokenizer.decode([i for i in ids if i not in special_ids])
            .replace(" ", "")
            .count(text.lower().replace(" ", ""))
            == 2
        ), text


def test_each_distinct_text_is_tokenised_once_and_turns_beyond_the_budget_never(tokenizer):
    seen = []

    class Counting:
        def __getattr__(self, name):
            return getattr(tokenizer, name)

        def __call__(self, text, *args, **kwargs):
            if isinstance(text, list) and kwargs.get("split_special_tokens"):
                seen.extend(text)
            return tokenizer(text, *args, **kwargs)

    old = "an old turn " * 100
    dialogue = [old, "how are you?", "fine, and you?", "good."]
    contexts = [dialogue[:i] for i in range(1, len(dialogue))] + [["never read", "x " * 300, "hi"]]
    pair_format = PairFormat(layout="shared-context", max_length=64, max_response_length=16)
    pack(pair_format, Counting(), contexts, [[turns[-1]] for turns in contexts])
    assert sorted(seen) == sorted(set(seen))  # once each
    assert "never read" not in seen  # the turn after it already fills the budget
    assert old.strip() in seen and ("x " * 300).strip() in seen  # read by the contexts that keep part of them


@pytest.mark.parametrize("layout", ["paper", "shared-context"])
def test_a_padded_batch_is_the_former_batch(tokenizer, layout):
    pair_format = PairFormat(layout=layout, max_length=48, max_response_length=12)
    contexts = [["hi there", "how are you?"], [], ["a " * 60], ["one", "", "two"]]
    candidates = [["fine", "good, thanks"], ["hello"], ["ok", "sure", "no"], []]
    rows = pack(pair_format, tokenizer, contexts, candidates).rows
    old = reference.rows_to_batch(reference.encode_rows(pair_format, tokenizer, contexts, candidates), 0)
    new = rows_to_batch(rows, 0)
    assert torch.equal(new["input_ids"], old["input_ids"])
    if layout == "paper":
        assert torch.equal(new["attention_mask"], old["attention_mask"])
        return
    real = new["segments"] >= 0  # padding queries attend to the context now (never read), not to themselves
    assert torch.equal(segment_mask(new["segments"])[:, 0][real], old["attention_mask"][:, 0][real])
    assert segment_mask(new["segments"])[:, 0][~real].any(-1).all()  # a finite softmax everywhere
    for name in ("position_ids", "feature_index", "feature_valid"):
        assert torch.equal(new[name], old[name]), name
    some = rows_to_batch(rows, 0, index=np.array([2, 0]))
    assert torch.equal(some["input_ids"], rows_to_batch([rows[2], rows[0]], 0)["input_ids"])


def test_packed_rows_round_trip_through_lists(tokenizer):
    rows = pack(PairFormat(layout="shared-context"), tokenizer, [["hi"], ["a", "b"]], [["x", "y"], ["z"]]).rows
    assert PackedRows.from_rows(list(rows)) == rows
    assert rows[-1] == rows[1] and rows[:1] == [rows[0]]


def test_text_ids_give_each_text_one_code_and_its_ids(tokenizer):
    text_ids = TextIds(tokenizer)
    codes = text_ids.encode(["hi there", "", "hi there", "[SEP]"])
    assert codes[0] == codes[2] and len(set(codes.tolist())) == 3
    assert text_ids.ids(codes) == [
        tokenizer("hi there", add_special_tokens=False)["input_ids"],
        [],
        tokenizer("hi there", add_special_tokens=False)["input_ids"],
        tokenizer("[ sep ]", add_special_tokens=False)["input_ids"],
    ]


@needs_data
def test_context_lengths_are_those_of_the_joined_context_capped_at_max_length(tokenizer, dialogues):
    contexts, _ = every_turn(dialogues[:200])
    contexts = [*contexts, [], ["", " "], ["word " * 400]]
    joined = tokenizer(
        [reference.join_context(turns, "[SEP]", tokenizer) for turns in contexts], add_special_tokens=False
    )["input_ids"]
    for length in (256, 32):
        pair_format = PairFormat(max_length=length, max_response_length=length // 2)
        expected = [min(len(ids), length) for ids in joined]
        assert pair_format.context_lengths(tokenizer, contexts).tolist() == expected


def test_threads_sharing_a_tokenizer_pack_what_each_packs_alone():
    """A demo served two requests with one scorer: the turn separator was read once as the text "[ sep ]" (the
    tokenizer read special-token text as text for the other thread), and a score came out -10.47 for -8.62."""
    tokenizer = AutoTokenizer.from_pretrained(ROOT / "density_metric" / "default")
    pair_format = PairFormat(max_length=64, max_response_length=24)
    jobs = [([["hi", f"{word} day"]], [f"fine [SEP] {word}"]) for word in ("good", "nice", "what", "the")]
    alone = [list(pack(pair_format, tokenizer, *job).rows) for job in jobs]
    slow_encodes(tokenizer)
    with ThreadPoolExecutor(len(jobs)) as pool:
        together = list(pool.map(lambda job: list(pack(pair_format, tokenizer, *job).rows), jobs))
    assert together == alone
    separator = tokenizer.sep_token_id
    assert all(row.ids.count(separator) == 3 for rows in together for row in rows)  # turn, pair, end
