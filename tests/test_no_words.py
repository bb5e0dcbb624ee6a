"""results/bundled-default/degenerate-probes/no_words.py: which replies have no letter and no digit in any script."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "results" / "bundled-default" / "degenerate-probes" / "no_words.py"


def load_script():
    spec = importlib.util.spec_from_file_location("no_words", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
