"""Make ``evaluate.load("density")`` work offline, from any directory.

Offline, ``evaluate.load(name)`` falls back to its module cache at
``$HF_MODULES_CACHE/evaluate_modules/metrics/evaluate-metric--<name>/<hash>/<name>.py``
(``HF_MODULES_CACHE`` defaults to ``$HF_HOME/modules``). This copies our module script and
metric card there, in the layout evaluate itself writes. Running it again is harmless and
makes the installed copy the newest one.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

MODULE_DIR = Path(__file__).resolve().parent / "density"
MODULE_NAME = "density"


def install_evaluate_module() -> Path:
    """Install the metric script into evaluate's module cache; returns the script's path there."""
    from evaluate.loading import files_to_hash, init_dynamic_modules

    script = MODULE_DIR / f"{MODULE_NAME}.py"
    modules_root = Path(init_dynamic_modules())
    metric_dir = modules_root / "metrics" / f"evaluate-metric--{MODULE_NAME}"
    target = metric_dir / files_to_hash([str(script)])
    target.mkdir(parents=True, exist_ok=True)
    for folder in (modules_root / "metrics", metric_dir, target):
        (folder / "__init__.py").touch()
    installed = target / script.name
    shutil.copyfile(script, installed)
    shutil.copyfile(MODULE_DIR / "README.md", target / "README.md")
    (target / f"{MODULE_NAME}.json").write_text(
        json.dumps({"original file path": str(script), "local file path": str(installed)}), encoding="utf-8"
    )
    # evaluate picks the most recently modified copy among cached versions.
    os.utime(installed)
    return installed
