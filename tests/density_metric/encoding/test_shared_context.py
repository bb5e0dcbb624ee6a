"""The shared-context layout: one row per context, a block per candidate, no leakage between blocks."""

import json
from pathlib import Path

import evaluate
import numpy as np
import pytest
import torch

from density_metric import DensityScorer
from density_metric.checkpoint.format import CONFIG_FILE, load_checkpoint
from density_metric.encoding.features import Encoder, batch_features, rows_to_batch, segment_mask
from density_metric.encoding.packing import pack
from density_metric.encoding.pair_format import PairFormat

from ...tiny import synthetic_pairs

SHARED = PairFormat(max_length=64, max_response_length=24, layout="shared-context")


def load_encoder(path):
    checkpoint = load_checkpoint(path)
    return Encoder.load(checkpoint.encoder_path, checkpoint.config.pair_format, device="cpu", dtype="float32")


@pytest.fixture(scope="module", params=["tiny_shared_checkpoint", "tiny_mean_pooled_checkpoint"])
def encoder(request):
    """A shared-context encoder with each pooling: the feature token, and the mean over the block."""
    return load_encoder(request.getfixturevalue(request.param))


def row_features(encoder, contexts, groups):
    rows = pack(encoder.pair_format, encoder.tokenizer, contexts, groups).rows
    batch = rows_to_batch(rows, encoder.tokenizer.pad_token_id, encoder.pair_format.pooling)
    with torch.inference_mode():
        return batch_features(encoder.model, batch).numpy()


