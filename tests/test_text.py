"""The one formatting function: layout, truncation from the left, other scripts."""

from transformers import BertTokenizer

from density_metric.text import encode_pairs, join_context

from .tiny import tiny_vocab


def tokenizer(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(tiny_vocab()) + "\n", encoding="utf-8")
    return BertTokenizer(vocab=str(vocab), do_lower_case=True)


def tokens(tok, ids):
    return tok.convert_ids_to_tokens(ids)


def test_pair_is_cls_context_sep_response_sep_with_turn_separator(tmp_path):
    tok = tokenizer(tmp_path)
    [ids] = encode_pairs(tok, [["Hi", "how are you"]], ["Fine"], turn_separator="[SEP]", max_length=32, max_response_length=8)
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
