"""score() reads a repeated context once per row of its responses (shared-context layout), with the
scores of scoring each pair alone, in input order; the paper layout scores pair by pair as before."""

import numpy as np
import pytest

from density_metric import DensityScorer
from density_metric.encoding.features import CANDIDATES_PER_ROW
from density_metric.encoding.packing import pack

from ..tiny import WORDS, synthetic_pairs

LAYOUTS = ["tiny_checkpoint", "tiny_shared_checkpoint", "tiny_mean_pooled_checkpoint"]


def mixed_pairs(seed: int):
    """Shuffled pairs: a context with 35 responses (more than one row holds), one with 3, one whose
    turns are longer than the context budget (repeated), long responses, and unique contexts."""
    rng = np.random.default_rng(seed)
    contexts, responses = synthetic_pairs(60, seed=seed)
    long_context = [" ".join(rng.choice(WORDS, size=50)), " ".join(rng.choice(WORDS, size=30))]
    long_response = " ".join(rng.choice(WORDS, size=40))  # more than max_response_length=24 tokens
    shared = [contexts[0]] * 35 + [contexts[1]] * 3 + [long_context] * 4
    rest = contexts[2:20] + [long_context[:1]]
    pairs = list(zip(shared + rest, responses[: len(shared) + len(rest)]))
    pairs[5] = (pairs[5][0], long_response)
    pairs[40] = (pairs[40][0], long_response)
    order = rng.permutation(len(pairs))
    return [pairs[i][0] for i in order], [pairs[i][1] for i in order]


@pytest.fixture(scope="module", params=LAYOUTS)
def scorer(request):
    return DensityScorer(str(request.getfixturevalue(request.param)), device="cpu", dtype="float32", batch_size=8)


def test_grouped_scores_equal_scoring_each_pair_alone_in_input_order(scorer):
    contexts, responses = mixed_pairs(seed=50)
    grouped = scorer.score(contexts, responses)
    alone = [scorer.score([context], [response]) for context, response in zip(contexts, responses)]
    np.testing.assert_allclose(grouped.scores, [r.scores[0] for r in alone], rtol=1e-5, atol=1e-5)
    # calibrated interpolates between quantiles, where a tiny model's steep slope magnifies rounding
    np.testing.assert_allclose(grouped.calibrated, [r.calibrated[0] for r in alone], atol=1e-4)


def test_grouped_scores_equal_rank_of_each_context(scorer):
    contexts, responses = mixed_pairs(seed=51)
    grouped = scorer.score(contexts, responses).scores
    for context in {tuple(c) for c in contexts}:
        members = [i for i, c in enumerate(contexts) if tuple(c) == context]
        ranked = scorer.rank(list(context), [responses[i] for i in members]).scores
        np.testing.assert_allclose(grouped[members], ranked, rtol=1e-5, atol=1e-5)


def test_distinct_contexts_give_the_features_of_the_pair_by_pair_path_exactly(scorer):
    contexts, responses = synthetic_pairs(20, seed=52)
    np.testing.assert_array_equal(
        scorer.features(contexts, responses),
        scorer.encoder.features(scorer.encoder.encode(contexts, responses, group=False), scorer.batch_size),
    )


def rows_read(scorer, contexts, responses, monkeypatch):
    """The encoder rows that score() reads."""
    seen = []
    original = scorer.encoder.features

    def spy(packing, *args, **kwargs):
        seen.extend(packing.rows)
        return original(packing, *args, **kwargs)

    monkeypatch.setattr(scorer.encoder, "features", spy)
    scorer.score(contexts, responses)
    monkeypatch.undo()
    return seen


