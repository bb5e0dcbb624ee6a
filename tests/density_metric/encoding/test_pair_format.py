"""The pair format: layout from the tokenizer, truncation from the left, other scripts, validation."""

import numpy as np
import pytest
from transformers import BertTokenizer

from density_metric.checkpoint.format import DensityConfig
from density_metric.encoding.length_options import with_max_length
from density_metric.encoding.packing import encode_pairs, pack
from density_metric.encoding.pair_format import PairFormat, join_context, special_token_layout

from ...tiny import tiny_vocab


def tokenizer(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(tiny_vocab()) + "\n", encoding="utf-8")
    return BertTokenizer(vocab=str(vocab), do_lower_case=True)


def tokens(tok, ids):
    return tok.convert_ids_to_tokens(ids)


def test_pair_is_cls_context_sep_response_sep_with_turn_separator(tmp_path):
    tok = tokenizer(tmp_path)
    [ids] = encode_pairs(
        tok, [["Hi", "how are you"]], ["Fine"], turn_separator="[SEP]", max_length=32, max_response_length=8
    )
    assert tokens(tok, ids) == ["[CLS]", "hi", "[SEP]", "how", "are", "you", "[SEP]", "fine", "[SEP]"]


def test_empty_context_and_empty_response_are_encoded_as_documented(tmp_path):
    tok = tokenizer(tmp_path)
    empty_context, empty_response = encode_pairs(
        tok, [[], ["hi"]], ["fine", "  "], turn_separator="[SEP]", max_length=32, max_response_length=8
    )
    assert tokens(tok, empty_context) == ["[CLS]", "[SEP]", "fine", "[SEP]"]
    assert tokens(tok, empty_response) == ["[CLS]", "hi", "[SEP]", "[SEP]"]


def test_blank_turns_are_dropped_from_context(tmp_path):
    assert join_context(["hi", " ", "", "you"], "[SEP]") == "hi [SEP] you"


def test_long_context_loses_its_oldest_tokens_and_response_is_capped(tmp_path):
    tok = tokenizer(tmp_path)
    context = [" ".join(["hi"] * 20), "how are you"]
    response = " ".join(["fine"] * 10)
    [ids] = encode_pairs(tok, [context], [response], turn_separator="[SEP]", max_length=12, max_response_length=4)
    assert len(ids) == 12
    assert tokens(tok, ids)[-6:] == ["[SEP]", "fine", "fine", "fine", "fine", "[SEP]"]
    assert tokens(tok, ids)[:6] == ["[CLS]", "hi", "[SEP]", "how", "are", "you"]


def test_emoji_and_other_scripts_become_unknown_tokens_not_errors(tmp_path):
    tok = tokenizer(tmp_path)
    [ids] = encode_pairs(tok, [["안녕 😀"]], ["你好 ü"], turn_separator="[SEP]", max_length=32, max_response_length=8)
    assert ids[0] == tok.cls_token_id and ids[-1] == tok.sep_token_id
    assert tok.unk_token_id in ids


def test_special_tokens_come_from_the_tokenizers_pair_template(tmp_path):
    tok = tokenizer(tmp_path)
    before, between, after = special_token_layout(tok)
    assert (before, between, after) == ([tok.cls_token_id], [tok.sep_token_id], [tok.sep_token_id])
    assert len(before + between + after) == tok.num_special_tokens_to_add(pair=True)


def test_a_packing_flags_exactly_the_pairs_that_truncation_cut(tmp_path):
    tok = tokenizer(tmp_path)
    fmt = PairFormat("[SEP]", max_length=12, max_response_length=4)
    contexts = [["hi"], [" ".join(["hi"] * 20)], ["hi"]]
    responses = ["fine", "fine", "fine fine fine fine fine"]
    packing = pack(fmt, tok, contexts, [[response] for response in responses])
    assert packing.cut.tolist() == [False, True, True]
    assert [row.ids for row in packing.rows] == encode_pairs(
        tok, contexts, responses, turn_separator="[SEP]", max_length=12, max_response_length=4
    )


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"max_length": 3}, r"max_length must be in \[4, 8192\]"),
        ({"max_length": 16, "max_response_length": 14}, r"max_response_length=14 must be in \[1, max_length - 3\]"),
        ({"max_response_length": 0}, r"max_response_length=0"),
        ({"max_length": "64"}, "max_length must be an integer"),
        ({"turn_separator": " "}, "turn_separator must be a non-empty string"),
    ],
)
def test_pair_format_rejects_values_that_cannot_encode_a_pair(fields, message):
    with pytest.raises(ValueError, match=message):
        PairFormat(**fields)


