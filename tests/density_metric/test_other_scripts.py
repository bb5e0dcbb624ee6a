"""Text this model cannot read as English (issue 68): the ``non-latin`` flag of replies or contexts whose letters are
mostly outside the Latin script (density_metric.scripts), flagged and warned about once, never floored."""

import logging
import unicodedata

import numpy as np
import pytest

from density_metric.row_flags import count_flags, flag_summary
from density_metric.scripts import (
    LATIN_BLOCKS,
    MIN_LETTERS,
    letter_counts,
    mostly_other_script,
    turns_mostly_other_script,
)

# Dialogues in other scripts: (context, reply), each side mostly non-Latin letters.
OTHER_SCRIPTS = {
    "Cyrillic": ("Привет! Как прошли выходные?", "Отлично, мы ходили в поход."),
    "Hangul": ("주말 잘 보냈어요?", "주말 주말 주말"),
    "Chinese": ("你好，你周末过得怎么样？", "很好，我去爬山了。"),
    "Arabic": ("مرحبا، كيف كانت عطلة نهاية الأسبوع؟", "كانت رائعة، ذهبت للتنزه"),
    "Greek": ("Γεια σου, πώς ήταν το Σαββατοκύριακο;", "Ήταν υπέροχο, πήγα πεζοπορία."),
    "Japanese": ("週末はどうでしたか？", "とても楽しかったです"),
    "Hindi": ("नमस्ते, आपका सप्ताहांत कैसा था?", "बहुत अच्छा था"),
    "Hebrew": ("שלום, איך היה סוף השבוע?", "היה נהדר"),
}
# English text that must never be flagged: accents, emoji, numbers, code, URLs, a shrug, a few foreign words.
ENGLISH = [
    "José said it was fine.",
    "a naïve café in Zürich, Ærø and Øresund",
    "Great, I went hiking 😀👍",
    "😀😂👍",
    "42",
    "3.14159 and 2,000,000",
    "def f(x): return {'a': x ** 2}  # squared",
    "see https://en.wikipedia.org/wiki/Москва for the city",
    "¯\\_(ツ)_/¯",
    "His name is Israel Kamakawiwoʻole.",
    "I love sushi (寿司) and ramen",
    "The ratio is α/β ≈ 0.5",
    "Ｈｅｌｌｏ and 𝐇𝐞𝐥𝐥𝐨",
    "Vietnamese: Tôi rất thích đi bộ",
    "",
    "...",
]


def naive_counts(text: str) -> tuple[int, int]:
    """(Latin letters, other letters) of ``text``, one character at a time: the reference of letter_counts."""
    latin = other = 0
    for char in text:
        if unicodedata.category(char)[0] != "L":
            continue
        if any(first <= ord(char) <= last for first, last in LATIN_BLOCKS):
            latin += 1
        else:
            other += 1
    return latin, other


@pytest.mark.parametrize("script", sorted(OTHER_SCRIPTS))
def test_a_dialogue_in_another_script_is_flagged_on_both_sides(script):
    context, reply = OTHER_SCRIPTS[script]
    assert mostly_other_script([context, reply]).tolist() == [True, True]


def test_english_with_accents_emoji_numbers_code_urls_and_a_few_foreign_letters_is_not_flagged():
    assert not mostly_other_script(ENGLISH).any()


def test_letter_counts_equal_a_character_by_character_count():
    texts = ENGLISH + [text for pair in OTHER_SCRIPTS.values() for text in pair] + ["Hello Привет мир", "日"]
    np.testing.assert_array_equal(letter_counts(texts), [naive_counts(text) for text in texts])
    expected = [other >= MIN_LETTERS and other > latin for latin, other in map(naive_counts, texts)]
    assert mostly_other_script(texts).tolist() == expected


def test_a_context_is_read_as_its_turns_together():
    texts = ENGLISH + [text for pair in OTHER_SCRIPTS.values() for text in pair]
    rng = np.random.default_rng(3)
    contexts = [list(rng.choice(texts, size=rng.integers(0, 4))) for _ in range(200)]
    expected = [mostly_other_script(["\n".join(turns)])[0] for turns in contexts]
    assert turns_mostly_other_script(contexts).tolist() == expected and any(expected) and not all(expected)
    # Three English turns outweigh one short Russian one; two Russian ones outweigh one English word.
    assert turns_mostly_other_script(
        [["how are you", "fine and you", "Привет"], ["Привет", "Как дела", "ok"]]
    ).tolist() == [
        False,
        True,
    ]


def test_letters_are_counted_in_chunks_as_in_one_pass():
    texts = [text for pair in OTHER_SCRIPTS.values() for text in pair] + ["", "ok", ""] + ENGLISH
    np.testing.assert_array_equal(letter_counts(texts, chunk=3), letter_counts(texts))


def test_a_repeated_text_gets_the_flag_of_its_first_copy_in_every_row():
    texts = ["Привет", "hello", "Привет", "ok", "Привет"]
    assert mostly_other_script(texts).tolist() == [True, False, True, False, True]
    assert mostly_other_script([]).shape == (0,)


