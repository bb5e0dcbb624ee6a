"""Scores of the whole pipeline against an independent per-pair float64 reference."""

import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file
from scipy.stats import pearsonr

from density_metric import DensityScorer
from density_metric.checkpoint.format import GAUSSIAN_FILE

from ..tiny import slow_encodes, synthetic_pairs


def reference_scores(checkpoint_dir, contexts, responses):
    """The authors' way: one pair at a time through the tokenizer's own pair encoding, fp32, then numpy float64."""
    from transformers import AutoTokenizer, BertModel

    tokenizer = AutoTokenizer.from_pretrained(checkpoint_dir)
    model = BertModel.from_pretrained(checkpoint_dir, add_pooling_layer=False).eval()
    stats = load_file(str(checkpoint_dir / GAUSSIAN_FILE))
    scores = []
    for context, response in zip(contexts, responses):
        encoded = tokenizer(" [SEP] ".join(context), response, return_tensors="pt")
        with torch.no_grad():
            hidden = model(
                input_ids=encoded["input_ids"],
                attention_mask=encoded["attention_mask"],
                token_type_ids=torch.zeros_like(encoded["input_ids"]),
            ).last_hidden_state[0, 0]
        diff = hidden.double().numpy() - stats["mean"]
        scores.append(-np.sqrt(diff @ stats["precision"] @ diff))
    return np.array(scores)


def test_scores_equal_independent_per_pair_float64_reference(tiny_checkpoint, tiny_scorer):
    contexts, responses = synthetic_pairs(40, seed=10)
    expected = reference_scores(tiny_checkpoint, contexts, responses)
    np.testing.assert_allclose(tiny_scorer.score(contexts, responses).scores, expected, rtol=1e-5)


@pytest.mark.parametrize("batch_size", [1, 3, 64])
def test_scores_do_not_depend_on_batch_size(tiny_checkpoint, tiny_scorer, batch_size):
    contexts, responses = synthetic_pairs(50, seed=11)
    other = DensityScorer(str(tiny_checkpoint), device="cpu", dtype="float32", batch_size=batch_size)
    np.testing.assert_allclose(
        other.score(contexts, responses).scores, tiny_scorer.score(contexts, responses).scores, rtol=1e-5
    )


def test_scores_follow_their_rows_when_input_is_shuffled(tiny_scorer):
    contexts, responses = synthetic_pairs(50, seed=12)
    permutation = np.random.default_rng(0).permutation(50)
    shuffled = tiny_scorer.score([contexts[i] for i in permutation], [responses[i] for i in permutation]).scores
    np.testing.assert_allclose(shuffled, tiny_scorer.score(contexts, responses).scores[permutation], rtol=1e-5)


def test_bfloat16_autocast_stays_within_tolerance(tiny_checkpoint, tiny_scorer):
    """Stated tolerance on a random encoder: features within 2% of the largest fp32 feature,
    score Pearson r > 0.99 against fp32. Rank agreement on the real model is measured in benchmarks/."""
    contexts, responses = synthetic_pairs(200, seed=13)
    bf16 = DensityScorer(str(tiny_checkpoint), device="cpu", dtype="bfloat16", batch_size=16)
    fp32_features, bf16_features = tiny_scorer.features(contexts, responses), bf16.features(contexts, responses)
    assert np.abs(bf16_features - fp32_features).max() <= 0.02 * np.abs(fp32_features).max()
    fp32_scores = tiny_scorer.score(contexts, responses).scores
    bf16_scores = bf16.score(contexts, responses).scores
    assert pearsonr(bf16_scores, fp32_scores).statistic > 0.99
    assert "dtype=bfloat16" in bf16.signature


def test_calibrated_scores_are_in_unit_interval_and_decrease_with_distance(tiny_scorer):
    result = tiny_scorer.score(*synthetic_pairs(100, seed=14))
    assert np.all((result.calibrated >= 0) & (result.calibrated <= 1))
    order = np.argsort(result.scores)
    assert np.all(np.diff(result.calibrated[order]) >= 0)


