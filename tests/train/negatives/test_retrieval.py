"""The retrieval index of hard negatives: nearest neighbours, its cache file, and the command that builds it."""

import json
import struct

import numpy as np
import pytest

from density_train.data.corpora import response_pairs_with_dialogues
from density_train.data.examples import SelectionData
from density_train.negatives.retrieval import PoolMismatchError, RetrievalIndex, pool_sha256, top_neighbours

from ...dialogues import DIALOGUES, hand_index


@pytest.fixture(scope="module")
def data():
    return SelectionData.from_pairs(*response_pairs_with_dialogues(DIALOGUES))


@pytest.fixture(scope="module")
def retrieval(data):
    return hand_index(data.pool)


def unit(rows):
    rows = np.asarray(rows, dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_top_neighbours_excludes_self_copies_and_pairs_above_the_ceiling():
    # cosines with row 0: 0.9988, 0.894, -0.196, (a copy), 0.0995
    embeddings = unit([[1, 0, 0], [1, 0.05, 0], [1, 0.5, 0], [-0.2, 1, 0], [1, 0.02, 0], [0.1, 0, 1]])
    keys = ["a", "b", "c", "d", "a", "f"]  # rows 0 and 4 are normalised copies of each other
    indices, sims = top_neighbours(embeddings, 3, ceiling=None, keys=keys)
    assert indices[0].tolist() == [1, 2, 5]  # not itself (0) nor its copy (4)
    np.testing.assert_allclose(sims[0], embeddings[[1, 2, 5]] @ embeddings[0], rtol=1e-6)
    assert (np.diff(sims, axis=1) <= 0).all()
    capped, capped_sims = top_neighbours(embeddings, 3, ceiling=0.99, keys=keys)
    assert capped[0].tolist() == [2, 5, 3]  # row 1 (cosine 0.9988) is a near-duplicate
    assert (capped_sims[capped >= 0] <= 0.99).all()
    # fewer than k left: padded with -1 / -inf
    few, few_sims = top_neighbours(embeddings[:2], 3, ceiling=None)
    assert few.tolist() == [[1, -1, -1], [0, -1, -1]] and np.isinf(few_sims[:, 1:]).all()


def test_top_neighbours_does_not_depend_on_the_chunk_size():
    embeddings = unit(np.random.default_rng(0).normal(size=(50, 8)))
    keys = [str(i % 45) for i in range(50)]
    whole = top_neighbours(embeddings, 5, ceiling=0.8, keys=keys, chunk_rows=1000)
    for chunk in (1, 7):
        chunked = top_neighbours(embeddings, 5, ceiling=0.8, keys=keys, chunk_rows=chunk)
        np.testing.assert_array_equal(chunked[0], whole[0])
        np.testing.assert_allclose(chunked[1], whole[1], rtol=1e-6)  # BLAS rounds by block shape


def test_index_round_trips_through_safetensors_and_refuses_another_pool(tmp_path, data, retrieval):
    path = tmp_path / "cache" / "index.safetensors"
    retrieval.save(path)
    loaded = RetrievalIndex.load(path, list(reversed(data.pool)))  # the pool's order does not matter
    np.testing.assert_array_equal(loaded.neighbours, retrieval.neighbours)
    assert loaded.ceiling == 0.99 and loaded.pool_hash == pool_sha256(data.pool)
    assert loaded.neighbours_of("Yes .") == retrieval.neighbours_of("Yes .")
    with pytest.raises(PoolMismatchError, match="built for another pool"):
        RetrievalIndex.load(path, [*data.pool, "one more utterance"])
    assert RetrievalIndex.load_or_build(path, data.pool).pool_hash == loaded.pool_hash
    # Its metadata in sorted order (safetensors' own order changes from process to process): same index, same bytes.
    (length,) = struct.unpack("<Q", path.read_bytes()[:8])
    keys = list(json.loads(path.read_bytes()[8 : 8 + length])["__metadata__"])
    assert keys == sorted(keys) and len(keys) == 7


def test_pool_hash_is_unambiguous():
    assert pool_sha256(["ab", "c"]) != pool_sha256(["a", "bc"])
    assert pool_sha256(["b", "a"]) == pool_sha256(["a", "b"])


def test_retrieval_index_command_builds_a_loadable_cache_with_the_real_encoder(tmp_path, capsys):
    """The untuned all-MiniLM-L6-v2 on a few dialogues: the cache loads for the split's pool, and
    a padded batch embeds each text as it would alone."""
    from density_train.commands import main
    from density_train.negatives.retrieval import embed

    corpus = tmp_path / "dialogues.jsonl"
    corpus.write_text("".join(json.dumps(turns) + "\n" for turns in DIALOGUES[:6]))
    out = tmp_path / "cache" / "index.safetensors"
    main(
        ["retrieval-index", "--corpus", "jsonl", "--train-file", str(corpus), "--valid-file", str(corpus)]
        + ["--out", str(out), "--k", "4", "--ceiling", "0.95"]
    )
    report = json.loads(capsys.readouterr().out)
    pool = SelectionData.from_pairs(*response_pairs_with_dialogues(DIALOGUES[:6])).pool
    assert report["utterances"] == len(pool) and report["k"] == 4 and report["ceiling"] == 0.95
    index = RetrievalIndex.load(out, pool)
    assert index.neighbours.shape == (len(pool), 4) and (index.similarities[index.neighbours >= 0] <= 0.95).all()
    vectors = embed(index.texts)
    for row in (0, 5, len(pool) - 1):
        found = index.neighbours[row][index.neighbours[row] >= 0]
        np.testing.assert_allclose(index.similarities[row][: len(found)], vectors[found] @ vectors[row], atol=1e-4)
    texts = ["Yes .", "Oh no , I am late for my class , and the bus is not coming either !"]
    together, alone = embed(texts), np.concatenate([embed(texts[:1]), embed(texts[1:])])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, rtol=1e-5)
