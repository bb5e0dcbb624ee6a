"""The version of density-metric, from its package metadata (pyproject.toml is the one source)."""

import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

# The folder above the package: the checkout, or a Space's folder.
SOURCE_TREE = Path(__file__).resolve().parent.parent


def source_tree_version(root: Path = SOURCE_TREE) -> str:
    """The version in ``root/pyproject.toml``, for a source tree that was never installed (a Space runs
    density_metric/ from its own folder, beside pyproject.toml); ``0+unknown`` without one."""
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return "0+unknown"
    match = re.search(r'^\[project\][^\[]*?^version = "([^"]+)"', text, re.MULTILINE | re.DOTALL)
    return match.group(1) if match else "0+unknown"


try:
    __version__ = version("density-metric")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = source_tree_version()
