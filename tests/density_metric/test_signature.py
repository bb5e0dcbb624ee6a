"""density_metric.signature: the one format, parse and comparison of the scorer's and the test's signatures."""

import torch
import transformers

from density_metric import __version__
from density_metric.signature import SCORE_DEFINING_FIELDS, Signature

STORED = "density_metric=0.1.0|checkpoint=bundled:density-minilm@sha256:ab|max_length=256|dtype=float32|floor=v2"
OLDER = "density_metric=0.0.9|checkpoint=org/a@sha256:ab|max_length=256|dtype=float32"  # before floor and specials


def test_the_scorers_line_is_the_one_written_before_the_class():
    line = Signature.scorer("org/a@sha256:ab", 256, None, "float32", "v2").format()
    assert line == (
        f"density_metric={__version__}|checkpoint=org/a@sha256:ab|max_length=256|dtype=float32|floor=v2"
        f"|specials=text|torch={torch.__version__}|transformers={transformers.__version__}"
    )
    capped = Signature.scorer("org/a@sha256:ab", 256, 40, "float32", "v2").format()
    assert "|max_length=256|max_response_length=40|dtype=float32|" in capped


def test_the_tests_line_is_sacrebleus_key_colon_value():
    assert Signature.test("ar", 10000, 1000, 12345, 1e-5).format() == "test:ar|ar:10000|bs:1000|seed:12345|rtol:1e-05"
    assert Signature.test("bs", 3, 2, None, 0.0).format() == "test:bs|ar:3|bs:2|seed:none|rtol:0"


def test_parse_reads_both_lines_back_and_a_value_may_hold_the_other_separator():
    text = f"test:ar|ar:10000|bs:1000|seed:12345|rtol:1e-05|{STORED}"
    fields = Signature.parse(text).fields
    assert fields == {
        "test": "ar",
        "ar": "10000",
        "bs": "1000",
        "seed": "12345",
        "rtol": "1e-05",
        "density_metric": "0.1.0",
        "checkpoint": "bundled:density-minilm@sha256:ab",
        "max_length": "256",
        "dtype": "float32",
        "floor": "v2",
    }
    assert Signature.parse(text).format() == text
    assert Signature.parse("bare").fields == {"bare": ""}


def test_differences_are_the_score_defining_fields_the_checkpoint_by_its_revision():
    stored = Signature.parse(STORED)
    moved = Signature.parse(STORED.replace("bundled:density-minilm@", "/data/copy@"))
    assert stored.differences(moved) == {}  # one checkpoint loaded from two places
    newer = Signature.parse(STORED.replace("density_metric=0.1.0", "density_metric=0.2.0") + "|torch=9")
    assert stored.differences(newer) == {}  # library versions do not define a score
    other = Signature.parse(STORED.replace("@sha256:ab", "@sha256:cd").replace("=float32", "=bfloat16"))
    assert stored.differences(other) == {
        "checkpoint": ("bundled:density-minilm@sha256:ab", "bundled:density-minilm@sha256:cd"),
        "dtype": ("float32", "bfloat16"),
    }


def test_a_field_an_older_signature_lacks_reads_as_empty():
    older = Signature.parse(OLDER)
    expected = {"checkpoint": "sha256:ab", "max_length": "256", "dtype": "float32"}
    assert older.score_defining() == {field: expected.get(field, "") for field in SCORE_DEFINING_FIELDS}
    assert older.differences(Signature.parse(STORED)) == {"floor": ("", "v2")}  # specials: "" in both