@pytest.mark.parametrize("fixture", ["tiny_shared_checkpoint", "tiny_mean_pooled_checkpoint"])
def test_a_repeated_context_is_read_once_per_row_of_candidates_split_as_rank_splits(fixture, request, monkeypatch):
    scorer = DensityScorer(str(request.getfixturevalue(fixture)), device="cpu", dtype="float32")
    contexts, responses = synthetic_pairs(40, seed=53)
    first, second = contexts[0], contexts[1]
    pair_contexts = [second if i % 3 == 1 else first for i in range(40)]  # 27 of first, 13 of second, interleaved
    pair_contexts += [first] * 10  # first now has 37 responses: more than one row holds
    pair_responses = responses + responses[:10]
    rows = rows_read(scorer, pair_contexts, pair_responses, monkeypatch)
    # Independent expectation: the pair format's rows for each context's responses, in input order,
    # cut into rows of CANDIDATES_PER_ROW (32), first context first (it appears first).
    of_first = [r for c, r in zip(pair_contexts, pair_responses) if c is first]
    of_second = [r for c, r in zip(pair_contexts, pair_responses) if c is second]
    assert len(of_first) == 37 and CANDIDATES_PER_ROW == 32
    expected = pack(
        scorer.encoder.pair_format,
        scorer.encoder.tokenizer,
        [first, first, second],
        [of_first[:32], of_first[32:], of_second],
    ).rows
    assert [row.ids for row in rows] == [row.ids for row in expected]
    assert [row.features for row in rows] == [row.features for row in expected]


def test_the_paper_layout_reads_one_row_per_pair_in_input_order(tiny_scorer, monkeypatch):
    contexts, responses = synthetic_pairs(6, seed=54)
    contexts = [contexts[0], contexts[1], contexts[0], contexts[0], contexts[2], contexts[1]]
    rows = rows_read(tiny_scorer, contexts, responses, monkeypatch)
    encoder = tiny_scorer.encoder
    expected = pack(encoder.pair_format, encoder.tokenizer, contexts, [[response] for response in responses]).rows
    assert [row.ids for row in rows] == [row.ids for row in expected]


def test_empty_input_and_bad_per_row(tiny_shared_checkpoint):
    scorer = DensityScorer(str(tiny_shared_checkpoint), device="cpu", dtype="float32")
    assert scorer.encoder.features(scorer.encoder.encode([], [])).shape == (0, scorer.encoder.dim)
    with pytest.raises(ValueError, match="per_row must be >= 1"):
        scorer.encoder.encode([["hi"]], ["hello"], per_row=0)


@pytest.mark.parametrize("fixture", LAYOUTS)
def test_a_batch_holds_at_most_batch_size_pairs_however_rows_are_packed(fixture, request, monkeypatch):
    import density_metric.encoding.features as features_module

    scorer = DensityScorer(str(request.getfixturevalue(fixture)), device="cpu", dtype="float32", batch_size=5)
    contexts, responses = synthetic_pairs(40, seed=55)
    pair_contexts = [contexts[0]] * 23 + contexts[1:8] + [contexts[8]] * 10  # 40 pairs, 9 contexts
    sizes, original = [], features_module.batch_features

    def spy(model, batch):
        out = original(model, batch)
        sizes.append(len(out))
        return out

    monkeypatch.setattr(features_module, "batch_features", spy)
    grouped = scorer.score(pair_contexts, responses).scores
    ranked = scorer.rank(contexts[0], responses[:23]).scores
    assert sum(sizes) == 40 + 23 and max(sizes) <= 5
    alone = [scorer.score([c], [r]).scores[0] for c, r in zip(pair_contexts, responses)]
    np.testing.assert_allclose(grouped, alone, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ranked, alone[:23], rtol=1e-5, atol=1e-5)


def test_length_sorted_batches_count_the_pairs_each_row_holds():
    from density_metric.encoding.features import length_sorted_batches

    lengths, sizes = [10, 300, 40, 299, 50, 5], [1, 4, 2, 3, 1, 9]
    # longest first: rows 1 (4 pairs), 3 (3), 4 (1), 2 (2), 0 (1), 5 (9: more than a batch holds, alone)
    batches = length_sorted_batches(lengths, batch_size=5, sizes=sizes)
    assert [b.tolist() for b in batches] == [[1], [3, 4], [2, 0], [5]]
    batches = length_sorted_batches(lengths, batch_size=8, max_tokens=600, sizes=sizes)
    assert [b.tolist() for b in batches] == [[1, 3], [4, 2, 0], [5]]
