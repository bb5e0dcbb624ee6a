"""The pair format: layout from the tokenizer, truncation from the left, other scripts, validation."""

import pytest
from transformers import BertTokenizer

from density_metric.checkpoint_format import DensityConfig
from density_metric.pair_format import PairFormat, encode_pairs, join_context, special_token_layout

from .tiny import tiny_vocab


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


def test_encode_with_cuts_flags_exactly_the_pairs_that_truncation_cut(tmp_path):
    tok = tokenizer(tmp_path)
    fmt = PairFormat("[SEP]", max_length=12, max_response_length=4)
    contexts = [["hi"], [" ".join(["hi"] * 20)], ["hi"]]
    responses = ["fine", "fine", "fine fine fine fine fine"]
    encoded, cut = fmt.encode_with_cuts(tok, contexts, responses)
    assert cut == [False, True, True]
    assert encoded == fmt.encode(tok, contexts, responses)


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
    fmt = PairFormat("[SEP]", max_length=256, max_response_length=128).with_max_length(64)
    assert (fmt.max_length, fmt.max_response_length) == (64, 32)
    assert PairFormat().with_max_length(None) == PairFormat()


def test_pair_format_round_trips_through_density_config():
    config = DensityConfig(pair_format=PairFormat("[SEPT]", 96, 40), name="x")
    assert DensityConfig.from_dict(config.to_dict()).pair_format == PairFormat("[SEPT]", 96, 40)
    assert {"turn_separator", "max_length", "max_response_length"} <= set(config.to_dict())