def test_a_row_of_k_candidates_gives_each_the_feature_of_that_candidate_alone(encoder):
    contexts, responses = synthetic_pairs(12, seed=40)
    groups = [responses[i : i + 4] for i in range(0, 12, 4)]
    packed = row_features(encoder, contexts[:3], groups)
    alone = np.concatenate([row_features(encoder, [contexts[i // 4]], [[responses[i]]]) for i in range(12)])
    np.testing.assert_allclose(packed, alone, rtol=1e-5, atol=1e-6)


def test_no_candidate_feature_changes_when_another_candidate_changes(encoder):
    context = [["hi how are you", "fine thanks and you"]]
    first = row_features(encoder, context, [["good day", "the weather is nice", "a"]])
    changed = row_features(encoder, context, [["good day", "what do you do and how", "a"]])
    np.testing.assert_allclose(first[[0, 2]], changed[[0, 2]], rtol=1e-5, atol=1e-6)
    assert np.abs(first[1] - changed[1]).max() > 1e-3  # the changed candidate itself does move


def test_rows_of_different_lengths_in_one_batch_give_the_features_of_each_row_alone(encoder):
    contexts, responses = synthetic_pairs(6, seed=41)
    groups = [responses[:1], responses[1:4], responses[4:6]]
    batched = row_features(encoder, contexts[:3], groups)
    separately = np.concatenate([row_features(encoder, [contexts[i]], [groups[i]]) for i in range(3)])
    np.testing.assert_allclose(batched, separately, rtol=1e-5, atol=1e-6)


def test_feature_only_last_layer_equals_the_full_layer_in_the_shared_layout(tiny_shared_checkpoint):
    encoder = load_encoder(tiny_shared_checkpoint)
    assert encoder.cls_only_last_layer
    checkpoint = load_checkpoint(tiny_shared_checkpoint)
    full = Encoder.load(checkpoint.encoder_path, SHARED, device="cpu", dtype="float32")
    full = Encoder(full.model, full.tokenizer, SHARED, device="cpu", dtype="float32", cls_only_last_layer=False)
    contexts, responses = synthetic_pairs(8, seed=42)
    groups = [responses[:3], responses[3:8]]
    np.testing.assert_allclose(
        row_features(encoder, contexts[:2], groups), row_features(full, contexts[:2], groups), rtol=1e-5, atol=2e-6
    )


def test_mean_pooling_is_the_mean_of_each_blocks_final_layer_states(tiny_mean_pooled_checkpoint):
    """Against a plain transformers forward pass (no last-layer patch) and a loop over each block's tokens."""
    from density_metric.backbone import load_backbone

    encoder = load_encoder(tiny_mean_pooled_checkpoint)
    assert not encoder.cls_only_last_layer  # mean pooling reads every token of the last layer
    contexts, responses = synthetic_pairs(5, seed=45)
    groups = [responses[:3], responses[3:5]]
    pooled = row_features(encoder, contexts[:2], groups)
    plain, _ = load_backbone(load_checkpoint(tiny_mean_pooled_checkpoint).encoder_path)
    rows = pack(encoder.pair_format, encoder.tokenizer, contexts[:2], groups).rows
    expected = []
    for row in rows:
        batch = rows_to_batch([row], encoder.tokenizer.pad_token_id)
        with torch.inference_mode():
            hidden = plain.eval()(
                input_ids=batch["input_ids"],
                attention_mask=segment_mask(batch["segments"]),
                token_type_ids=torch.zeros_like(batch["input_ids"]),
                position_ids=batch["position_ids"],
            ).last_hidden_state[0]
        hidden = hidden.double().numpy()
        for block in range(1, len(row.features) + 1):
            tokens = [i for i, segment in enumerate(row.segments) if segment == block]
            assert tokens[0] == row.features[block - 1]  # the block opens at its feature token
            expected.append(sum(hidden[i] for i in tokens) / len(tokens))
    np.testing.assert_allclose(pooled, np.array(expected), rtol=1e-5, atol=1e-6)


def test_mean_pooling_refuses_a_model_that_computes_its_feature_tokens_only(tiny_shared_checkpoint):
    encoder = load_encoder(tiny_shared_checkpoint)  # feature-token pooling: last layer patched
    rows = pack(encoder.pair_format, encoder.tokenizer, [["hi"]], [["hello", "bye"]]).rows
    with pytest.raises(ValueError, match="mean pooling needs the whole last layer"):
        batch_features(encoder.model, rows_to_batch(rows, encoder.tokenizer.pad_token_id, "mean"))


def test_mean_pooling_needs_the_shared_layout_and_old_formats_read_as_the_feature_token():
    with pytest.raises(ValueError, match="pooling 'mean' needs layout 'shared-context'"):
        PairFormat(pooling="mean")
    with pytest.raises(ValueError, match="pooling must be one of"):
        PairFormat(layout="shared-context", pooling="max")
    with pytest.raises(ValueError, match="pooling must be one of"):
        rows_to_batch([], 0, "max")
    stored = {"turn_separator": "[SEP]", "max_length": 64, "max_response_length": 32, "layout": "shared-context"}
    assert PairFormat.from_dict(stored).pooling == "feature-token"


def test_positions_restart_after_the_context_and_never_pass_max_length(tmp_path):
    from .test_pair_format import tokenizer

    tok = tokenizer(tmp_path)
    fmt = PairFormat(max_length=16, max_response_length=4, layout="shared-context")
    [row] = pack(fmt, tok, [[" ".join(["hi"] * 30)]], [["fine thanks", "a b c d e f g"]]).rows
    context_length = row.features[0]  # [CLS] context [SEP]
    assert context_length - 2 == 16 - 4 - 4  # the context keeps max_length - max_response_length - 4 tokens
    assert tok.convert_ids_to_tokens(row.ids[row.features[1] : row.features[1] + 6]) == [
        "[CLS]",
        "a",
        "b",
        "c",
        "d",
        "[SEP]",
    ]
    assert row.positions[row.features[0]] == row.positions[row.features[1]] == context_length
    assert max(row.positions) <= 15


@pytest.mark.parametrize("fixture", ["tiny_shared_checkpoint", "tiny_mean_pooled_checkpoint"])
def test_rank_gives_the_scores_of_scoring_each_pair(fixture, request):
    scorer = DensityScorer(str(request.getfixturevalue(fixture)), device="cpu", dtype="float32")
    context = ["hi how are you", "fine and you"]
    candidates = [response for response in synthetic_pairs(10, seed=43)[1]]
    ranked = scorer.rank(context, candidates)
    single = scorer.score([context] * len(candidates), candidates)
    np.testing.assert_allclose(ranked.scores, single.scores, rtol=1e-5)
    np.testing.assert_allclose(ranked.calibrated, single.calibrated, rtol=1e-5, atol=1e-9)


def test_rank_with_the_paper_layout_equals_scoring(tiny_checkpoint, tiny_scorer):
    candidates = synthetic_pairs(5, seed=44)[1]
    np.testing.assert_allclose(
        tiny_scorer.rank(["hi"], candidates).scores, tiny_scorer.score([["hi"]] * 5, candidates).scores, rtol=1e-6
    )
    with pytest.raises(ValueError, match="candidates must be a list of strings"):
        tiny_scorer.rank(["hi"], "hello")


@pytest.mark.parametrize(
    "fixture, layout, pooling",
    [
        ("tiny_checkpoint", "paper", "feature-token"),
        ("tiny_shared_checkpoint", "shared-context", "feature-token"),
        ("tiny_mean_pooled_checkpoint", "shared-context", "mean"),
    ],
)
def test_a_checkpoint_of_either_layout_round_trips_through_save_load_and_evaluate(fixture, layout, pooling, request):
    import density_metric

    path = request.getfixturevalue(fixture)
    stored = json.loads((path / CONFIG_FILE).read_text())
    assert (stored["layout"], stored["pooling"]) == (layout, pooling)
    scorer = DensityScorer(str(path), device="cpu", dtype="float32")
    assert (scorer.checkpoint.config.pair_format.layout, scorer.checkpoint.config.pair_format.pooling) == (
        layout,
        pooling,
    )
    module = str(Path(density_metric.__file__).parent / "density")
    metric = evaluate.load(module, checkpoint=str(path), device="cpu", dtype="float32")
    pairs = ([["hi", "how are you"], ["what is the weather"]], ["fine thanks", "nice day"])
    np.testing.assert_allclose(
        metric.compute(contexts=pairs[0], responses=pairs[1])["scores"], scorer.score(*pairs).scores, rtol=1e-6
    )


def test_a_stored_format_without_layout_reads_as_the_paper_layout():
    stored = {"turn_separator": "[SEP]", "max_length": 64, "max_response_length": 32}
    assert PairFormat.from_dict(stored).layout == "paper"
    with pytest.raises(ValueError, match="layout must be one of"):
        PairFormat(layout="sideways")


def test_encoder_load_names_the_layouts_own_smallest_max_length(tiny_shared_checkpoint):
    """A shared-context pair's special tokens are [CLS] [SEP] [CLS] [SEP]: a max_length of 4 leaves no response
    token, so Encoder.load refuses 3 and 4 naming both ends, [5, the encoder's positions] (it said [4, ...])."""
    checkpoint = load_checkpoint(tiny_shared_checkpoint)
    for too_small in (3, 4):
        with pytest.raises(ValueError, match=r"max_length must be in \[5, \d+\] for this checkpoint"):
            Encoder.load(checkpoint.encoder_path, checkpoint.config.pair_format, max_length=too_small, device="cpu")
    assert (
        Encoder.load(checkpoint.encoder_path, checkpoint.config.pair_format, max_length=5, device="cpu").max_length == 5
    )
