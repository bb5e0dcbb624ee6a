"""The training's token store (train/loop/token_store.py) against the scorer's packing (density_metric.encoding.pack): the
same model inputs for the same contexts and candidates, both layouts, cut contexts and replies, blank turns and
special-token text."""

from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer

from density_metric.encoding.features import rows_to_batch
from density_metric.encoding.packing import pack
from density_metric.encoding.pair_format import PairFormat
from density_train.loop.step_batches import one_ahead
from density_train.loop.token_store import TokenStore, speaker_joins

from ...tiny import WORDS

ROOT = Path(__file__).resolve().parents[3]
FORMATS = [
    PairFormat(max_length=256, max_response_length=128),
    PairFormat(max_length=40, max_response_length=12),
    PairFormat(max_length=40, max_response_length=12, layout="shared-context"),
    PairFormat(max_length=64, max_response_length=16, layout="shared-context", pooling="mean"),
]


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(ROOT / "density_metric" / "default")


def corpus(n: int, seed: int):
    """Contexts of 1-6 turns and replies of 1-30 words, some blank, some with '[SEP]' as text, some padded
    with spaces (the same text to the tokeniser, another to the draws)."""
    rng = np.random.default_rng(seed)

    def sentence():
        words = list(rng.choice(WORDS + ["[SEP]", "naïve", "well,"], size=rng.integers(1, 30)))
        return " ".join(words) if rng.random() > 0.05 else "  "

    contexts = [[sentence() for _ in range(rng.integers(1, 7))] for _ in range(n)]
    replies = [sentence() for _ in range(n)]
    texts = sorted({*replies, *(turn for context in contexts for turn in context)})
    return contexts, texts + [f" {text} " for text in texts[:5]]


@pytest.mark.parametrize("pair_format", FORMATS, ids=lambda f: f"{f.layout}-{f.pooling}-{f.max_length}")
def test_the_stores_inputs_equal_the_scorers_packing(tokenizer, pair_format):
    contexts, texts = corpus(60, 0)
    store = TokenStore(tokenizer, pair_format, contexts, texts)
    rng = np.random.default_rng(1)
    for size in (1, 3, 16):
        rows = rng.choice(len(contexts), size=8, replace=False)
        candidates = rng.choice(len(texts), size=(8, size))
        got = store.batch(rows, candidates)
        packed = pack(pair_format, tokenizer, [contexts[i] for i in rows], [[texts[j] for j in r] for r in candidates])
        expected = rows_to_batch(packed.rows, tokenizer.pad_token_id, pair_format.pooling)
        assert sorted(got) == sorted(expected)
        for name, tensor in expected.items():
            assert got[name].dtype == tensor.dtype and torch.equal(got[name], tensor), name
    paper = pack(pair_format, tokenizer, contexts, [[text] for text in texts[: len(contexts)]], layout="paper")
    lengths = paper.rows.lengths.tolist()
    assert (max(lengths) == pair_format.max_length) == (pair_format.max_length < 256)  # the short formats cut


@pytest.mark.parametrize("pair_format", FORMATS, ids=lambda f: f"{f.layout}-{f.pooling}-{f.max_length}")
def test_a_batch_padded_to_a_multiple_is_the_batch_with_masked_columns_added(tokenizer, pair_format):
    """--pad-multiple: the token inputs are as long as the longest row rounded up to the multiple, their first
    columns the unpadded batch's, the added ones padding (the pad id, a 0 mask and position, segment -1: masked)."""
    contexts, texts = corpus(40, 3)
    store = TokenStore(tokenizer, pair_format, contexts, texts)
    rng = np.random.default_rng(4)
    rows, candidates = rng.choice(len(contexts), size=6, replace=False), rng.choice(len(texts), size=(6, 4))
    plain, padded = store.batch(rows, candidates), store.batch(rows, candidates, 48)
    height, width = plain["input_ids"].shape  # rows: a pair's each, or a context's each (shared-context)
    assert padded["input_ids"].shape == (height, -(-width // 48) * 48) and width % 48  # columns are added
    fills = {"input_ids": tokenizer.pad_token_id, "attention_mask": 0, "position_ids": 0, "segments": -1}
    assert sorted(padded) == sorted(plain)
    for name, tensor in plain.items():
        if name in fills:
            assert torch.equal(padded[name][:, :width], tensor), name
            assert (padded[name][:, width:] == fills[name]).all(), name
        else:  # the features' index and validity, the pooling flag: per candidate, not per token
            assert torch.equal(padded[name], tensor), name


def test_positions_find_raw_texts_and_none_for_a_text_it_lacks(tokenizer):
    contexts, texts = corpus(10, 2)
    store = TokenStore(tokenizer, PairFormat(), contexts, texts)
    assert store.positions(texts[:3]).tolist() == [store.index[text] for text in texts[:3]]
    assert store.positions([texts[0], "not a text of the store"]) is None


def test_speaker_joins_are_the_two_texts_the_speaker_kind_makes():
    from density_train.negatives.kinds import speaker_negative

    made = {
        speaker_negative(["hello there ", " how are you"], " fine thanks", np.random.default_rng(s)) for s in range(20)
    }
    assert made == set(speaker_joins(["hello there ", " how are you"], " fine thanks"))
    assert speaker_joins([], "x") == []


def test_one_ahead_makes_the_next_item_while_the_current_one_is_used():
    import threading
    import time

    made, used, started = [], [], {i: threading.Event() for i in range(4)}

    def make(item):
        started[item].set()
        made.append(item)
        return item * 10

    for item, result in one_ahead(make, range(4)):
        assert result == item * 10
        if item < 3:  # the next one is made before the caller asks for it
            assert started[item + 1].wait(5), f"item {item + 1} was not made ahead"
        time.sleep(0.01)
        used.append(item)
    assert used == made == [0, 1, 2, 3]
    assert list(one_ahead(make, [])) == []


def test_one_ahead_with_a_gate_makes_the_next_item_only_once_the_gate_opens_and_never_waits_on_a_closed_one():
    """The loop opens the gate just before its backward pass; a caller that never opens it still gets every item
    (the gate is opened when the next item is asked for)."""
    import threading

    gate, started = threading.Event(), {i: threading.Event() for i in range(3)}

    def make(item):
        started[item].set()
        return item * 10

    steps = one_ahead(make, range(3), gate=gate)
    item, result = next(steps)
    assert (item, result) == (0, 0)
    assert not started[1].wait(0.2), "item 1 was made before the gate opened"
    gate.set()
    assert started[1].wait(5), "item 1 was not made once the gate opened"
    assert list(steps) == [(1, 10), (2, 20)]  # the gate is never opened again here: nothing waits on it

    closed = threading.Event()
    early = one_ahead(make, range(3), gate=closed)
    next(early)
    finished = threading.Thread(target=early.close)  # a step that fails before the gate opens closes the batches
    finished.start()
    finished.join(5)
    assert not finished.is_alive(), "closing the batches early waited on the closed gate"
