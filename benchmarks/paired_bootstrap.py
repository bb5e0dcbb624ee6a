"""Paired bootstrap of correlations with human ratings: how far apart are two scoring rows on the same rows?

Every row (a checkpoint's scores, or another scoring of the same checkpoint) is resampled with the same row
indices (``density_metric.comparison.significance.bootstrap_indices``), so any difference of two rows'
correlations has a bootstrap distribution, and ``density_metric.comparison.significance.percentile_ci`` its 95 %
interval.
"""

from __future__ import annotations

import numpy as np

from density_metric.correlation import pearson, spearman


def resampled_correlations(values: np.ndarray, human: np.ndarray, draws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pearson r and Spearman rho (x100) of ``values`` with ``human`` on every resample of the rows.

    Args:
        values, human: (n,) scores and ratings of the same rows.
        draws: (k, n) row indices, one resample per row of the array.

    Returns:
        Two (k,) arrays: Pearson and Spearman (Pearson of the ranks, ties averaged, within each resample).
    """
    values, human = np.asarray(values, dtype=np.float64), np.asarray(human, dtype=np.float64)
    if values.shape != human.shape or values.ndim != 1:
        raise ValueError(f"values {values.shape} and human {human.shape} must be two (n,) arrays")
    metric, people = values[draws], human[draws]
    return 100 * pearson(metric, people), 100 * spearman(metric, people)