def test_result_dict_has_scores_calibrated_mean_flags_and_signature(tiny_scorer):
    result = tiny_scorer.score([["hi"], "how are you"], ["hello", "fine thanks"]).to_dict()
    assert set(result) == {"scores", "calibrated", "density", "calibrated_mean", "flags", "signature"}
    assert result["flags"] == [[], []]
    assert result["density"] == pytest.approx(np.mean(result["scores"]))
    for part in (
        "density_metric=0.1.0",
        "checkpoint=",
        "@sha256:",
        "max_length=64",
        "dtype=float32",
        "floor=v2",
        "specials=text",
        "torch=",
        "transformers=",
    ):
        assert part in result["signature"]


def test_plain_string_context_is_one_turn(tiny_scorer):
    assert tiny_scorer.score(["how are you"], ["fine"]).scores == pytest.approx(
        tiny_scorer.score([["how are you"]], ["fine"]).scores
    )


def test_dialogue_score_is_mean_of_turn_scores_against_prefixes(tiny_scorer):
    turns = ["hi", "hello how are you", "fine thanks", "good day"]
    result = tiny_scorer.score_dialogue(turns)
    expected = tiny_scorer.score([turns[:1], turns[:2], turns[:3]], turns[1:]).scores
    np.testing.assert_allclose(result["turn_scores"], expected, rtol=1e-6)
    assert result["score"] == pytest.approx(expected.mean())
    rms = tiny_scorer.score_dialogue(turns, aggregate="rms")["score"]
    assert rms == pytest.approx(-np.sqrt(np.mean(expected**2)))


def test_dialogue_scoring_rejects_one_turn_dialogues(tiny_scorer):
    with pytest.raises(ValueError, match=r"dialogues\[1\] has 1 turn"):
        tiny_scorer.score_dialogues([["hi", "hello"], ["alone"]])


def test_auto_device_is_cuda_if_present_and_auto_dtype_is_bf16_on_cuda_float32_on_cpu():
    from density_metric.encoding.device import resolve_device, resolve_dtype

    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_dtype("auto", torch.device("cuda")) == "bfloat16"
    assert resolve_dtype("auto", torch.device("cpu")) == "float32"  # batch-invariant scores by default
    assert resolve_dtype("float32", torch.device("cuda")) == "float32"


def test_cpu_batches_are_capped_by_padded_tokens():
    from density_metric.encoding.features import length_sorted_batches

    lengths = [10, 300, 40, 299, 50, 5]
    batches = length_sorted_batches(lengths, batch_size=3, max_tokens=600)
    assert [b.tolist() for b in batches] == [[1, 3], [4, 2, 0], [5]]
    assert [b.tolist() for b in length_sorted_batches(lengths, batch_size=4)] == [[1, 3, 4, 2], [0, 5]]


def test_last_layer_computed_for_cls_only_gives_the_full_models_features(tiny_checkpoint, tiny_scorer):
    from density_metric.checkpoint.format import load_checkpoint
    from density_metric.encoding.features import Encoder

    checkpoint = load_checkpoint(tiny_checkpoint)
    full = Encoder.load(checkpoint.encoder_path, checkpoint.config.pair_format, device="cpu", dtype="float32")
    full = Encoder(
        full.model,
        full.tokenizer,
        checkpoint.config.pair_format,
        device="cpu",
        dtype="float32",
        cls_only_last_layer=False,
    )
    assert tiny_scorer.encoder.cls_only_last_layer and not full.cls_only_last_layer
    contexts, responses = synthetic_pairs(60, seed=15)  # uneven lengths, so padding masks matter
    full_features = full.features(full.encode(contexts, responses, group=False))
    np.testing.assert_allclose(tiny_scorer.features(contexts, responses), full_features, atol=2e-5)


