"""Robustness probes: the two without a training counterpart, stable old probes, and independence from train/."""

import ast
import hashlib
import json
import random
from pathlib import Path

import pytest

from benchmarks.probes import EMOJI, PROBES, PUNCTUATION_REPLIES, generic, make_probes, pronoun_swap, truncated

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"
PROBES_FILE = ROOT / "benchmarks" / "probes.py"
NEGATIVES_FILES = [ROOT / "train" / "negatives" / name for name in ("mix.py", "kinds.py", "bland.py")]
OLD_PROBES = ("random", "repetition", "speaker_confused", "echo", "shuffled")


@pytest.mark.parametrize(
    "gold, swapped",
    [
        ("I like my job .", "You like your job ."),
        ("I am fine , and you ?", "You are fine , and I ?"),
        ("Are you ok ? I was there .", "Am I ok ? You were there ."),
        ("you know I love you .", "I know you love me ."),
        ("I ’ m sorry .", "You ’ re sorry ."),
        ("Yes , I'm here . My car is yours .", "Yes , you're here . Your car is mine ."),
        ("Will I be able to come ?", "Will you be able to come ?"),
        ("Thank you so much .", "Thank me so much ."),
    ],
)
def test_pronoun_swap_by_hand(gold, swapped):
    assert pronoun_swap(gold) == swapped


def test_pronoun_swap_is_none_without_a_pronoun():
    assert pronoun_swap("That sounds great .") is None
    assert pronoun_swap("") is None


def test_truncated_keeps_40_to_60_percent_of_the_words_from_the_start():
    gold = "one two three four five six seven eight nine ten ."
    for seed in range(100):
        cut = truncated(gold, random.Random(seed)).split()
        assert gold.split()[: len(cut)] == cut and 4 <= len(cut) <= 6
    assert truncated("Sure , here you go .", random.Random(0)) in {"Sure ,", "Sure , here"}
    for seed in range(20):
        assert truncated("thank you", random.Random(seed)) == "thank"
    assert truncated("Yes .", random.Random(0)) is None and truncated("OK", random.Random(0)) is None


def test_new_probes_are_in_probes_and_none_where_they_do_not_apply():
    assert {"pronoun_swap", "truncated"} <= set(PROBES) and PROBES[:5] == OLD_PROBES
    dialogues = [["Hi .", "Hello , how are you ?", "I am fine ."], ["Bye .", "See you ."], ["a b", "c"]]
    cases = make_probes(dialogues, 10, seed=1)
    assert cases == make_probes(dialogues, 10, seed=1)
    for case in cases:
        assert set(case) == {"context", "gold", *PROBES}
        assert case["pronoun_swap"] is None or case["pronoun_swap"] != case["gold"]
        assert (case["truncated"] is None) == (sum(any(c.isalnum() for c in t) for t in case["gold"].split()) < 2)


def test_adding_probes_left_the_old_ones_unchanged():
    """Values written by make_probes before pronoun_swap and truncated existed (seed 3)."""
    toy = [["a1 x", "a2 y z", "a3 w v u"], ["b1", "b2 q r"], ["c1", "c2 s t", "c3", "c4 m n o p"]]
    expected = [
        ["a3 w v u", "c4 m n o p", "a3 a3 w w v v u u", "a2 y z a3 w v u", "a2 y z", "w u v a3"],
        ["c3", "b2 q r", "c3 c3", "c2 s t c3", "c2 s t", "c3"],
        ["c4 m n o p", "a1 x", "c4 c4 m m n n o o p p", "c3 c4 m n o p", "c3", "n c4 m p o"],
        ["c2 s t", "a3 w v u", "c2 c2 s s t t", "c1 c2 s t", "c1", "t s c2"],
    ]
    assert [[case[key] for key in ("gold", *OLD_PROBES)] for case in make_probes(toy, 4, 3)] == expected


def test_degenerate_probes_are_an_empty_reply_punctuation_only_and_emoji_only():
    assert PROBES[7:10] == ("empty", "punctuation", "unreadable")
    dialogues = [["Hi .", "Hello , how are you ?", "I am fine ."], ["Bye .", "See you ."]]
    cases = make_probes(dialogues, 3, seed=4)
    assert cases == make_probes(dialogues, 3, seed=4)
    for case in cases:
        assert case["empty"] == ""
        assert case["punctuation"] in PUNCTUATION_REPLIES and not any(c.isalnum() for c in case["punctuation"])
        emoji = list(case["unreadable"])
        assert 1 <= len(emoji) <= 3 and set(emoji) <= set(EMOJI)