def test_a_shorter_max_length_caps_the_response_at_half_of_it():
    fmt = with_max_length(PairFormat("[SEP]", max_length=256, max_response_length=128), 64, 3, None)
    assert (fmt.max_length, fmt.max_response_length) == (64, 32)
    assert with_max_length(PairFormat(), None, 3, None) == PairFormat()


def test_pair_format_round_trips_through_density_config():
    config = DensityConfig(pair_format=PairFormat("[SEPT]", 96, 40), name="x")
    assert DensityConfig.from_dict(config.to_dict()).pair_format == PairFormat("[SEPT]", 96, 40)
    assert {"turn_separator", "max_length", "max_response_length"} <= set(config.to_dict())


# Text that BERT's normalizer removes whole: zero-width and format characters, controls, a combining accent
# (stripped by an uncased tokenizer), line and paragraph separators, a byte order mark.
INVISIBLE = [
    "\u200b",
    "\u200b\u200d",
    "\x00",
    "\x07 ",
    "\ufeff",
    "\u00ad",
    "\u0301",
    "\u2028\u2029",
    "\ufffd",
    "\ue000",
]


@pytest.mark.parametrize("layout", ["paper", "shared-context"])
@pytest.mark.parametrize("text", INVISIBLE)
def test_a_turn_the_tokenizer_reduces_to_nothing_is_dropped_as_an_empty_one_is(tmp_path, layout, text):
    tok = tokenizer(tmp_path)
    assert tok(text, add_special_tokens=False)["input_ids"] == []  # the premise, from the tokenizer itself
    pair_format = PairFormat(max_length=32, max_response_length=8, layout=layout)
    rows = pack(pair_format, tok, [["hi", text, "you"], ["hi", "", "you"]], [["fine", text], ["fine", ""]]).rows
    half = len(rows) // 2  # paper: a row per (context, reply); shared-context: a row per context
    assert rows[:half] == rows[half:]


def test_the_blank_rule_agrees_with_the_bundled_tokenizer_on_every_character(tmp_path):
    """Only text with no letter, digit, punctuation or symbol is given to the tokenizer to decide; the rest is
    kept without a call. Every character that the bundled tokenizer reduces to nothing must be among the former."""
    import unicodedata

    from transformers import AutoTokenizer

    from density_metric.checkpoint.sources import resolve_checkpoint
    from density_metric.encoding.pair_format import is_blank

    tok = AutoTokenizer.from_pretrained(resolve_checkpoint(None).encoder_path)
    # The BMP, then every 61st code point beyond it (all of them take a minute).
    chars = [chr(i) for i in [*range(0x10000), *range(0x10000, 0x110000, 61)] if not 0xD800 <= i < 0xE000]
    vanishing = {c for c, ids in zip(chars, tok(chars, add_special_tokens=False)["input_ids"]) if not ids}
    assert len(vanishing) > 1000 and "\u200b" in vanishing and "\u0301" in vanishing
    assert {c for c in chars if is_blank(c)} >= vanishing  # without a tokenizer: the characters that may vanish
    calls = []
    tok_spy = lambda text, **kwargs: calls.append(text) or tok(text, **kwargs)  # noqa: E731
    assert {c for c in chars if is_blank(c, tok_spy)} == vanishing
    assert not any(unicodedata.category(c)[0] in "LNPS" for c in calls if c != "\ufffd")


@pytest.mark.parametrize("fixture, smallest", [("tiny_checkpoint", 4), ("tiny_shared_checkpoint", 5)])
def test_every_small_max_length_scores_or_is_refused_at_load_naming_it(fixture, smallest, request):
    # max_length 5 and 6 were accepted for a shared-context checkpoint and then failed while scoring,
    # naming max_response_length, which the user never set.
    from density_metric import DensityScorer

    checkpoint = str(request.getfixturevalue(fixture))
    long_turns = [" ".join(["word"] * 40)] * 3
    for max_length in range(4, 12):
        if max_length < smallest:
            with pytest.raises(ValueError, match=rf"max_length must be in \[{smallest}, 128\] for this checkpoint"):
                DensityScorer(checkpoint, device="cpu", dtype="float32", max_length=max_length)
            continue
        scorer = DensityScorer(checkpoint, device="cpu", dtype="float32", max_length=max_length)
        result = scorer.score([long_turns, []], [" ".join(["reply"] * 30), ""])
        assert np.all(np.isfinite(result.scores)), max_length
        assert scorer.encoder.max_length == max_length
