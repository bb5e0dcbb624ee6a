"""The few-shot rating head: a ridge regression from a checkpoint's outputs to human ratings.

Zhao et al. (ACL 2020) showed that a response-selection encoder plus a few hundred human ratings
makes a precise evaluator. This head is the light version of that idea, for users: the
encoder stays as it is, and a linear model learns the ratings from, for each pair,

- the DEnsity distance ``||g(c,r) - mu||_{Sigma^+}``;
- the classifier score ``f(c, r)``, when the checkpoint has its head;
- the features ``g(c, r)`` themselves.

Inputs are standardised (mean and scale of the training rows). Which inputs to use (the
distance alone, with ``f(c, r)``, or with the features too) and the ridge penalty are chosen
together by k-fold cross-validation (a log grid of penalties); with a few hundred ratings the
384 features often over-fit, and the cross-validated error says when. The head is then refitted
on all rows. Written with
numpy (the library needs no scikit-learn); the tests check it against scikit-learn's ``Ridge``.
``python -m train calibrate`` fits one and writes it into a copy of the checkpoint
(``density_rating.safetensors``, see :mod:`density_metric.checkpoint.format`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ALPHAS = np.logspace(-2, 5, 22)


INPUT_SETS = ("distance", "distance,classifier", "distance,features", "distance,classifier,features")


def rating_inputs(distances: np.ndarray, classifier: np.ndarray | None, features: np.ndarray | None) -> np.ndarray:
    """The (n, k) inputs: distance, then f(c, r) if given, then the d features if given; float64."""
    columns = [np.asarray(distances, dtype=np.float64)[:, None]]
    if classifier is not None:
        columns.append(np.asarray(classifier, dtype=np.float64)[:, None])
    if features is not None:
        columns.append(np.asarray(features, dtype=np.float64))
    return np.concatenate(columns, axis=1)


def ridge(x: np.ndarray, y: np.ndarray, alpha: float) -> tuple[np.ndarray, float]:
    """(weight (k,), intercept) minimising ||y - x w - b||^2 + alpha ||w||^2, intercept unpenalised."""
    x_mean, y_mean = x.mean(0), y.mean()
    xc = x - x_mean
    weight = np.linalg.solve(xc.T @ xc + alpha * np.eye(x.shape[1]), xc.T @ (y - y_mean))
    return weight, float(y_mean - x_mean @ weight)


def standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean, scale) of the columns; a constant column gets scale 1."""
    scale = x.std(0)
    return x.mean(0), np.where(scale > 0, scale, 1.0)


def cross_validated_mse(x: np.ndarray, y: np.ndarray, alphas, folds: int, seed: int) -> np.ndarray:
    """Mean squared error of each alpha over ``folds`` seeded folds, standardising inside each fold."""
    parts = np.array_split(np.random.default_rng(seed).permutation(len(y)), folds)
    errors = np.zeros(len(alphas))
    for held in parts:
        kept = np.setdiff1d(np.arange(len(y)), held)
        mean, scale = standardise(x[kept])
        train, test = (x[kept] - mean) / scale, (x[held] - mean) / scale
        for i, alpha in enumerate(alphas):
            weight, intercept = ridge(train, y[kept], alpha)
            errors[i] += np.sum((test @ weight + intercept - y[held]) ** 2)
    return errors / len(y)


@dataclass
class RatingHead:
    """``rating = ((inputs - mean) / scale) . weight + intercept`` on the ratings' own scale."""

    mean: np.ndarray
    scale: np.ndarray
    weight: np.ndarray
    intercept: float
    uses_classifier: bool
    uses_features: bool
    n_ratings: int
    alpha: float
    folds: int
    cv_mse: float
    rating_min: float
    rating_max: float

    @classmethod
    def fit(
        cls,
        distances: np.ndarray,
        classifier: np.ndarray | None,
        features: np.ndarray,
        ratings: np.ndarray,
        *,
        folds: int = 5,
        seed: int = 0,
        alphas=ALPHAS,
    ) -> RatingHead:
        """Choose the inputs and alpha by ``folds``-fold cross-validation (the same folds for every
        choice; on a tie the fewer inputs), then fit on every row."""
        ratings = np.asarray(ratings, dtype=np.float64)
        if folds < 2 or len(ratings) < folds:
            raise ValueError(f"need at least {max(folds, 2)} ratings and 2 folds, got {len(ratings)} and {folds}")
        choices = []
        for use_classifier in (False, True) if classifier is not None else (False,):
            for use_features in (False, True):
                x = rating_inputs(distances, classifier if use_classifier else None, features if use_features else None)
                errors = cross_validated_mse(x, ratings, alphas, folds, seed)
                best = int(np.argmin(errors))
                choices.append((float(errors[best]), use_classifier + use_features, use_classifier, use_features, best))
        cv_mse, _, use_classifier, use_features, best = min(choices)
        x = rating_inputs(distances, classifier if use_classifier else None, features if use_features else None)
        mean, scale = standardise(x)
        weight, intercept = ridge((x - mean) / scale, ratings, float(alphas[best]))
        return cls(
            mean=mean,
            scale=scale,
            weight=weight,
            intercept=intercept,
            uses_classifier=use_classifier,
            uses_features=use_features,
            n_ratings=len(ratings),
            alpha=float(alphas[best]),
            folds=folds,
            cv_mse=cv_mse,
            rating_min=float(ratings.min()),
            rating_max=float(ratings.max()),
        )

    @property
    def inputs(self) -> str:
        """One of :data:`INPUT_SETS`."""
        return ",".join(["distance"] + ["classifier"] * self.uses_classifier + ["features"] * self.uses_features)

    def predict(self, distances: np.ndarray, classifier: np.ndarray | None, features: np.ndarray) -> np.ndarray:
        """(n,) predicted ratings (float64)."""
        x = rating_inputs(
            distances, classifier if self.uses_classifier else None, features if self.uses_features else None
        )
        return ((x - self.mean) / self.scale) @ self.weight + self.intercept