def test_adding_the_degenerate_probes_left_pronoun_swap_and_truncated_unchanged():
    """Values written by make_probes before the degenerate probes existed (seed 3)."""
    toy = [
        ["a1 x", "a2 y z", "a3 w v u"],
        ["b1", "b2 q r"],
        ["c1", "c2 s t", "c3", "c4 m n o p"],
        ["I like you .", "you know my name", "I am here ."],
    ]
    expected = [
        [None, "c2"],
        [None, None],
        ["I know your name", "you know"],
        [None, "a3 w"],
        [None, "b2"],
        ["You are here .", "I"],
    ]
    assert [[case["pronoun_swap"], case["truncated"]] for case in make_probes(toy, 6, 3)] == expected


# A hand-built toy whose golds include "Yes ." and "okay", and what make_probes gave on it (seed 7) before the
# special-token and generic probes existed: every key it had then.
CONSTANTS_TOY = [
    ["Hi , how are you ?", "I am fine , and you ?", "Yes ."],
    ["Did you lock the door ?", "okay", "Thanks , I'll check ."],
    ["What do you mean ?", "I mean the blue one ."],
]
BEFORE_THE_CONSTANTS = [
    {
        "context": ["Did you lock the door ?"],
        "gold": "okay",
        "random": "What do you mean ?",
        "repetition": "okay okay",
        "speaker_confused": "Did you lock the door ? okay",
        "echo": "Did you lock the door ?",
        "shuffled": "okay",
        "pronoun_swap": None,
        "truncated": None,
        "empty": "",
        "punctuation": "?",
        "unreadable": "🤔🙄👍",
    },
    {
        "context": ["Hi , how are you ?", "I am fine , and you ?"],
        "gold": "Yes .",
        "random": "Thanks , I'll check .",
        "repetition": "Yes Yes . .",
        "speaker_confused": "I am fine , and you ? Yes .",
        "echo": "I am fine , and you ?",
        "shuffled": ". Yes",
        "pronoun_swap": None,
        "truncated": None,
        "empty": "",
        "punctuation": ".",
        "unreadable": "😊🙂",
    },
    {
        "context": ["Did you lock the door ?", "okay"],
        "gold": "Thanks , I'll check .",
        "random": "What do you mean ?",
        "repetition": "Thanks Thanks , , I'll I'll check check . .",
        "speaker_confused": "okay Thanks , I'll check .",
        "echo": "okay",
        "shuffled": "check I'll , . Thanks",
        "pronoun_swap": "Thanks , you'll check .",
        "truncated": "Thanks , I'll",
        "empty": "",
        "punctuation": "...",
        "unreadable": "👋",
    },
    {
        "context": ["Hi , how are you ?"],
        "gold": "I am fine , and you ?",
        "random": "I mean the blue one .",
        "repetition": "I I am am fine fine , , and and you you ? ?",
        "speaker_confused": "Hi , how are you ? I am fine , and you ?",
        "echo": "Hi , how are you ?",
        "shuffled": ", you fine am ? and I",
        "pronoun_swap": "You are fine , and I ?",
        "truncated": "I am fine",
        "empty": "",
        "punctuation": "!!!",
        "unreadable": "😂😍",
    },
    {
        "context": ["What do you mean ?"],
        "gold": "I mean the blue one .",
        "random": "Did you lock the door ?",
        "repetition": "I I mean mean the the blue blue one one . .",
        "speaker_confused": "What do you mean ? I mean the blue one .",
        "echo": "What do you mean ?",
        "shuffled": "one the blue . I mean",
        "pronoun_swap": "You mean the blue one .",
        "truncated": "I mean the",
        "empty": "",
        "punctuation": "...",
        "unreadable": "🔥😂😅",
    },
]
CONSTANT_PROBES = ("special_sep", "special_pad", "special_cls", "generic_yes", "generic_okay", "generic_what")
# Added with issue 69, after every probe above: four more constants and one drawn from a generator of its own.
BLAND_PROBES = ("generic_sure", "generic_dont_know", "generic_thanks", "generic_really", "generic_fluent")


def test_adding_the_special_token_and_generic_probes_left_every_earlier_probe_unchanged():
    cases = make_probes(CONSTANTS_TOY, 5, seed=7)
    assert [{key: case[key] for key in BEFORE_THE_CONSTANTS[0]} for case in cases] == BEFORE_THE_CONSTANTS


