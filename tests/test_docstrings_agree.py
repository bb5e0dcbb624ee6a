"""Text that restates a definition of the code says what that definition says (issue 68: it had gone stale)."""

import re
from pathlib import Path

import numpy as np
import pytest

from density_metric import row_flags, signature
from density_metric.comparison import systems
from density_metric.results import DensityResult

ROOT = Path(__file__).resolve().parents[1]


def named(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None


@pytest.mark.parametrize("flag", sorted(row_flags.FLOORED))
def test_the_docstrings_of_the_floor_name_every_floored_flag(flag):
    assert named(row_flags.floor_distances.__doc__, f"``{flag}``")
    doc = DensityResult.__doc__
    floored_part = doc[doc.index("flags:") : doc.index("at the floor")]
    assert named(floored_part, f"``{flag}``"), floored_part


def signed(name: str, **fields: str) -> systems.SystemTable:
    base = {"checkpoint": "org/a@sha256:1111", "max_length": "256", "dtype": "float32", "floor": "v2"}
    signature = "|".join(f"{key}={value}" for key, value in {**base, "specials": "text", **fields}.items())
    return systems.SystemTable(name, Path(f"{name}.jsonl"), [], np.zeros(0), signature=signature)


@pytest.mark.parametrize("field", signature.SCORE_DEFINING_FIELDS)
def test_check_same_scorer_names_every_score_defining_field(field):
    other = {field: "org/b@sha256:2222" if field == "checkpoint" else "other"}
    with pytest.raises(ValueError) as error:
        systems.check_same_scorer([signed("a"), signed("b", **other)])
    message = str(error.value)
    assert f"({field} " in message  # the field that differs
    advice = message[message.index("score every file") :]
    for name in signature.SCORE_DEFINING_FIELDS:  # and what must agree: all of them
        assert named(advice, name), (name, advice)
        assert named(systems.check_same_scorer.__doc__, name), name
        assert named(systems.__doc__, name), name


def test_compares_help_names_every_score_defining_field():
    """``--score-field``'s help said that the signatures must name one checkpoint, max_length and dtype."""
    from density_metric.cli import build_parser

    commands = next(action for action in build_parser()._actions if action.dest == "command")
    option = next(action for action in commands.choices["compare"]._actions if action.dest == "score_field")
    for name in signature.SCORE_DEFINING_FIELDS:
        assert named(option.help, name), (name, option.help)


def cited_markdown(path: Path) -> list[str]:
    """The ``.md`` files a source file names: paths with a folder, and upper-case names (README.md, NOTES.md)."""
    names = re.findall(r"[A-Za-z0-9_./-]*[A-Za-z0-9_]\.md\b", path.read_text(encoding="utf-8"))
    return [name for name in names if "/" in name or name[:-3].isupper()]


def test_every_markdown_file_the_code_cites_is_in_the_repository():
    """train/losses/density_term.py cited DESIGN.md, a file outside the repository."""
    sources = [
        ROOT / "app.py",
        *(path for top in ("density_metric", "train", "benchmarks") for path in (ROOT / top).rglob("*.py")),
    ]
    in_repository = {path.relative_to(ROOT).as_posix() for path in ROOT.rglob("*.md") if ".git" not in path.parts}
    names = {Path(path).name for path in in_repository}
    missing = []
    for source in sources:
        for cited in cited_markdown(source):
            if cited.startswith("ROOT/"):  # a placeholder for the folder given on the command line
                continue
            found = (
                cited in names if "/" not in cited else any(path.endswith(cited.lstrip("./")) for path in in_repository)
            )
            if not found:
                missing.append(f"{source.relative_to(ROOT)}: {cited}")
    assert not missing


def test_ci_runs_the_readmes_test_commands_verbatim():
    """.ci/run is the README's development block, line for line (with the browser's install before it, issue 68)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("**Install for development and run the tests**") :]
    block = section[section.index("```bash\n") + len("```bash\n") : section.index("\n```\n")]
    setup = {"#!/usr/bin/env bash", "set -euo pipefail", 'cd "$(dirname "$0")/.."'}
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert [line for line in ci if line and not line.startswith("#") and line not in setup] == block.splitlines()


def test_the_usage_guides_scorer_signature_is_the_scorers():
    """docs/usage.md gave ``batch_size=64`` (it is None: 64 on CPU) and left ``max_tokens`` out."""
    import inspect

    from density_metric import DensityScorer

    text = (ROOT / "docs" / "usage.md").read_text(encoding="utf-8")
    written = re.search(r"`DensityScorer\((.*?)\)`", text, re.S).group(1)
    documented = [part.strip() for part in " ".join(written.split()).split(",") if part.strip() != "*"]
    actual = [
        name if parameter.default is inspect.Parameter.empty else f"{name}={parameter.default!r}".replace("'", '"')
        for name, parameter in inspect.signature(DensityScorer).parameters.items()
    ]
    assert documented == actual
