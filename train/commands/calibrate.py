"""``python -m train calibrate``: a checkpoint plus a few hundred human ratings make a rating head.

Reads JSONL rows ``{"context": [...] or "...", "response": "...", "score": number}``, computes
each pair's distance, ``f(c, r)`` (if the checkpoint has its head) and features with the
checkpoint, fits :class:`density_metric.rating.RatingHead`, and writes a copy of the checkpoint
with ``density_rating.safetensors`` and a "Rating head" section in its card.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from density_metric.checkpoint.format import (
    CARD_FILE,
    CHECKPOINT_FILES,
    RATING_FILE,
    copy_checkpoint,
    load_checkpoint,
    save_rating,
)
from density_metric.errors import fail
from density_metric.io.inputs import as_context, as_response
from density_metric.rating import RatingHead

from ..arguments import OUT_RULE, check_out, local_checkpoint_folder


def read_ratings(path: str | Path) -> tuple[list[list[str]], list[str], np.ndarray]:
    """(contexts, responses, scores) of a ratings JSONL file; a ValueError names the line and the field."""
    contexts, responses, scores = [], [], []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{where}: not valid JSON ({err})") from None
        if not isinstance(row, dict):
            raise ValueError(f"{where}: must be a JSON object with context, response and score")
        for field in ("context", "response", "score"):
            if field not in row:
                raise ValueError(f"{where}: field {field!r} is missing")
        score = row["score"]
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            raise ValueError(f"{where}: field 'score' must be a finite number, got {score!r}")
        try:
            contexts.append(as_context(row["context"], number, "context"))
            responses.append(as_response(row["response"], number, "response"))
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
        scores.append(float(score))
    return contexts, responses, np.array(scores, dtype=np.float64)


def card_section(head: RatingHead, ratings_file: str) -> str:
    return (
        "\n## Rating head\n\n"
        f"This checkpoint also predicts a human rating per reply (`ratings` in `compute`, `density_rating` in the CLI): "
        f"a ridge regression on {head.inputs.replace(',', ', ')} (the DEnsity distance, f(c,r), the g(c,r) features; "
        "chosen by cross-validation), "
        f"fitted on {head.n_ratings} human ratings from `{Path(ratings_file).name}` (scale {head.rating_min:g} to "
        f"{head.rating_max:g}) with `python -m train calibrate`. Penalty alpha {head.alpha:.4g}, chosen by "
        f"{head.folds}-fold cross-validation (mean squared error {head.cv_mse:.4g}). The ratings' scale and the "
        "judges who made them define what it predicts.\n"
    )


def calibrate(
    checkpoint: str, ratings_file: str | Path, out: str | Path, *, folds: int = 5, seed: int = 0, **scorer_options
) -> dict:
    """Fit the rating head and write the calibrated checkpoint to ``out``; returns a report."""
    from density_metric import DensityScorer

    check_out(Path(out), inputs=[local_checkpoint_folder(checkpoint)], writes=CHECKPOINT_FILES)
    contexts, responses, scores = read_ratings(ratings_file)
    if len(scores) < max(folds, 2):
        raise ValueError(f"{ratings_file}: {len(scores)} ratings, fewer than the {folds} cross-validation folds")
    scorer = DensityScorer(checkpoint, **scorer_options)
    features = scorer.features(contexts, responses)
    distances = scorer.distances_of(features, responses)
    classifier = scorer.classifier_from_features(features) if scorer.checkpoint.head is not None else None
    head = RatingHead.fit(distances, classifier, features, scores, folds=folds, seed=seed)
    out = Path(out)
    source = scorer.checkpoint.path
    check_out(out, inputs=[source])  # a Hub checkpoint's folder is known only now
    copy_checkpoint(source, out, RATING_FILE)
    save_rating(out / RATING_FILE, head, scorer.stats.dim, scorer.checkpoint.head is not None)
    card = (source / CARD_FILE).read_text(encoding="utf-8") if (source / CARD_FILE).is_file() else ""
    (out / CARD_FILE).write_text(card + card_section(head, str(ratings_file)), encoding="utf-8")
    load_checkpoint(out)  # what was written loads
    fitted = head.predict(distances, classifier, features)
    return {
        "checkpoint": scorer.checkpoint.source,
        "revision": scorer.checkpoint.revision,
        "ratings": len(scores),
        "inputs": head.inputs,
        "alpha": head.alpha,
        "cv_mse": head.cv_mse,
        "train_mse": float(np.mean((fitted - scores) ** 2)),
        "out": str(out),
    }


def add_calibrate_arguments(parser) -> None:
    """The flags of ``python -m train calibrate``."""
    parser.add_argument("checkpoint", help="'default', a checkpoint directory, or a Hub repo id")
    parser.add_argument(
        "--ratings", required=True, type=Path, help="JSONL rows with context, response and score (a human rating)"
    )
    parser.add_argument("--out", required=True, type=Path, help=f"folder for the calibrated checkpoint: {OUT_RULE}")
    parser.add_argument("--folds", type=int, default=5, help="cross-validation folds that choose the penalty")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--revision", default=None, help="Hub revision of the checkpoint")
    parser.add_argument("--device", default="auto")


def calibrate_command(args) -> None:
    """``python -m train calibrate``."""
    try:
        report = calibrate(
            args.checkpoint,
            args.ratings,
            args.out,
            folds=args.folds,
            seed=args.seed,
            revision=args.revision,
            device=args.device,
            dtype="float32",
        )
    except ValueError as err:
        fail(str(err))
    print(json.dumps(report, indent=2))
