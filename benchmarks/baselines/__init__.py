"""Other learned dialogue metrics, trained here, for the meta-evaluation (``benchmarks.human_correlation``).

- ``bert-ruber``: BERT-RUBER (Ghazarian et al., 2019), :mod:`benchmarks.baselines.bert_ruber`;
- ``maude``: MaUde (Sinha et al., 2020), :mod:`benchmarks.baselines.maude`;
- ``zhao``: the semi-supervised evaluator of Zhao et al. (2020), :mod:`benchmarks.baselines.zhao`,
  whose first stage is a DEnsity checkpoint and whose second learns from human ratings (supervised).

Each module has ``SYSTEM``, ``train(out, ...)`` and ``load(weights_dir)``, which returns column
providers: ``columns(contexts, responses, references=None) -> {column name: scores}`` (higher is
better), ``columns.supervised`` and ``columns.reports(set_name, protocol)`` (False on the rows a
supervised system learned from). Train them with ``python -m benchmarks.baselines train``.
All three use all-MiniLM-L6-v2 where the papers used BERT-base or RoBERTa.
"""

from __future__ import annotations

import importlib
import logging
from pathlib import Path

SYSTEMS = {"bert-ruber": "bert_ruber", "maude": "maude", "zhao": "zhao"}
WEIGHTS_ROOT = Path(__file__).resolve().parent / "weights"

logger = logging.getLogger(__name__)


def module(system: str):
    if system not in SYSTEMS:
        raise ValueError(f"system must be one of {sorted(SYSTEMS)}, got {system!r}")
    return importlib.import_module(f"{__name__}.{SYSTEMS[system]}")


def load_columns(system: str, weights_dir: str | Path | None = None):
    """The trained ``system`` from ``weights_dir`` (default: ``weights/<system>`` beside this file)."""
    return module(system).load(Path(weights_dir) if weights_dir else WEIGHTS_ROOT / system)


def available_columns(weights_root: str | Path = WEIGHTS_ROOT, systems=tuple(SYSTEMS)) -> list:
    """Every system in ``systems`` whose weights are in ``weights_root``; the others are skipped
    with a message that names the missing folder and the command that trains it."""
    found = []
    for system in systems:
        folder = Path(weights_root) / system
        if not folder.is_dir():
            logger.warning(
                "baseline %s skipped: no weights in %s (train them: python -m benchmarks.baselines train "
                "--system %s --out %s)",
                system,
                folder,
                system,
                folder,
            )
            continue
        found.append(load_columns(system, folder))
    return found
