"""Load a script of results/ (not a package: its folders' names have dashes) as a module, for its tests."""

import importlib.util
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "results"


def load_results_script(relative: str):
    """The module of ``results/<relative>`` (e.g. ``experiments/contrastive-ablation/table.py``), executed once."""
    path = RESULTS / relative
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
