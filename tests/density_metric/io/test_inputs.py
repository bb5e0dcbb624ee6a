"""Every bad input gets a defined answer: a ValueError naming the field and row, or a documented score."""

import math

import numpy as np
import pytest

from ...tiny import WORDS


@pytest.mark.parametrize(
    "contexts, responses, message",
    [
        (None, ["hi"], "contexts is required"),
        ([["hi"]], None, "responses is required"),
        ("hi", ["hi"], "contexts must be a list, got str"),
        ([["hi"], ["you"]], ["hi"], "contexts has 2 rows but responses has 1"),
        ([], [], "contexts and responses are empty"),
        ([["hi"], None], ["a", "b"], r"contexts\[1\] is None"),
        ([["hi"], 5], ["a", "b"], r"contexts\[1\] must be a list of strings or a string, got int"),
        ([["hi"], ["ok", None]], ["a", "b"], r"contexts\[1\]\[1\] must be a string, got NoneType"),
        ([["hi"], ["ok"]], ["a", None], r"responses\[1\] must be a string, got NoneType"),
        ([["hi"], ["ok"]], ["a", 3.5], r"responses\[1\] must be a string, got float"),
        # Valid JSON ("\ud800") and a valid str, but no Unicode text: the tokenizer would raise TypeError.
        ([["hi"], ["ok", "a\ud800"]], ["a", "b"], r"contexts\[1\]\[1\] holds a lone surrogate \(U\+D800 at 1\)"),
        ([["hi"], ["ok"]], ["a", "\udfff b"], r"responses\[1\] holds a lone surrogate \(U\+DFFF at 0\)"),
    ],
)
def test_bad_input_raises_value_error_naming_field_and_row(tiny_scorer, contexts, responses, message):
    with pytest.raises(ValueError, match=message):
        tiny_scorer.score(contexts, responses)


def test_empty_response_and_empty_context_get_finite_scores(tiny_scorer):
    result = tiny_scorer.score([["how are you"], [], ""], ["", "fine thanks", "fine thanks"])
    assert all(math.isfinite(value) for value in result.scores)
    # An empty string context is the same as no context.
    assert result.scores[1] == pytest.approx(result.scores[2])


def test_text_beyond_max_length_keeps_the_most_recent_context(tiny_scorer):
    """Contexts that differ only before the last max_length tokens get the same score."""
    recent = [" ".join(WORDS)] * 4  # about 80 tokens, more than max_length=64 leaves for context
    first = tiny_scorer.score([["hello hello"] + recent, ["weather nice"] + recent, recent[-1:]], ["good day"] * 3)
    assert first.scores[0] == pytest.approx(first.scores[1], rel=1e-6)
    assert first.scores[0] != pytest.approx(first.scores[2], rel=1e-6)
    assert len(tiny_scorer.encoder.encode([recent], ["good day"]).rows[0].ids) == tiny_scorer.encoder.max_length


def test_emoji_and_other_scripts_are_scored(tiny_scorer):
    result = tiny_scorer.score([["안녕하세요 😀"], ["مرحبا"]], ["你好 👋", "Grüße, ça va?"])
    assert np.all(np.isfinite(result.scores))
    assert np.all((result.calibrated >= 0) & (result.calibrated <= 1))


def test_max_length_beyond_the_encoder_is_rejected(tiny_checkpoint):
    from density_metric import DensityScorer

    with pytest.raises(ValueError, match="max_length must be in"):
        DensityScorer(str(tiny_checkpoint), device="cpu", max_length=10_000)


def test_bad_batch_size_and_dtype_are_rejected(tiny_checkpoint):
    from density_metric import DensityScorer

    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        DensityScorer(str(tiny_checkpoint), device="cpu", batch_size=0)
    with pytest.raises(ValueError, match="batch_size must be a positive integer, got True"):
        DensityScorer(str(tiny_checkpoint), device="cpu", batch_size=True)
    assert DensityScorer(str(tiny_checkpoint), device="cpu", batch_size=np.int64(3)).batch_size == 3
    with pytest.raises(ValueError, match="dtype must be"):
        DensityScorer(str(tiny_checkpoint), device="cpu", dtype="int8")
    with pytest.raises(ValueError, match="float16' needs a CUDA device"):
        DensityScorer(str(tiny_checkpoint), device="cpu", dtype="float16")


def test_a_dataframe_is_refused_not_read_as_its_column_names(tiny_scorer):
    # Iterating a DataFrame gives its column names: scoring df[["context"]] once read one row, "context".
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"context": [["hi"], ["where to"], ["bye"]], "response": ["hello", "home", "see you"]})
    with pytest.raises(ValueError, match=r"contexts is a DataFrame, whose iteration gives its column names"):
        tiny_scorer.score(frame[["context"]], frame["response"])
    with pytest.raises(ValueError, match=r"responses is a DataFrame"):
        tiny_scorer.score(frame["context"], frame[["response"]])
    assert len(tiny_scorer.score(frame["context"], frame["response"]).scores) == 3


@pytest.mark.parametrize(
    "context, candidates, message",
    [
        ("hi", ["a", None], r"candidates\[1\] must be a string, got NoneType"),
        (None, ["a"], "context is None"),
        (["hi", 3], ["a"], r"context\[1\] must be a string, got int"),
        ("hi", [], "candidates is empty"),
        ("hi", "a", "candidates must be a list of strings, got str"),
    ],
)
def test_rank_names_its_own_arguments(tiny_scorer, context, candidates, message):
    with pytest.raises(ValueError, match=message):
        tiny_scorer.rank(context, candidates)


@pytest.mark.parametrize("value", [0, -2, True, 2.0, "3", None])
def test_positive_int_rejects_what_is_not_a_count(value):
    from density_metric.errors import positive_int

    with pytest.raises(ValueError, match=r"resamples must be a positive integer, got "):
        positive_int(value, "resamples")


def test_positive_int_accepts_python_and_numpy_integers():
    from density_metric.errors import positive_int

    assert [positive_int(v, "n") for v in (1, 7, np.int32(3), np.uint8(4))] == [1, 7, 3, 4]
    assert all(type(positive_int(v, "n")) is int for v in (7, np.int64(3)))