def test_cls_only_layer_falls_back_to_the_full_model_with_a_warning_on_an_unchecked_transformers(
    tiny_checkpoint, monkeypatch, caplog
):
    import transformers

    from density_metric.backbone import load_backbone
    from density_metric.checkpoint.format import load_checkpoint
    from density_metric.encoding.last_layer import compute_cls_only_in_last_layer

    model, _ = load_backbone(load_checkpoint(tiny_checkpoint).encoder_path)
    forward = model.encoder.layer[-1].forward
    monkeypatch.setattr(transformers, "__version__", "6.0.0")
    with caplog.at_level("WARNING", logger="density_metric.encoding.last_layer"):
        assert compute_cls_only_in_last_layer(model) is False
    assert "computing the full last layer" in caplog.text and "transformers 6.0.0" in caplog.text
    assert model.encoder.layer[-1].forward == forward


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only error")
def test_cuda_device_without_cuda_is_a_clear_error_at_load(tiny_checkpoint):
    with pytest.raises(ValueError, match="no CUDA device is available"):
        DensityScorer(str(tiny_checkpoint), device="cuda")


@pytest.mark.parametrize("batch_size", [1, 7])
def test_scores_under_the_default_dtype_do_not_depend_on_the_batch(tiny_checkpoint, batch_size):
    """The README's 1e-5 rule, under the defaults (no dtype given): batch size, order and split."""
    contexts, responses = synthetic_pairs(80, seed=17)
    reference = DensityScorer(str(tiny_checkpoint), device="cpu").score(contexts, responses).scores
    scorer = DensityScorer(str(tiny_checkpoint), device="cpu", batch_size=batch_size)
    np.testing.assert_allclose(scorer.score(contexts, responses).scores, reference, rtol=1e-5)
    np.testing.assert_allclose(scorer.score(contexts[::-1], responses[::-1]).scores[::-1], reference, rtol=1e-5)
    split = np.concatenate([scorer.score(contexts[i : i + 30], responses[i : i + 30]).scores for i in range(0, 80, 30)])
    np.testing.assert_allclose(split, reference, rtol=1e-5)


@pytest.mark.skipif(not __import__("os").path.exists("/proc/cpuinfo"), reason="reads Linux CPU flags")
def test_native_bf16_means_bf16_instructions_in_the_cpu_flags():
    """Not oneDNN's bf16 support, which plain AVX512 (emulated, 4x slower than float32 here) also claims."""
    from density_metric.encoding.device import cpu_has_native_bf16

    flags = set(open("/proc/cpuinfo", encoding="utf-8").read().split())
    assert cpu_has_native_bf16() == bool(flags & {"avx512_bf16", "amx_bf16"})


