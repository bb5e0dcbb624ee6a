"""What the baseline metrics share: their weights on disk, frozen embeddings, and early stopping.

Weights are a folder with ``weights.safetensors`` (the trained tensors), ``config.json``
(the system, its dimensions, how it was trained) and ``README.md``, the card written from both.
Loading checks the first two and names the file and the problem; nothing is pickled.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file

WEIGHTS_FILE = "weights.safetensors"
CONFIG_FILE = "config.json"
CARD_FILE = "README.md"
ENCODER_NOTE = "all-MiniLM-L6-v2, frozen (the papers used BERT-base; it is the only encoder offline here)"

logger = logging.getLogger(__name__)


def save_weights(out: str | Path, state: dict[str, torch.Tensor], config: dict) -> None:
    """Write ``state`` (float32 unless already float16) and ``config`` to ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    stored = {k: (v if v.dtype == torch.float16 else v.float()).detach().contiguous() for k, v in state.items()}
    save_file(stored, str(out / WEIGHTS_FILE), metadata={"system": config["system"]})
    (out / CONFIG_FILE).write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    write_card(out)


def write_card(folder: str | Path) -> Path:
    """Write ``README.md`` in a weights folder from its ``config.json`` and ``weights.safetensors``:
    the paper (the first paragraph of the system's module docstring), the command that trained
    it, the sha256 of the weights, and every setting and validation result of the config
    (the per-epoch history stays in the config). Returns the card's path."""
    from . import module

    folder = Path(folder)
    config = json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8"))
    paper = " ".join(module(config["system"]).__doc__.split("\n\n")[0].split())
    digest = hashlib.sha256((folder / WEIGHTS_FILE).read_bytes()).hexdigest()
    shown = {k: v for k, v in config.items() if k not in ("system", "command", "seconds", "history")}
    lines = [
        f"# Baseline weights: {config['system']}",
        "",
        paper,
        "",
        f"- trained with `{config.get('command') or 'benchmarks.baselines.' + config['system'] + '.train()'}`"
        + (f" in {config['seconds'] / 60:.1f} minutes" if "seconds" in config else ""),
        f"- `{WEIGHTS_FILE}`: sha256 `{digest}`; `{CONFIG_FILE}`: the settings below and the training history",
        *(f"- {key}: {json.dumps(value) if not isinstance(value, str) else value}" for key, value in shown.items()),
        "",
    ]
    path = folder / CARD_FILE
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def load_weights(folder: str | Path, system: str) -> tuple[dict[str, torch.Tensor], dict]:
    """(tensors, config) of ``system``'s weights in ``folder``.

    Raises:
        ValueError: naming the file: missing, unreadable, another system's, or with NaN values.
    """
    folder = Path(folder)
    config_path, weights_path = folder / CONFIG_FILE, folder / WEIGHTS_FILE
    for path in (config_path, weights_path):
        if not path.is_file():
            raise ValueError(f"{path}: file is missing (python -m benchmarks.baselines train --system {system})")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{config_path}: not valid JSON ({err})") from None
    if not isinstance(config, dict) or config.get("system") != system:
        found = config.get("system") if isinstance(config, dict) else config
        raise ValueError(f"{config_path}: system is {found!r}, not {system!r}")
    try:
        state = load_file(str(weights_path))
    except Exception as err:  # safetensors raises its own error types for a damaged file
        raise ValueError(f"{weights_path}: unreadable safetensors file ({err})") from None
    bad = sorted(k for k, v in state.items() if not torch.isfinite(v.float()).all())
    if bad:
        raise ValueError(f"{weights_path}: NaN or infinite values in {bad}")
    return state, config


def load_state_checked(module: torch.nn.Module, state: dict[str, torch.Tensor], path: Path) -> None:
    """``module.load_state_dict(state)`` with a ValueError naming ``path`` and every misfit tensor."""
    expected = {k: tuple(v.shape) for k, v in module.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in state.items()}
    missing, extra = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
    wrong = sorted(k for k in set(expected) & set(got) if expected[k] != got[k])
    if missing or extra or wrong:
        raise ValueError(f"{path}: tensors do not fit the model (missing {missing}, unexpected {extra}, shape {wrong})")
    module.load_state_dict({k: v.float() for k, v in state.items()})


