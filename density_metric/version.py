"""The installed version of density-metric, from its package metadata (pyproject.toml is the one source)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("density-metric")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"