def test_the_machine_is_described_by_its_cpu_model_threads_and_bf16(monkeypatch):
    import torch

    from density_metric.encoding import device

    text = device.machine_description("cpu")
    assert re.search(rf"\({torch.get_num_threads()} threads?[,)]", text) and text.endswith(")")
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    assert re.search(r"\(1 thread[,)]", device.machine_description("cpu"))
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    assert "(2 threads" in device.machine_description("cpu")
    if __import__("os").path.exists("/proc/cpuinfo"):
        names = [line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")]
        assert not names or text.startswith(f"{names[0]} CPU (")
    monkeypatch.setattr(device, "cpu_has_native_bf16", lambda: True)
    assert device.machine_description("cpu").endswith(", native bf16)")
    monkeypatch.setattr(device, "cpu_has_native_bf16", lambda: False)
    assert "bf16" not in device.machine_description("cpu")


def test_a_zero_width_turn_scores_as_an_empty_turn_does(tiny_scorer):
    # The tokenizer gives no token for U+200B; Python's str.strip keeps it, and the turn used to add a separator.
    for turns in (["hi", "\u200b", "you"], ["hi", "\u200b\ufeff", "you", "\u200d"]):
        empty = [
            "" if tiny_scorer.encoder.tokenizer(t, add_special_tokens=False)["input_ids"] == [] else t for t in turns
        ]
        assert empty != turns
        assert tiny_scorer.score_dialogue(turns) == tiny_scorer.score_dialogue(empty)


def test_a_max_length_that_is_not_an_integer_is_a_value_error_naming_it(tiny_checkpoint):
    with pytest.raises(ValueError, match=r"max_length must be an integer number of tokens or None, got '256'"):
        DensityScorer(str(tiny_checkpoint), device="cpu", max_length="256")


@pytest.mark.parametrize("max_length", [1, 3, 4, 129])
def test_the_max_length_range_names_the_checkpoints_own_smallest_and_largest(tiny_shared_checkpoint, max_length):
    """The shared-context layout takes 4 special tokens ([CLS] context [SEP] [CLS] response [SEP]), so its
    smallest max_length is 5; the tiny encoder has 128 positions."""
    with pytest.raises(ValueError, match=rf"max_length must be in \[5, 128\] for this checkpoint, got {max_length}"):
        DensityScorer(str(tiny_shared_checkpoint), device="cpu", max_length=max_length)


def score_a_dataset(checkpoint, rows, progress):
    import datasets

    contexts, responses = synthetic_pairs(rows, seed=5)
    dataset = datasets.Dataset.from_dict({"context": contexts, "response": responses})
    scorer = DensityScorer(str(checkpoint), device="cpu", dtype="float32", progress=progress)
    return scorer.score_dataset(dataset, chunk_size=4)


def test_score_dataset_shows_no_progress_bar_for_a_few_rows(tiny_checkpoint, capsys):
    scored = score_a_dataset(tiny_checkpoint, 6, progress=None)
    assert len(scored["density"]) == 6
    assert "DEnsity" not in capsys.readouterr().err


def test_score_dataset_shows_its_progress_bar_when_asked(tiny_checkpoint, capsys):
    import datasets

    score_a_dataset(tiny_checkpoint, 6, progress=True)
    assert "DEnsity" in capsys.readouterr().err
    assert not datasets.are_progress_bars_disabled()  # the global switch is left as it was


def test_token_budget_and_pair_cap_do_not_change_float32_scores(tiny_scorer):
    """Batches by a token budget (max_tokens) or by pairs (batch_size) read the same pairs: the scores agree to
    float32 rounding, against the scorer's defaults."""
    from density_metric.encoding.features import CPU_BATCH_SIZE, CPU_MAX_TOKENS

    contexts, responses = synthetic_pairs(70, seed=46)
    reference = tiny_scorer.score(contexts, responses).scores
    assert tiny_scorer.encoder.pairs_per_batch(None) == CPU_BATCH_SIZE  # the default where none is given
    assert tiny_scorer.encoder.max_tokens == CPU_MAX_TOKENS
    for batch_size, max_tokens in ((1, 10_000), (1000, 40), (None, 200)):
        tiny_scorer.batch_size, tiny_scorer.encoder.max_tokens = batch_size, max_tokens
        try:
            np.testing.assert_allclose(tiny_scorer.score(contexts, responses).scores, reference, rtol=1e-5)
        finally:
            tiny_scorer.batch_size, tiny_scorer.encoder.max_tokens = 8, CPU_MAX_TOKENS
    with pytest.raises(ValueError, match="max_tokens must be a positive integer"):
        from density_metric.encoding.features import Encoder

        Encoder(tiny_scorer.encoder.model, tiny_scorer.encoder.tokenizer, tiny_scorer.encoder.pair_format, max_tokens=0)


def test_euclidean_scores_are_minus_the_distance_to_the_mean(tiny_scorer):
    """Issue 62's third scoring row, against a loop over rows in float64."""
    contexts, responses = synthetic_pairs(12, seed=48)
    features = tiny_scorer.features(contexts, responses).astype(np.float64)
    mean = tiny_scorer.stats.mean
    expected = [-np.sqrt(sum((value - m) ** 2 for value, m in zip(row, mean))) for row in features]
    np.testing.assert_allclose(tiny_scorer.euclidean_scores(contexts, responses), expected, rtol=1e-9)


def test_one_scorer_shared_by_threads_gives_each_the_scores_it_gives_alone(tiny_checkpoint):
    """The demo serves requests from threads with one scorer: each request's scores must be its own."""
    scorer = DensityScorer(str(tiny_checkpoint), device="cpu", dtype="float32", progress=False)
    contexts = [["hi", f"{word} day"] for word in ("good", "nice", "what", "the")]
    replies = ["fine thanks", "a [SEP] day", "you you you", "hello"]
    alone = [scorer.score([context] * 4, replies).scores for context in contexts]
    slow_encodes(scorer.encoder.tokenizer)
    with ThreadPoolExecutor(len(contexts)) as pool:
        together = list(pool.map(lambda context: scorer.score([context] * 4, replies).scores, contexts))
    np.testing.assert_array_equal(together, alone)
