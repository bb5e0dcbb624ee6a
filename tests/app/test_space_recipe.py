"""The Space recipe of docs/app.md: its files staged as the recipe says, and the staged app started.

What this covers: the recipe's copy steps run as written; requirements.txt names every dependency of pyproject.toml
and its app extra and no local path (the Space's builder installs it before it copies the Space's files); the staged
app starts and answers with only the installed packages and the staged folder to import from (not this checkout).
What it cannot cover: the Hub's build itself (a pip install from the registry, which needs the network)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from packaging.requirements import Requirement

from ..ports import free_port

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[2]

# Run in the staged folder: the checkout's editable install is taken away, so density_metric must come from the
# staged copy, as in a Space where nothing of this project is installed.
WITHOUT_THE_CHECKOUT = """
import os, runpy, sys
sys.meta_path[:] = [finder for finder in sys.meta_path if "editable" not in repr(finder).lower()]
import density_metric
print("density_metric from", os.path.dirname(os.path.dirname(density_metric.__file__)), flush=True)
sys.argv = ["app.py"]
runpy.run_path("app.py", run_name="__main__")
"""


def recipe_lines() -> list[str]:
    """The shell lines of the recipe's code block in docs/app.md."""
    text = (ROOT / "docs" / "app.md").read_text(encoding="utf-8")
    block = re.search(r"\*\*Deploy as a Space:\*\*.*?```bash\n(.*?)```", text, re.DOTALL)
    assert block, "docs/app.md: no bash block after **Deploy as a Space:**"
    return block.group(1).strip().splitlines()


def stage(space: Path) -> Path:
    """Run the recipe's copy steps with its ``space=`` line pointed at ``space`` (its upload left out)."""
    lines = recipe_lines()
    assert lines[0].startswith("space=") and lines[-1].startswith("hf upload "), lines
    script = "\n".join(["set -euo pipefail", f"space={space}", *lines[1:-1]])
    subprocess.run(["bash", "-c", script], cwd=ROOT, check=True)
    return space


def files_below(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


@pytest.fixture(scope="module")
def space(tmp_path_factory) -> Path:
    """The folder that the recipe's copy steps stage, from nothing."""
    return stage(tmp_path_factory.mktemp("recipe") / "space")


def test_staging_into_an_empty_folder_stages_what_a_new_folder_gets(space, tmp_path):
    (tmp_path / "space").mkdir()
    assert files_below(stage(tmp_path / "space")) == files_below(space)


def test_staging_again_replaces_the_staged_files_and_package_without_nesting_it(space, tmp_path):
    again = stage(tmp_path / "space")
    (again / "app.py").write_text("old app\n", encoding="utf-8")
    (again / "density_metric" / "removed_since.py").write_text("", encoding="utf-8")
    stage(again)
    assert files_below(again) == files_below(space)


def names(requirements) -> dict[str, Requirement]:
    return {req.name.lower().replace("_", "-"): req for req in map(Requirement, requirements)}


def test_the_recipe_stages_the_app_its_package_and_the_space_readme(space):
    assert {path.name for path in space.iterdir()} == {
        "app.py",
        "requirements.txt",
        "pyproject.toml",
        "README.md",
        "density_metric",
    }
    assert (space / "README.md").read_text(encoding="utf-8").startswith("---\ntitle: ")
    assert (space / "density_metric" / "default" / "model.safetensors").is_file()
    assert not list(space.rglob("__pycache__"))


def test_requirements_name_every_dependency_and_no_local_path():
    # requirements.txt held `.[app]`, which the Space's builder cannot install: it installs the file before it
    # copies the Space's files. It now names the dependencies themselves, so they must follow pyproject.toml's.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = [line.strip() for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    assert not [line for line in lines if line.startswith((".", "/", "-"))], lines
    required = names(project["dependencies"] + project["optional-dependencies"]["app"])
    listed = names(lines)
    assert listed.keys() == required.keys()
    assert {name: str(req.specifier) for name, req in listed.items() if name != "torch"} == {
        name: str(req.specifier) for name, req in required.items() if name != "torch"
    }
    assert required["torch"].specifier.contains(next(iter(listed["torch"].specifier)).version)


def test_the_space_readme_pins_a_gradio_that_the_app_extra_allows():
    readme = (ROOT / "hub_card" / "space_README.md").read_text(encoding="utf-8")
    sdk_version = re.search(r"^sdk_version: (\S+)$", readme, re.MULTILINE).group(1)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert names(project["optional-dependencies"]["app"])["gradio"].specifier.contains(sdk_version)


def test_the_staged_package_reads_its_version_from_the_staged_pyproject(space):
    from importlib.metadata import version

    from density_metric.version import source_tree_version

    assert source_tree_version(space) == version("density-metric")
    assert source_tree_version(space / "density_metric") == "0+unknown"


def test_the_staged_app_starts_and_answers_without_this_checkout(space, tmp_path):
    from gradio_client import Client

    port = free_port()
    env = {
        **os.environ,
        "GRADIO_SERVER_PORT": str(port),
        "GRADIO_TEMP_DIR": str(tmp_path / "gradio"),
        "HF_HUB_OFFLINE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "TMPDIR": str(tmp_path),  # the app's own temporary folder, which a terminated process leaves behind
    }
    env.pop("PYTHONPATH", None)
    env.pop("DENSITY_CHECKPOINT", None)
    env.pop("DENSITY_CHECKPOINTS", None)
    log = tmp_path / "app.log"
    with log.open("w") as out:
        app = subprocess.Popen(
            [sys.executable, "-c", WITHOUT_THE_CHECKOUT], cwd=space, env=env, stdout=out, stderr=subprocess.STDOUT
        )
        try:
            url = f"http://127.0.0.1:{port}/"
            deadline = time.monotonic() + 180
            while app.poll() is None and time.monotonic() < deadline:
                try:
                    if httpx.get(url, timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.5)
            assert app.poll() is None, log.read_text()
            about = Client(url, verbose=False).predict("bundled", api_name="/about")
        finally:
            app.terminate()
            app.wait(timeout=30)
    assert f"density_metric from {space}" in log.read_text()
    assert "### Checkpoint\n`density_metric=" in about
