"""A run's ``state/`` folder, written after every save and read back by a resumed run.

``state/`` holds the model, tokenizer and head (:meth:`density_train.model.DensityModel.save`),
``optimizer.safetensors`` with ``optimizer.json`` (its param groups), ``rng.safetensors``
(one torch RNG state per process) and ``trainer_state.json``: the position (``progress``), the
scheduler and the recipe the run started with (``config``, see :func:`density_train.config.recipe.check_resumable`).
Nothing is pickled: tensors are safetensors, the rest JSON.

A save never leaves a half-written ``state/``: :func:`replace_state` writes ``state.new/`` and then
swaps it in with two renames, and :func:`recover_state` undoes a stop that fell between them.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file, save_file

from density_metric.checkpoint.fingerprint import files_hash

STATE_FILE = "trainer_state.json"
_DAMAGED = "the saved state is damaged (a stop while it was written?); delete state/ to start the run over"


def replace_state(out_dir: Path, write: Callable[[Path], None]) -> None:
    """Save a run's state: ``write(folder)`` fills ``out_dir/state.new``, which then replaces
    ``out_dir/state``. A stop while ``write`` runs leaves the last whole ``state/``; a stop between the
    two renames leaves it as ``state.old/``, which :func:`recover_state` puts back."""
    new, current, old = out_dir / "state.new", out_dir / "state", out_dir / "state.old"
    shutil.rmtree(new, ignore_errors=True)
    new.mkdir(parents=True)
    write(new)
    shutil.rmtree(old, ignore_errors=True)
    if current.exists():
        current.rename(old)
    new.rename(current)
    shutil.rmtree(old, ignore_errors=True)


def recover_state(out_dir: Path) -> Path:
    """``out_dir/state``, put back from ``state.old/`` where a save stopped between its two renames;
    a half-written ``state.new/`` is left for the next save to clear."""
    current, old = out_dir / "state", out_dir / "state.old"
    if not current.exists() and old.is_dir():
        try:
            old.rename(current)
        except FileNotFoundError:  # another process of the run put it back first
            pass
    return current


def save_optimizer(path: Path, optimizer) -> None:
    state = optimizer.state_dict()
    tensors = {
        f"{index}.{key}": value.detach().cpu().contiguous() if torch.is_tensor(value) else torch.tensor(value)
        for index, entry in state["state"].items()
        for key, value in entry.items()
    }
    save_file(tensors, str(path / "optimizer.safetensors"))
    (path / "optimizer.json").write_text(json.dumps(state["param_groups"]))


def load_optimizer(path: Path, optimizer) -> None:
    tensors = load_file(str(path / "optimizer.safetensors"))
    state: dict = {}
    for name, value in tensors.items():
        index, key = name.split(".", 1)
        state.setdefault(int(index), {})[key] = value
    optimizer.load_state_dict({"state": state, "param_groups": json.loads((path / "optimizer.json").read_text())})


def write_trainer_state(path: Path, progress: dict, scheduler: dict, config: dict, data: dict) -> None:
    """``data``: :func:`data_summary` of the run's splits."""
    (path / STATE_FILE).write_text(
        json.dumps({"progress": progress, "scheduler": scheduler, "config": config, "data": data}, indent=2)
    )


def data_summary(train, valid, dev=None) -> dict:
    """The size and :meth:`density_train.data.examples.SelectionData.fingerprint` of a run's training and validation pairs,
    and of its ``--dev-judgments`` rows (0 and None without them)."""
    return {
        "train_pairs": len(train),
        "train_sha256": train.fingerprint(),
        "valid_pairs": len(valid),
        "valid_sha256": valid.fingerprint(),
        "dev_pairs": len(dev.responses) if dev is not None else 0,
        "dev_sha256": dev.fingerprint() if dev is not None else None,
    }


def check_same_data(saved: dict, now: dict, where: str) -> None:
    """Refuse to resume on other pairs than the run began with (states saved before the check was
    added have no ``data`` and pass; those saved before the dev rows were in it pass on them): a ValueError naming
    ``where`` and the split that differs. The dev rows are checked since they may select the best model."""
    if "data" not in saved:
        return
    before = saved["data"]
    data_flags = "the run's data flags again (--corpus, --data-dir, --train-file, --valid-file, --limit)"
    dev_flag = "the run's --dev-judgments again (none, where the run began without)"
    for split in ("train", "valid", "dev"):
        pairs, sha = f"{split}_pairs", f"{split}_sha256"
        if pairs not in before or (before[pairs], before[sha]) == (now[pairs], now[sha]):
            continue
        unit, again = ("rows", dev_flag) if split == "dev" else ("pairs", data_flags)
        was, found = (f"{data[pairs]:,} {unit}, sha256 {(data[sha] or 'none')[:12]}" for data in (before, now))
        raise ValueError(
            f"{where}: the run was started on other {split} data ({was}), so it cannot resume on these ({found}); "
            f"give {again}, or a new --out to start another run"
        )


def start_summary(start: str | Path) -> dict:
    """``{"start_sha256": ...}``: the content hash (:func:`files_hash`) of the ``*.safetensors`` files of the folder
    a run starts from (``--init-from``'s or ``--backbone``'s); None for a ``--backbone`` Hub id, which the loader
    fetches itself, and for a folder without safetensors weights."""
    weights = sorted(Path(start).glob("*.safetensors")) if Path(start).is_dir() else []
    return {"start_sha256": files_hash(weights) if weights else None}


def check_same_start(saved: dict, now: dict, where: str, flag: str, start: str | Path) -> None:
    """Refuse to resume from other start weights than the run began with (a checkpoint fitted again under the same
    path, as a chain's first stage is when it trains on): the density term's anchor and the card would read them. A
    ValueError naming ``where``; states saved before the check have no hash and pass."""
    before = saved.get("data", {}).get("start_sha256")
    if before is None or before == now["start_sha256"]:
        return
    raise ValueError(
        f"{where}: the run was started from other weights ({flag} {start}: {before} then, {now['start_sha256']} now), "
        f"so it cannot resume from these; give the start it began with, or a new --out to start another run"
    )


def read_trainer_state(path: Path) -> dict:
    """``trainer_state.json`` of the state folder ``path``, after checking that the folder's
    safetensors and JSON files are whole: a ValueError names a damaged file."""
    for tensors in sorted(path.glob("*.safetensors")):
        try:
            with safe_open(str(tensors), "pt"):
                pass
        except SafetensorError as err:
            raise ValueError(f"{tensors}: not a readable safetensors file ({err}); {_DAMAGED}") from None
    for name in ("optimizer.json", STATE_FILE):
        try:
            json.loads((path / name).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"{path / name}: missing; {_DAMAGED}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ValueError(f"{path / name}: not JSON ({err}); {_DAMAGED}") from None
    saved = json.loads((path / STATE_FILE).read_text(encoding="utf-8"))
    if not isinstance(saved, dict) or not {"progress", "scheduler", "config"} <= saved.keys():
        raise ValueError(f"{path / STATE_FILE}: needs progress, scheduler and config; {_DAMAGED}")
    return saved
