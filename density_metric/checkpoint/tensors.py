"""The safetensors files of a checkpoint: the Gaussian statistics (with the optional repetition term),
the response-selection head and the rating head. For each, the one check that both saving and loading run,
so nothing can write a file that loading rejects, and its reading and writing.

What each file holds is listed in :mod:`density_metric.checkpoint.format`, which writes and reads a whole
checkpoint with these functions.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import numpy as np
from safetensors import safe_open
from safetensors.numpy import save

from ..errors import CheckpointError
from ..gaussian import ESTIMATORS, GaussianStats
from ..rating import INPUT_SETS, RatingHead
from ..repetition import RepetitionTerm
from .fingerprint import FINGERPRINT_KEY, FINGERPRINT_PATTERN

FORMAT_VERSION = 1
GAUSSIAN_FILE = "density_gaussian.safetensors"
HEAD_FILE = "density_head.safetensors"
RATING_FILE = "density_rating.safetensors"
RATING_METADATA = ("inputs", "n_ratings", "alpha", "folds", "cv_mse", "rating_min", "rating_max")
REPETITION_KEYS = ("repetition_weight", "repetition_mean", "repetition_sd", "repetition_cap")
# Tolerances on the precision matrix, relative to its largest entry / |eigenvalue|. A fitted one
# (a symmetrised pinv) is exactly symmetric and its eigenvalues of the null space are rounding
# noise about 1e-17 of the largest (bundled and untuned checkpoints): 1e-8 leaves a wide margin.
PRECISION_SYMMETRY_RTOL = 1e-8
PRECISION_EIGENVALUE_RTOL = 1e-8


def write_tensors(tensors: dict[str, np.ndarray], path: str, metadata: dict[str, str]) -> None:
    """``safetensors.numpy.save_file``, with the metadata keys in sorted order. safetensors writes them in the order
    of a Rust hash map, which changes from process to process, so the same statistics would make other bytes, and so
    another revision (a local checkpoint's content hash) at every fit."""
    data = save(tensors, metadata=metadata)
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + length])
    header["__metadata__"] = dict(sorted(header["__metadata__"].items()))
    # The same keys and values, compact as safetensors writes them: the same length, padded with spaces as before.
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    if len(text) > length:  # never expected; the file as safetensors wrote it is still a valid one
        text = data[8 : 8 + length]
    Path(path).write_bytes(data[:8] + text.ljust(length, b" ") + data[8 + length :])


# --------------------------------------------------------------------------- the Gaussian


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


def check_stats(stats: GaussianStats, path: os.PathLike | str) -> None:
    """The checks :func:`save_gaussian` makes before it writes ``path``, without writing anything."""
    check_gaussian(*_gaussian_tensors(stats), path)


def save_gaussian(path: os.PathLike | str, stats: GaussianStats, fingerprint: str | None = None) -> None:
    """Write the Gaussian statistics to a safetensors file, after the checks loading makes.

    ``fingerprint``: :func:`density_metric.checkpoint.fingerprint.encoder_fingerprint` of the encoder and pair format
    the statistics were fitted with (:func:`density_metric.checkpoint.format.save_checkpoint` computes it).
    """
    tensors, metadata = _gaussian_tensors(stats, fingerprint)
    check_gaussian(tensors, metadata, path)
    write_tensors(tensors, str(path), metadata=metadata)


# --------------------------------------------------------------------------- the response-selection head


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


def save_head(path: os.PathLike | str, weight: np.ndarray, bias: float) -> None:
    """Write the response-selection head f(c, r) = weight . g + bias; weight: (d,)."""
    tensors = {"weight": np.asarray(weight, dtype=np.float32), "bias": np.asarray(bias, dtype=np.float32)}
    check_head(tensors, tensors["weight"].shape[0] if tensors["weight"].ndim == 1 else -1, path)
    write_tensors(tensors, str(path), metadata={"format_version": str(FORMAT_VERSION)})


def load_head(path: Path, dim: int) -> tuple[np.ndarray, float] | None:
    """Read and validate the optional ``density_head.safetensors``: (weight (d,) f64, bias), or None."""
    if not path.is_file():
        return None
    tensors, _ = read_safetensors(path)
    return check_head(tensors, dim, path)


# --------------------------------------------------------------------------- the rating head


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
    write_tensors(tensors, str(path), metadata=metadata)


def load_rating(path: Path, dim: int, has_head: bool) -> RatingHead | None:
    """Read and validate the optional ``density_rating.safetensors``, or None."""
    if not path.is_file():
        return None
    return check_rating(*read_safetensors(path), dim, has_head, path)


# --------------------------------------------------------------------------- reading


def read_safetensors(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """(tensors, metadata) of a safetensors file, or a CheckpointError naming it."""
    if not path.is_file():
        raise CheckpointError(path, "file is missing")
    try:
        with safe_open(str(path), framework="numpy") as handle:
            return {key: handle.get_tensor(key) for key in handle.keys()}, handle.metadata() or {}
    except Exception as err:  # safetensors raises several error types for a bad file
        raise CheckpointError(path, f"is not a readable safetensors file ({err})") from None