def test_the_flag_reads_the_reply_or_the_context_and_does_not_change_the_score(tiny_scorer):
    cyrillic_context, cyrillic_reply = OTHER_SCRIPTS["Cyrillic"]
    contexts = [["how was your weekend"], [cyrillic_context], ["how was your weekend"], ["hi", cyrillic_context]]
    responses = ["great, we went hiking", "great, we went hiking", cyrillic_reply, "ok"]
    result = tiny_scorer.score(contexts, responses)
    assert result.flags == [[], ["non-latin"], ["non-latin"], ["non-latin"]]
    features = tiny_scorer.features(contexts, responses)
    np.testing.assert_allclose(result.scores, -tiny_scorer.stats.distances(features), rtol=1e-6)  # not floored


def test_the_flag_sits_before_truncated_and_beside_a_reply_flag(tiny_scorer):
    result = tiny_scorer.score([["Привет " * 60], ["Привет"]], ["fine thanks", "?!"])
    assert result.flags[0][:2] == ["non-latin", "truncated"] and result.flags[1] == ["punctuation", "non-latin"]


def test_a_call_warns_once_saying_the_model_reads_english(tiny_scorer, caplog):
    contexts, responses = zip(*OTHER_SCRIPTS.values())
    with caplog.at_level(logging.WARNING, logger="density_metric.row_flags"):
        result = tiny_scorer.score([[c] for c in contexts], list(responses))
    assert all("non-latin" in row for row in result.flags)  # the tiny vocabulary reads some as unknown tokens too
    (message,) = [r.getMessage() for r in caplog.records if r.name == "density_metric.row_flags"]
    assert f"{len(contexts)} of {len(contexts)} rows are flagged:" in message
    assert f"{len(contexts)} mostly letters outside the Latin script" in message and "reads English only" in message


def test_the_summary_names_english_only_where_a_row_is_flagged_non_latin():
    assert "English" not in flag_summary(count_flags([["empty"], []]))
    assert "English" in flag_summary(count_flags([["non-latin"], []]))


def test_the_count_script_counts_flagged_rows_by_people_and_the_largest_share():
    from ..results_scripts import load_results_script

    other_scripts = load_results_script("bundled-default/languages/other_scripts.py")
    rows = [
        (["how are you"], "fine", True),
        (["Привет"], "fine thanks", True),  # the context alone: flagged
        (["hi"], "Отлично", False),
        (["I met José at the café"], "ok (寿司)", True),  # other letters, not flagged
    ]
    counted = other_scripts.count(rows)
    assert (counted["rows"], counted["human_rows"], counted["any_other_letter"]) == (4, 3, 3)
    assert (counted["flagged"], counted["flagged_human"], counted["largest_other_share"]) == (2, 1, 1.0)
    assert [example["reply"] for example in counted["examples"]] == ["fine thanks", "Отлично"]
    assert other_scripts.count(rows[3:])["largest_other_share"] == 0.5  # "ok (寿司)": 2 of 4 letters


def texts_that_list_the_flags() -> dict[str, str]:
    from pathlib import Path

    from density_metric.density import density
    from density_metric.io import tables
    from density_metric.results import DensityResult
    from density_metric.scoring import DensityScorer

    root = Path(__file__).resolve().parents[2]
    return {
        "DensityResult": DensityResult.__doc__,
        "tables": tables.__doc__,
        "DensityScorer.flags": DensityScorer.flags.__doc__,
        "the evaluate module": density._KWARGS_DESCRIPTION,
        **{path: (root / path).read_text(encoding="utf-8") for path in ("docs/usage.md", "docs/cli.md")},
        "the metric card": (root / "density_metric/density/README.md").read_text(encoding="utf-8"),
    }


@pytest.mark.parametrize("where", sorted(texts_that_list_the_flags()))
def test_every_text_that_lists_the_flags_names_non_latin(where):
    from density_metric.row_flags import FLOORED, NON_LATIN, TRUNCATED

    text = texts_that_list_the_flags()[where]
    assert all(flag in text for flag in (*sorted(FLOORED), NON_LATIN, TRUNCATED)), where


def test_score_writes_the_flag_and_warns_once_for_the_run(tiny_checkpoint, tmp_path, caplog):
    from tests.density_metric.cli.test_cli import read_jsonl, run, write_jsonl

    rows = [{"context": [c], "response": r} for c, r in OTHER_SCRIPTS.values()] + [
        {"context": ["hi"], "response": "ok"}
    ]
    write_jsonl(tmp_path / "in.jsonl", rows * 3)
    with caplog.at_level(logging.WARNING, logger="density_metric.row_flags"):
        assert run(tiny_checkpoint, tmp_path / "in.jsonl", "-o", tmp_path / "out.jsonl", "--batch-size", "4") == 0
    flags = [row["density_flags"] for row in read_jsonl(tmp_path / "out.jsonl")]
    assert ["non-latin" in row for row in flags] == ([True] * len(OTHER_SCRIPTS) + [False]) * 3
    warnings = [r.getMessage() for r in caplog.records if r.name == "density_metric.row_flags"]
    assert len(warnings) == 1 and "reads English only" in warnings[0]
