"""results/bundled-default/degenerate-probes/no_words.py: which replies have no letter and no digit in any script."""

from ..results_scripts import load_results_script


def load_script():
    return load_results_script("bundled-default/degenerate-probes/no_words.py")


def test_replies_without_a_letter_or_digit_in_any_script_are_counted_with_their_flag(tiny_scorer):
    no_words = load_script()
    replies = [
        ("...", True),
        ("", True),
        ("😀", False),  # no letter: counted, though the tokenizer reads it as [UNK] (flagged unreadable)
        ("😀 !", True),
        ("ok", True),
        ("١٢", True),  # Arabic-Indic digits are digits (N*): words
        ("...", False),
    ]
    counted = no_words.count(replies, tiny_scorer.encoder.pair_format, tiny_scorer.encoder.tokenizer)
    assert counted["replies"] == 7 and counted["human_replies"] == 5
    assert counted["no_words"] == 5 and counted["no_words_human"] == 3
    assert counted["flag"] == {"punctuation": 3, "empty": 1, "unreadable": 1}
    assert counted["most_frequent"][0] == ("...", 2)