def embed_texts(
    texts: Sequence[str],
    encoder: str,
    pooling: str,
    normalize: bool,
    max_tokens: int | None = None,
    cache_dir: str | Path | None = None,
) -> dict[str, np.ndarray]:
    """Frozen embedding of every distinct text (``density_train.negatives.retrieval.embed``: length-sorted batches,
    truncated to ``max_tokens``, default the encoder's 256), as a text -> (d,) float32 map.

    With ``cache_dir``, the vectors are kept in ``embeddings-<key>.safetensors`` there, the key a
    sha256 of the settings and of the distinct texts (``density_train.negatives.retrieval.pool_sha256``), and read
    back instead of recomputed when the same texts are embedded the same way again. The encoder
    is keyed by its name, so use the cache with a fixed encoder (``"minilm"``), not a folder that
    changes."""
    from density_train.negatives.retrieval import MAX_TOKENS, embed, pool_sha256

    unique = list(dict.fromkeys(texts))
    max_tokens = max_tokens or MAX_TOKENS
    path = None
    if cache_dir is not None:
        settings = json.dumps([encoder, pooling, bool(normalize), max_tokens])
        key = hashlib.sha256(f"{settings}|{pool_sha256(unique)}".encode()).hexdigest()
        path = Path(cache_dir) / f"embeddings-{key[:16]}.safetensors"
        if path.is_file():
            by_text = dict(zip(sorted(unique), _read_cached(path, key, len(unique))))
            return {text: by_text[text] for text in unique}
    vectors = embed(
        unique, encoder, pooling=pooling, normalize=normalize, max_tokens=max_tokens, progress=len(unique) > 2000
    )
    if path is not None:
        order = sorted(range(len(unique)), key=unique.__getitem__)  # rows in sorted-text order
        path.parent.mkdir(parents=True, exist_ok=True)
        save_file({"vectors": torch.from_numpy(vectors[order])}, str(path), metadata={"key": key})
        logger.info("embeddings of %d texts cached in %s", len(unique), path)
    return dict(zip(unique, vectors))


def _read_cached(path: Path, key: str, rows: int) -> np.ndarray:
    """The cached (rows, d) vectors in ``path``, checked against ``key`` and the row count."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as handle:
            found, vectors = (handle.metadata() or {}).get("key"), handle.get_tensor("vectors")
    except Exception as err:  # safetensors raises its own error types for a damaged file
        raise ValueError(f"{path}: unreadable embedding cache ({err}); delete it to recompute") from None
    if found != key or vectors.ndim != 2 or len(vectors) != rows or not torch.isfinite(vectors).all():
        raise ValueError(f"{path}: embedding cache does not match these texts and settings; delete it to recompute")
    logger.info("embeddings of %d texts read from %s", rows, path)
    return vectors.numpy()


class VectorTable:
    """Frozen vectors of distinct texts as one (m + 1, d) float32 tensor, row 0 all zeros (padding).

    Training works on row numbers: a batch is ``table[rows]``, and two texts are the same text
    exactly when their rows are equal (which is how a negative equal to its gold reply is found).
    """

    def __init__(self, vectors: dict[str, np.ndarray]):
        self.row = {text: i + 1 for i, text in enumerate(vectors)}
        dim = len(next(iter(vectors.values())))
        self.table = torch.from_numpy(
            np.concatenate([np.zeros((1, dim), np.float32), np.stack(list(vectors.values()))])
        )

    def rows(self, texts: Sequence[str]) -> torch.Tensor:
        """(n,) int64 table rows of ``texts``."""
        return torch.tensor([self.row[t] for t in texts], dtype=torch.long)


def early_stopping(
    epoch_step: Callable[[int], float],
    evaluate: Callable[[], float],
    module: torch.nn.Module,
    epochs: int,
    patience: int,
    desc: str,
) -> dict:
    """Run ``epoch_step(epoch)`` (returns the mean training loss) up to ``epochs`` times; after each,
    ``evaluate()`` (validation loss, lower is better). Keeps the best epoch's weights in ``module``
    and stops after ``patience`` epochs without improvement. Returns the history."""
    from tqdm.auto import tqdm

    best = {"epoch": 0, "valid_loss": evaluate(), "state": {k: v.clone() for k, v in module.state_dict().items()}}
    history = []
    bar = tqdm(range(1, epochs + 1), desc=desc, unit="epoch")
    for epoch in bar:
        module.train()
        train_loss = epoch_step(epoch)
        module.eval()
        valid_loss = evaluate()
        history.append({"epoch": epoch, "train_loss": train_loss, "valid_loss": valid_loss})
        bar.set_postfix(valid_loss=f"{valid_loss:.4f}")
        if valid_loss < best["valid_loss"]:
            best = {
                "epoch": epoch,
                "valid_loss": valid_loss,
                "state": {k: v.clone() for k, v in module.state_dict().items()},
            }
        elif epoch - best["epoch"] >= patience:
            break
    module.load_state_dict(best["state"])
    module.eval()
    return {"best_epoch": best["epoch"], "best_valid_loss": best["valid_loss"], "history": history}
