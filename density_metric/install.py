"""Make ``evaluate.load("density")`` work offline, from any directory.

Offline, ``evaluate.load(name)`` falls back to its module cache at
``$HF_MODULES_CACHE/evaluate_modules/metrics/evaluate-metric--<name>/<hash>/<name>.py``
(``HF_MODULES_CACHE`` defaults to ``$HF_HOME/modules``). This copies our module script and
metric card there, in the layout evaluate itself writes. Running it again is harmless and
makes the installed copy the newest one.

That cache is shared by every environment with the same ``HF_HOME``, so one checkout's install
changes what ``evaluate.load("density")`` runs in all the others. The installed copy therefore
carries a stamp (:data:`STAMP_LINE`, written in place of the package's ``INSTALLED_FROM = None``):
the version of the package it came from, that package's folder and the sha256 of its script. When
the module is loaded, it hands the stamp to :func:`check_installed_module`, which logs one warning
per process if the importing ``density_metric`` is another version or has another script.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from .version import __version__

logger = logging.getLogger(__name__)

MODULE_DIR = Path(__file__).resolve().parent / "density"
MODULE_NAME = "density"
# The line of the package's module script that the installed copy replaces with its stamp.
STAMP_LINE = "INSTALLED_FROM = None\n"
_warned: set[str] = set()  # installed copies already warned about in this process


def script_sha256(script: Path = MODULE_DIR / f"{MODULE_NAME}.py") -> str:
    """sha256 of the package's module script as it is in the package (without a stamp)."""
    return hashlib.sha256(script.read_bytes()).hexdigest()


def stamp() -> dict[str, str]:
    """What the installed copy records of this package: ``version``, ``package`` (its folder), ``sha256``."""
    return {"version": __version__, "package": str(MODULE_DIR.parent), "sha256": script_sha256()}


def install_evaluate_module() -> Path:
    """Install the metric script, stamped (module docstring), into evaluate's module cache; returns its path there."""
    from evaluate.loading import files_to_hash, init_dynamic_modules

    script = MODULE_DIR / f"{MODULE_NAME}.py"
    source = script.read_text(encoding="utf-8")
    if source.count(STAMP_LINE) != 1:  # the package's own script is broken: nothing to stamp
        raise RuntimeError(f"{script} must hold the line {STAMP_LINE.strip()!r} once")
    modules_root = Path(init_dynamic_modules())
    metric_dir = modules_root / "metrics" / f"evaluate-metric--{MODULE_NAME}"
    target = metric_dir / files_to_hash([str(script)])
    target.mkdir(parents=True, exist_ok=True)
    for folder in (modules_root / "metrics", metric_dir, target):
        (folder / "__init__.py").touch()
    installed = target / script.name
    installed.write_text(source.replace(STAMP_LINE, f"INSTALLED_FROM = {stamp()!r}\n"), encoding="utf-8")
    shutil.copyfile(MODULE_DIR / "README.md", target / "README.md")
    (target / f"{MODULE_NAME}.json").write_text(
        json.dumps({"original file path": str(script), "local file path": str(installed)}), encoding="utf-8"
    )
    # evaluate picks the most recently modified copy among cached versions.
    os.utime(installed)
    return installed


def check_installed_module(installed_from: dict[str, Any], path: str | os.PathLike) -> bool:
    """Whether the installed module at ``path``, stamped ``installed_from`` (:func:`stamp`), came from the
    importing package; if not, one warning per process and path that names both and the command to run."""
    ours = stamp()
    if installed_from.get("version") == ours["version"] and installed_from.get("sha256") == ours["sha256"]:
        return True
    if str(path) not in _warned:
        _warned.add(str(path))
        logger.warning(
            "the evaluate module %s was installed from density_metric %s (%s), but this environment imports "
            "density_metric %s (%s)%s; run `python -m density_metric install` here to install this one's",
            path,
            installed_from.get("version"),
            installed_from.get("package"),
            ours["version"],
            ours["package"],
            ", whose module script differs" if installed_from.get("version") == ours["version"] else "",
        )
    return False
