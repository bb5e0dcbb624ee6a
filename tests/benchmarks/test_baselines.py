"""BERT-RUBER and MaUde re-implementations: their definitions, training on a tiny corpus, their weights."""

from __future__ import annotations

import json
import logging
import sys

import numpy as np
import pytest
import torch

from benchmarks.baselines import available_columns, bert_ruber, load_columns, maude
from benchmarks.baselines.common import WEIGHTS_FILE

from ..tiny import WORDS, build_tiny_encoder, one_thread

TOPICS = ["weather", "day", "good", "nice", "fine", "thanks", "hello", "what"]
FILLER = ["the", "a", "is", "it", "to", "and", "i", "do", "you", "are", "how"]


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tiny_encoder")
    model, tokenizer = build_tiny_encoder(directory, initializer_range=0.5)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return str(directory)


def topical_dialogues(n: int, seed: int) -> list[str]:
    """DailyDialog-format lines: every turn of a dialogue says its topic word, so a reply fits its context."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(n):
        topic = rng.choice(TOPICS)
        turns = []
        for _ in range(rng.integers(3, 6)):
            words = [rng.choice(FILLER)] + [topic] * int(rng.integers(2, 4))
            turns.append(" ".join(words[i] for i in rng.permutation(len(words))))
        lines.append(" __eou__ ".join(turns) + " __eou__")
    return lines


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dailydialog")
    for split, n, seed in (("train", 400, 0), ("validation", 80, 1), ("test", 80, 2)):
        (folder / f"dialogues_{split}.txt").write_text("\n".join(topical_dialogues(n, seed)) + "\n")
    return folder


# About 230 held-out pairs: a scorer at chance (0.5, standard deviation 0.033) stays below this.
BEATS_CHANCE = 0.65


def held_out_accuracy(columns, corpus, column: str) -> float:
    """Share of test pairs where the gold reply outscores a reply of another dialogue."""
    from density_train.data.corpora import load_dailydialog, response_pairs

    contexts, replies = response_pairs(load_dailydialog(corpus, "test"))
    shuffled = [replies[i] for i in np.random.default_rng(5).permutation(len(replies))]
    gold = columns(contexts, replies)[column]
    other = columns(contexts, shuffled)[column]
    differs = np.array([a != b for a, b in zip(replies, shuffled)])
    return float(np.mean(gold[differs] > other[differs]))


# ------------------------------------------------------------------------------- BERT-RUBER


@pytest.fixture(scope="module")
def ruber(tiny_encoder, corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("bert_ruber")
    with one_thread():
        report = bert_ruber.train(
            out, data_dir=corpus, encoder=tiny_encoder, epochs=30, patience=10, batch_size=64, lr=3e-3
        )
    return out, report


def test_bert_ruber_learns_which_reply_fits(ruber, corpus):
    out, report = ruber
    assert report["best_epoch"] >= 1
    assert held_out_accuracy(load_columns("bert-ruber", out), corpus, bert_ruber.UNREFERENCED) > BEATS_CHANCE


def test_bert_ruber_max_pooling_is_a_max_over_real_tokens(tiny_encoder):
    from transformers import AutoModel, AutoTokenizer

    from benchmarks.baselines.common import embed_texts

    texts = ["hi", "how are you doing today", "fine thanks"]
    pooled = embed_texts(texts, tiny_encoder, "max", normalize=False)
    tokenizer, model = AutoTokenizer.from_pretrained(tiny_encoder), AutoModel.from_pretrained(tiny_encoder).eval()
    for text in texts:  # one text at a time: no padding at all
        with torch.no_grad():
            states = model(**tokenizer(text, return_tensors="pt")).last_hidden_state[0].double().numpy()
        np.testing.assert_allclose(pooled[text], states.max(0), rtol=1e-5, atol=1e-6)


def test_bert_ruber_referenced_score_is_the_cosine():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 8)).astype(np.float32), rng.normal(size=(5, 8)).astype(np.float32)
    expected = [float(x @ y / np.sqrt((x @ x) * (y @ y))) for x, y in zip(a.astype(np.float64), b.astype(np.float64))]
    np.testing.assert_allclose(bert_ruber.cosine(a, b), expected, rtol=1e-12)


def test_bert_ruber_blend_is_the_mean_of_min_max_normalised_scores():
    rng = np.random.default_rng(1)
    unreferenced, referenced = rng.uniform(size=20), rng.normal(size=20)
    expected = [
        ((u - unreferenced.min()) / np.ptp(unreferenced) + (r - referenced.min()) / np.ptp(referenced)) / 2
        for u, r in zip(unreferenced, referenced)
    ]
    np.testing.assert_allclose(bert_ruber.blend(unreferenced, referenced), expected, rtol=1e-12)
    # min-max: [0, 0.5, 1] and [0, 1, 0.5]
    np.testing.assert_allclose(bert_ruber.blend(np.array([0.2, 0.6, 1.0]), np.array([1.0, 3.0, 2.0])), [0, 0.75, 0.75])
    np.testing.assert_allclose(bert_ruber.min_max(np.array([2.0, 2.0])), [0.5, 0.5])  # no spread: the middle


def test_bert_ruber_query_is_the_last_turns_that_fit(tiny_encoder):
    from transformers import AutoTokenizer

    def words(text: str) -> int:
        return len(text.split())

    assert bert_ruber.query_of(["a b", "c d e", "f"], words, max_tokens=2 + 4) == "c d e f"
    assert bert_ruber.query_of(["a b", "c d e", "f"], words, max_tokens=2 + 6) == "a b c d e f"
    assert bert_ruber.query_of(["a b", "c d e f g"], words, max_tokens=2 + 3) == "c d e f g"  # the last turn, always
    assert bert_ruber.query_of([], words) == "" and bert_ruber.query_of("hi there", words) == "hi there"

    tokenizer = AutoTokenizer.from_pretrained(tiny_encoder)
    rng = np.random.default_rng(0)
    contexts = [[" ".join(rng.choice(WORDS, size=rng.integers(1, 9))) + " ?" for _ in range(12)] for _ in range(5)]
    for max_tokens in (8, 20, 40, 256):
        got = bert_ruber.queries(contexts, tiny_encoder, max_tokens)
        for context, query in zip(contexts, got):
            # reference: the most last turns whose joined text, tokenised as a whole, fits
            fitting = [
                k
                for k in range(1, len(context) + 1)
                if len(tokenizer(" ".join(context[-k:]))["input_ids"]) <= max_tokens
            ]
            assert query == " ".join(context[-max(fitting or [1]) :])


def test_bert_ruber_loss_leaves_out_a_random_reply_equal_to_the_gold():
    torch.manual_seed(0)
    model, table = bert_ruber.UnreferencedScorer(6, (5, 4, 3)), torch.randn(10, 6)
    queries, golds, randoms = torch.tensor([1, 2, 3]), torch.tensor([4, 5, 6]), torch.tensor([7, 5, 8])
    with torch.no_grad():
        log_p = torch.log_softmax(
            model(table[torch.cat([queries, queries[[0, 2]]])], table[torch.tensor([4, 5, 6, 7, 8])]), -1
        )
        expected = -(log_p[:3, 1].sum() + log_p[3:, 0].sum()) / 5
        np.testing.assert_allclose(bert_ruber.batch_loss(model, table, queries, golds, randoms), expected, rtol=1e-6)


def test_bert_ruber_blends_only_with_references(ruber):
    columns = load_columns("bert-ruber", ruber[0])
    contexts, replies = [["hi", "how are you"], ["nice day"]], ["fine thanks", "good day"]
    assert set(columns(contexts, replies)) == {bert_ruber.UNREFERENCED}
    assert set(columns(contexts, replies, ["i am fine", ""])) == {bert_ruber.UNREFERENCED}
    with_refs = columns(contexts, replies, ["i am fine", "what a day"])
    assert set(with_refs) == {bert_ruber.UNREFERENCED, bert_ruber.BLENDED}


# ------------------------------------------------------------------------------------ MaUde


def test_maude_word_order_is_a_permutation():
    rng = np.random.default_rng(0)
    reply = "i would like a cup of tea please"
    for _ in range(20):
        assert sorted(maude.word_order(reply, rng).split()) == sorted(reply.split())


def test_maude_word_drop_keeps_a_subsequence_at_the_papers_rate():
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(50)]
    kept = 0
    for _ in range(200):
        out = maude.word_drop(" ".join(words), rng).split()
        it = iter(words)
        assert all(word in it for word in out)  # in order, each once
        kept += len(out)
    assert kept / (200 * 50) == pytest.approx(1 - maude.DROP_RATE, abs=0.01)


def test_maude_word_repeat_repeats_one_of_the_first_two_words():
    rng = np.random.default_rng(0)
    reply = "i have a red car"
    seen = set()
    for _ in range(50):
        out = maude.word_repeat(reply, rng).split()
        assert len(out) == 5
        start = 1 if out[1] == "have" else 0  # "i have have ..." or "i i i ..."
        assert out[:start] == reply.split()[:start]
        assert out[start:] == [reply.split()[start]] * (5 - start)
        seen.add(start)
    assert seen == {0, 1}


def test_maude_corruptions_of_one_word_and_empty_replies():
    rng = np.random.default_rng(0)
    assert maude.word_repeat("hello", rng) == "hello" and maude.word_order("hello", rng) == "hello"
    assert {maude.word_drop("hello", rng) for _ in range(100)} == {"hello", ""}
    assert maude.word_repeat("", rng) == maude.word_order("", rng) == maude.word_drop("", rng) == ""


def test_maude_negatives_are_seeded_per_row():
    replies = ["i have a red car", "the weather is nice today", "ok"]
    first = maude.syntactic_negatives(replies, seed=3)
    assert first == maude.syntactic_negatives(replies, seed=3)
    assert first[2] == maude.syntactic_negatives(["x", "y", replies[2]], seed=3)[2]  # a row's draws: (seed, row)
    assert first != maude.syntactic_negatives(replies, seed=4)
    assert [len(row) for row in first] == [len(maude.SYNTACTIC) * maude.PER_KIND] * 3


def test_maude_loss_leaves_out_a_negative_equal_to_the_gold():
    torch.manual_seed(0)
    model, table = maude.MaUdeModel(6, down=4, hidden=5, dropout=0.0).eval(), torch.randn(12, 6)
    ids, counts = torch.tensor([[1, 2, 0], [3, 4, 5]]), torch.tensor([2, 3])
    golds, negatives = torch.tensor([6, 7]), torch.tensor([[8, 9], [10, 11]])
    with torch.no_grad():
        plain = maude.nce_loss(model, table, ids, counts, golds, negatives, "sum")
        with_gold = maude.nce_loss(model, table, ids, counts, golds, torch.cat([negatives, golds[:, None]], 1), "sum")
        assert with_gold == pytest.approx(plain) and plain[1] == 2 + 4
        one_left = maude.nce_loss(model, table, ids, counts, golds, torch.tensor([[8, 6], [10, 11]]), "sum")
        assert one_left[1] == 2 + 3


def test_maude_loss_matches_a_loop_over_every_pair():
    """The batched loss (each context encoded once) against one forward pass per (context, reply)
    pair and the binary cross-entropy written out in float64."""
    torch.manual_seed(1)
    model, table = maude.MaUdeModel(6, down=4, hidden=5, dropout=0.0).eval(), torch.randn(14, 6)
    ids, counts = torch.tensor([[1, 2, 0], [3, 4, 5], [6, 0, 0]]), torch.tensor([2, 3, 1])
    golds, negatives = torch.tensor([7, 8, 9]), torch.tensor([[10, 11], [12, 8], [13, 10]])
    with torch.no_grad():
        total, terms = maude.nce_loss(model, table, ids, counts, golds, negatives, "sum")
        expected, n = 0.0, 0
        for i in range(3):
            utterances = table[ids[i, : counts[i]]][None]
            for reply, label in [(golds[i], 1), *[(neg, 0) for neg in negatives[i] if neg != golds[i]]]:
                z = float(model(utterances, counts[i : i + 1], table[reply][None]).double())
                expected += -np.log(1 / (1 + np.exp(-z))) if label else -np.log(1 - 1 / (1 + np.exp(-z)))
                n += 1
    assert terms == n == 3 + 5
    assert total == pytest.approx(expected, rel=1e-5)


@pytest.fixture(scope="module")
def maude_weights(tiny_encoder, corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("maude")
    with one_thread():
        report = maude.train(
            out,
            data_dir=corpus,
            encoder=tiny_encoder,
            epochs=20,
            patience=5,
            batch_size=64,
            lr=1e-2,
            down_dim=64,
            decoder_hidden=64,
        )
    return out, report


def test_maude_learns_which_reply_fits(maude_weights, corpus):
    out, report = maude_weights
    assert report["best_epoch"] >= 1
    assert held_out_accuracy(load_columns("maude", out), corpus, maude.COLUMN) > BEATS_CHANCE


def test_maude_handles_empty_and_one_turn_contexts(maude_weights):
    columns = load_columns("maude", maude_weights[0])
    scores = columns([[], ["hi"], ["hi", "how are you", "fine"]], ["hello", "hi", "good"])[maude.COLUMN]
    assert scores.shape == (3,) and np.all((scores > 0) & (scores < 1))


# ---------------------------------------------------------------------------------- weights


@pytest.mark.parametrize("system", ["bert-ruber", "maude"])
def test_round_trip_and_damaged_weights(system, ruber, maude_weights, tmp_path):
    out = {"bert-ruber": ruber, "maude": maude_weights}[system][0]
    contexts, replies = [["hi", "how are you"], ["nice day"]], ["fine thanks", "good day"]
    first, again = load_columns(system, out)(contexts, replies), load_columns(system, out)(contexts, replies)
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])

    from safetensors.torch import load_file, save_file

    for name in ("config.json", WEIGHTS_FILE):
        (tmp_path / name).write_bytes((out / name).read_bytes())
    state = load_file(str(out / WEIGHTS_FILE))
    key = next(iter(state))
    save_file({**state, key: state[key][..., :-1].contiguous()}, str(tmp_path / WEIGHTS_FILE))
    with pytest.raises(ValueError, match=rf"{WEIGHTS_FILE}: tensors do not fit the model .*shape \['{key}'\]"):
        load_columns(system, tmp_path)
    save_file({**state, key: torch.full_like(state[key], float("nan"))}, str(tmp_path / WEIGHTS_FILE))
    with pytest.raises(ValueError, match=rf"{WEIGHTS_FILE}: NaN or infinite values in \['{key}'\]"):
        load_columns(system, tmp_path)
    (tmp_path / WEIGHTS_FILE).write_bytes(b"not safetensors")
    with pytest.raises(ValueError, match=rf"{WEIGHTS_FILE}: unreadable safetensors file"):
        load_columns(system, tmp_path)
    config = json.loads((out / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "system": "other"}))
    with pytest.raises(ValueError, match="config.json: system is 'other'"):
        load_columns(system, tmp_path)
    (tmp_path / "config.json").unlink()
    with pytest.raises(ValueError, match=f"config.json: file is missing .*--system {system}"):
        load_columns(system, tmp_path)


@pytest.mark.parametrize("system", ["bert-ruber", "maude"])
def test_weights_folder_has_a_card_with_the_paper_the_weights_hash_and_the_results(system, ruber, maude_weights):
    import hashlib

    out, report = {"bert-ruber": ruber, "maude": maude_weights}[system]
    card = (out / "README.md").read_text()
    assert card.startswith(f"# Baseline weights: {system}\n")
    assert {"bert-ruber": "Ghazarian et al., 2019", "maude": "Sinha et al., ACL 2020"}[system] in card
    assert f"sha256 `{hashlib.sha256((out / WEIGHTS_FILE).read_bytes()).hexdigest()}`" in card
    assert f"- best_epoch: {report['best_epoch']}\n" in card and f"- train_pairs: {report['train_pairs']}\n" in card
    assert "- history:" not in card  # the per-epoch history stays in config.json


def test_available_columns_skips_a_missing_system_and_says_how_to_train_it(ruber, tmp_path, caplog):
    (tmp_path / "bert-ruber").mkdir()
    for name in ("config.json", WEIGHTS_FILE):
        (tmp_path / "bert-ruber" / name).write_bytes((ruber[0] / name).read_bytes())
    with caplog.at_level(logging.WARNING):
        found = available_columns(tmp_path, systems=("bert-ruber", "maude"))
    assert [type(c).__name__ for c in found] == ["BertRuberColumns"]
    assert "baseline maude skipped: no weights in" in caplog.text
    assert "python -m benchmarks.baselines train --system maude" in caplog.text


def test_unknown_system_is_refused():
    with pytest.raises(ValueError, match="system must be one of"):
        load_columns("ruber2")


def test_meta_evaluation_blends_bert_ruber_only_on_sets_with_references(ruber):
    from benchmarks.human_correlation import evaluate_turn_set
    from density_train.data.judgments import JudgmentSet

    rng = np.random.default_rng(0)
    rows = [
        {"context": ["hi", "how are you"], "response": str(rng.choice(TOPICS)), "reference": "fine", "score": float(s)}
        for s in rng.normal(size=30)
    ]
    columns = [load_columns("bert-ruber", ruber[0])]
    with_refs = evaluate_turn_set(JudgmentSet("some_set", rows), columns, False, ("full", "paper"))
    assert {bert_ruber.UNREFERENCED, bert_ruber.BLENDED} <= set(with_refs["paper"])
    rows[3]["reference"] = ""
    without = evaluate_turn_set(JudgmentSet("some_set", rows), columns, False, ("full",))
    assert bert_ruber.UNREFERENCED in without["full"] and bert_ruber.BLENDED not in without["full"]


def test_without_references_the_meta_evaluation_needs_no_rouge_score(ruber, monkeypatch):
    """--no-baselines leaves out BLEU-2 and ROUGE-L too, and with them rouge-score, which a GPU machine's image
    lacks (its first meta-evaluation there, 2026-12-04, failed on the import)."""
    from benchmarks.human_correlation import evaluate_turn_set
    from density_train.data.judgments import JudgmentSet

    rows = [
        {"context": ["hi", "how are you"], "response": topic, "reference": "fine", "score": float(i)}
        for i, topic in enumerate(TOPICS * 3)
    ]
    columns = [load_columns("bert-ruber", ruber[0])]
    monkeypatch.setitem(sys.modules, "rouge_score", None)  # any import of it raises ImportError
    with pytest.raises(ImportError):
        evaluate_turn_set(JudgmentSet("some_set", rows), columns, False, ("full",))
    result = evaluate_turn_set(JudgmentSet("some_set", rows), columns, False, ("full",), with_references=False)
    assert bert_ruber.UNREFERENCED in result["full"]
    assert "BLEU-2" not in result["full"] and "ROUGE-L" not in result["full"]


def test_embedding_cache_returns_the_computed_vectors_and_checks_its_file(tiny_encoder, tmp_path, monkeypatch):
    from benchmarks.baselines.common import embed_texts

    texts = ["b reply", "a context", "b reply", "c other"]
    fresh = embed_texts(texts, tiny_encoder, "mean", normalize=True, cache_dir=tmp_path)
    (cached_file,) = tmp_path.glob("embeddings-*.safetensors")
    assert list(fresh) == ["b reply", "a context", "c other"]

    import density_train.negatives.retrieval

    def no_encoding(*args, **kwargs):
        raise AssertionError("recomputed although cached")

    monkeypatch.setattr(density_train.negatives.retrieval, "embed", no_encoding)
    again = embed_texts(list(reversed(texts)), tiny_encoder, "mean", normalize=True, cache_dir=tmp_path)
    assert list(again) == ["c other", "b reply", "a context"]  # the caller's order, not the file's
    for text in fresh:
        np.testing.assert_array_equal(again[text], fresh[text])
    with pytest.raises(AssertionError, match="recomputed"):  # other settings, other texts: another key
        embed_texts(texts, tiny_encoder, "max", normalize=True, cache_dir=tmp_path)
    with pytest.raises(AssertionError, match="recomputed"):
        embed_texts([*texts, "d new"], tiny_encoder, "mean", normalize=True, cache_dir=tmp_path)

    from safetensors.torch import load_file, save_file

    stored = load_file(str(cached_file))["vectors"]
    save_file({"vectors": stored[:-1].contiguous()}, str(cached_file), metadata={"key": "another"})
    with pytest.raises(ValueError, match=r"embeddings-.*\.safetensors: embedding cache does not match"):
        embed_texts(texts, tiny_encoder, "mean", normalize=True, cache_dir=tmp_path)
    cached_file.write_bytes(b"not safetensors")
    with pytest.raises(ValueError, match=r"embeddings-.*\.safetensors: unreadable embedding cache"):
        embed_texts(texts, tiny_encoder, "mean", normalize=True, cache_dir=tmp_path)