def test_special_token_and_generic_probes_are_the_same_text_in_every_case():
    assert PROBES[-11:-5] == CONSTANT_PROBES and PROBES[-5:] == BLAND_PROBES
    for case in make_probes(CONSTANTS_TOY, 5, seed=7):
        assert set(case) == {"context", "gold", *PROBES}
        assert [case["special_sep"], case["special_pad"], case["special_cls"]] == ["[SEP]", "[PAD]", "[CLS]"]
        assert case["generic_okay"] == "Okay." and case["generic_what"] == "What do you mean?"
        # "Yes ." is the generic "Yes." with a space: the gold cannot beat itself, so the probe leaves it out.
        assert case["generic_yes"] == (None if case["gold"] == "Yes ." else "Yes.")
        assert [case[p] for p in BLAND_PROBES[:4]] == ["Sure.", "I don't know.", "Thank you.", "Really?"]


def test_the_fluent_generic_probe_is_one_of_its_list_drawn_apart_and_never_the_gold():
    from benchmarks.probes import FLUENT_GENERIC_REPLIES

    dialogues = [["Hi .", "Oh , really ? I didn't know that ."], *CONSTANTS_TOY]
    cases = make_probes(dialogues, 6, seed=2)
    assert cases == make_probes(dialogues, 6, seed=2)
    drawn = {case["generic_fluent"] for case in make_probes(dialogues * 20, 200, seed=2)}
    assert len(drawn - {None}) >= 4 and drawn - {None} <= set(FLUENT_GENERIC_REPLIES)
    # a gold that is the drawn reply, in DailyDialog's spacing, is left out: the gold cannot beat itself
    assert generic("Oh, really? I didn't know that.", "Oh , really ? I didn't know that .") is None


def test_word_count_counts_tokens_with_a_letter_or_digit():
    from benchmarks.probes import word_count

    assert word_count("Yes .") == 1 and word_count("I ' m 25 , ok ?") == 4 and word_count("... ?!") == 0


@pytest.mark.skipif(not (DATA / "dailydialog").is_dir(), reason="shared data not beside the checkout")
def test_old_probes_on_dailydialog_are_those_of_the_published_tables():
    """sha256 of the old keys of make_probes on DailyDialog test (500, seed 0: the results tables)
    and validation (1,000, seed 0: the histogram), taken before the new probes were added."""
    from density_train.data.corpora import load_dailydialog

    def digest(split, n):
        cases = make_probes(list(load_dailydialog(DATA / "dailydialog", split)["turns"]), n, 0)
        keys = ("context", "gold", *OLD_PROBES)
        return hashlib.sha256(json.dumps([[case[k] for k in keys] for case in cases]).encode()).hexdigest()

    assert digest("test", 500) == "c9e8f01e4381dedc3ba4e7b5d139416ae302f28d972014ae2b796a52342df0a5"
    assert digest("validation", 1000) == "4ef6d552a0bf97733371ee60aaf3e5f1b401cd6fbdebefca0123014c8f3eecc1"


# --- the probes stay independent of the training negatives ---------------------------------


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, absolute, with relative imports resolved against its package."""
    package = path.parent.name
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([package, *filter(None, [base])])
            names.add(base)
            names |= {f"{base}.{alias.name}" for alias in node.names}
    return names


def function_bodies(path: Path) -> dict[str, str]:
    """Each function's body (docstring left out) as an AST dump, which ignores names of nothing but layout."""
    bodies = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            body = node.body if isinstance(node.body, list) else [node.body]
            if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
                body = body[1:]
            bodies[getattr(node, "name", f"lambda@{node.lineno}")] = ast.dump(ast.Module(body=body, type_ignores=[]))
    return bodies


@pytest.mark.parametrize("negatives_file", NEGATIVES_FILES, ids=lambda path: path.name)
def test_probes_and_training_negatives_share_no_imports_and_no_code(negatives_file):
    probes_imports, negatives_imports = imported_modules(PROBES_FILE), imported_modules(negatives_file)
    assert not [m for m in probes_imports if m.split(".")[0] in ("train", "density_train")], probes_imports
    assert not [m for m in negatives_imports if m == "benchmarks" or m.startswith("benchmarks.")], negatives_imports
    probes, negatives = function_bodies(PROBES_FILE), function_bodies(negatives_file)
    assert probes and negatives
    shared = [(p, n) for p, body in probes.items() for n, other in negatives.items() if body == other]
    assert not shared, f"function bodies shared between probes.py and negatives.py: {shared}"
