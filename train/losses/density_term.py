"""A training term on the density itself: copies of the context must lie farther out than golds.

DEnsity scores a reply by its Mahalanobis distance to the Gaussian of human replies' features.
Trained for response selection alone, copies of the context (an echo of the last turn, the last
turn glued to the gold, an earlier turn) land near the centre of that Gaussian and win: the release of
that time had a density AUC against an echo of 0.21, against the previous turn + gold 0.18
(``results/experiments/copy-margin/NOTES.md``, step 0). Training the classifier f(c, r) on them does
not move the density (arm a there), and a margin measured against a fixed or stale Gaussian does not
survive the refit: the model moves golds and copies together and the refitted Gaussian follows the
golds (measured before that pilot, whose ``PLAN.md`` names the measurement; its arm b, this term against
the bank's Gaussian, moved the density after the refit: echo 0.21 -> 0.67).

What does work is a margin against the Gaussian of the *current* golds. :class:`GoldBank` keeps
the last ``size`` gold features (a FIFO queue, as MoCo keeps its keys), and gives at every step
their mean and the inverse of a shrunk, well-conditioned covariance

    Sigma = (1 - a) S + a (tr(S) / d) I,

the same shrinkage form as the scorer's ``ledoit-wolf`` estimator, at a fixed ``a``. The term

    relu(margin + d(gold) - d(copy))

(:func:`margin_loss`) then pushes each copy at least ``margin`` farther out than its own gold
(Deep SAD, Ruff et al. 2020; Outlier Exposure, Hendrycks et al. 2019). What is measured, though,
is how a copy ranks among *all* golds (the AUC of d(copy) > d(gold)), and a copy 3 beyond a gold
near the centre is still inside the golds' spread. So the term can instead set each copy against
every gold in the bank (``against="bank"``, :func:`bank_margin_loss`):

    mean over bank golds k of relu(margin + d(gold_k) - d(copy)),

a hinge form of 1 - AUC (the bank's distances are constants: only the copy moves), whose pull on
a copy falls with the share of golds it already lies beyond. :func:`anchor_loss` keeps
the golds near where the starting model put them (QuantiDCE, Ye et al. 2021, guards a trained
metric the same way), measured in the bank's metric so that its scale matches the margin's;
with ``anchor_negatives`` it holds the cross-entropy's negatives too, so that replies that are
neither golds nor copies (as most rated system replies are) keep their place.

The bank's statistics are constants for the gradient; distances carry it through the features.
Compute the features of this term without dropout: dropout alone moves a feature by about a
gold's radius.
"""

from __future__ import annotations

import torch

DEFAULT_BANK_SIZE = 2048
DEFAULT_SHRINKAGE = 0.1
DEFAULT_MARGIN = 3.0
DEFAULT_COPIES = 4
DEFAULT_COPY_MIX = "echo:1,speaker:1,earlier:1,span:1"
MARGIN_AGAINST = ("gold", "bank")  # each copy against its own gold, or against every gold of the bank


class GoldBank:
    """The last ``size`` gold features, (size, d) float32, oldest overwritten first.

    Args:
        size: how many features the bank holds when full.
        dim: feature width d.
        shrinkage: ``a`` in Sigma = (1 - a) S + a (tr(S) / d) I, in (0, 1].
    """

    def __init__(self, size: int, dim: int, shrinkage: float = DEFAULT_SHRINKAGE, device=None):
        if size < 2:
            raise ValueError(f"bank size must be at least 2, got {size}")
        if not 0 < shrinkage <= 1:
            raise ValueError(f"shrinkage must be in (0, 1], got {shrinkage}")
        self.size, self.shrinkage = size, shrinkage
        self.features = torch.zeros(size, dim, dtype=torch.float32, device=device)
        self.count = 0  # features pushed so far; the bank holds min(count, size)
        self._gaussian: tuple[torch.Tensor, torch.Tensor] | None = None
        self._distances: torch.Tensor | None = None

    def __len__(self) -> int:
        return min(self.count, self.size)

    def push(self, features: torch.Tensor) -> None:
        """Add (m, d) features (detached), overwriting the oldest."""
        features = features.detach().to(self.features)
        if features.ndim != 2 or features.shape[1] != self.features.shape[1]:
            raise ValueError(f"features must be (m, {self.features.shape[1]}), got {tuple(features.shape)}")
        pushed = len(features)
        features = features[-self.size :]  # more than fits: the newest win
        first = self.count + pushed - len(features)
        slots = (first + torch.arange(len(features), device=self.features.device)) % self.size
        self.features[slots] = features
        self.count += pushed
        self._gaussian = self._distances = None

    def gaussian(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(mean (d,), precision (d, d)) float32 of the bank's features, computed in float64.

        The covariance is the maximum-likelihood one (divided by n), shrunk towards its scaled
        identity; cached until the next :meth:`push`.
        """
        if len(self) < 2:
            raise ValueError(f"the gold bank holds {len(self)} feature(s); it needs at least 2")
        if self._gaussian is None:
            held = self.features[: len(self)].double()
            mean = held.mean(dim=0)
            centred = held - mean
            covariance = centred.T @ centred / len(held)
            dim = covariance.shape[0]
            shrunk = (1 - self.shrinkage) * covariance
            shrunk.diagonal().add_(self.shrinkage * covariance.trace() / dim)
            precision = torch.linalg.inv(shrunk)
            precision = (precision + precision.T) / 2
            self._gaussian = mean.float(), precision.float()
        return self._gaussian

    def distances(self) -> torch.Tensor:
        """(len(self),) float32: each held feature's Mahalanobis distance under :meth:`gaussian`; cached."""
        if self._distances is None:
            mean, precision = self.gaussian()
            self._distances = mahalanobis_distance(self.features[: len(self)], mean, precision)
        return self._distances

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The bank as tensors (for a safetensors file): features and how many were pushed."""
        return {"features": self.features.cpu().contiguous(), "count": torch.tensor(self.count, dtype=torch.int64)}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        """Restore :meth:`state_dict`; a ValueError names a misshapen entry."""
        features = state.get("features")
        if features is None or tuple(features.shape) != tuple(self.features.shape) or "count" not in state:
            raise ValueError(
                f"gold bank state must hold features of shape {tuple(self.features.shape)} and a count, "
                f"got {sorted(state)} with features {None if features is None else tuple(features.shape)}"
            )
        self.features.copy_(features)
        self.count = int(state["count"])
        self._gaussian = self._distances = None


def mahalanobis_distance(features: torch.Tensor, mean: torch.Tensor, precision: torch.Tensor) -> torch.Tensor:
    """sqrt((h - mu) P (h - mu)^T) of every row of ``features`` (n, d), differentiable: (n,) float32.

    The square is clamped at a tiny positive value before the root, whose gradient is infinite at 0.
    """
    centred = features.float() - mean
    squared = ((centred @ precision) * centred).sum(dim=-1)
    return squared.clamp_min(1e-12).sqrt()


def _mean_over_copies(values: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Mean of (B, M) per-copy values over the copies ``mask`` keeps (all without one); 0 when none."""
    if mask is None:
        return values.mean()
    return (values * mask).sum() / mask.sum().clamp(min=1)


def margin_loss(
    gold: torch.Tensor, copies: torch.Tensor, margin: float = DEFAULT_MARGIN, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """mean over contexts b and copies j of relu(margin + gold[b] - copies[b, j]).

    gold: (B,) distances of the gold replies; copies: (B, M) distances of each context's copies;
    mask: (B, M) bool, the copies that count (the others, e.g. random fallbacks, are left out);
    0 when none counts.
    """
    if copies.ndim != 2 or copies.shape[0] != gold.shape[0]:
        raise ValueError(f"copies must be (B, M) with B = {gold.shape[0]}, got {tuple(copies.shape)}")
    return _mean_over_copies(torch.relu(margin + gold[:, None] - copies), mask)


def bank_margin_loss(
    bank: torch.Tensor, copies: torch.Tensor, margin: float = DEFAULT_MARGIN, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """mean over copies c (those ``mask`` keeps) and bank golds k of relu(margin + bank[k] - copies[c]).

    bank: (K,) distances of the bank's golds (no gradient flows to them); copies: (B, M) distances of
    each context's copies; mask: (B, M) bool as in :func:`margin_loss`; 0 when no copy counts.
    """
    if copies.ndim != 2:
        raise ValueError(f"copies must be (B, M), got {tuple(copies.shape)}")
    # relu(m + b_k - c) averaged over k, for every copy c: (B, M)
    per_copy = torch.relu(margin + bank.detach()[None, None, :] - copies[..., None]).mean(dim=-1)
    return _mean_over_copies(per_copy, mask)


def anchor_loss(features: torch.Tensor, anchor: torch.Tensor, precision: torch.Tensor) -> torch.Tensor:
    """Mean Mahalanobis length, under ``precision``, of each feature's drift from its anchor.

    features: (A, d) the held features now (the golds; with ``--anchor-negatives`` also the
    cross-entropy's negatives); anchor: (A, d) the starting model's (no gradient).
    """
    return mahalanobis_distance(features - anchor.detach().to(features.dtype), 0.0, precision).mean()


BANK_FILE = "gold_bank.safetensors"  # the bank in a run's state/, for an exact resume
COPY_SEED_OFFSET = 1_000_003  # the copies' seed stream, apart from the negatives'


class DensityTerm:
    """weight * margin + anchor_weight * drift of one micro-batch, against the bank's current Gaussian.

    Args:
        bank: the gold bank; :meth:`push` adds a step's golds after the step (as MoCo enqueues keys).
        margin: how much farther out than a gold each copy must lie.
        weight, anchor_weight: the two parts' weights in the loss.
        anchor: the frozen starting model (features of the golds to stay near), or None.
        against: ``"gold"``, each copy against its own gold (:func:`margin_loss`), or ``"bank"``,
            against every gold of the bank (:func:`bank_margin_loss`).
    """

    def __init__(
        self,
        bank: GoldBank,
        margin: float,
        weight: float,
        anchor_weight: float = 0.0,
        anchor=None,
        against: str = "gold",
    ):
        if against not in MARGIN_AGAINST:
            raise ValueError(f"against must be one of {MARGIN_AGAINST}, got {against!r}")
        self.bank, self.margin, self.weight, self.anchor_weight, self.anchor, self.against = (
            bank,
            margin,
            weight,
            anchor_weight,
            anchor,
            against,
        )

    def loss(
        self,
        gold: torch.Tensor,
        copies: torch.Tensor,
        anchor_features: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        anchored: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(weighted total, margin part, drift part). gold: (B, d); copies: (B, M, d); mask: (B, M) bool,
        the copies the margin counts (:func:`margin_loss`); anchored: (A, d) the features the anchor
        holds (default ``gold``), and anchor_features: (A, d) where the starting model put them."""
        mean, precision = self.bank.gaussian()
        batch, copies_per_context, dim = copies.shape
        copy_distance = mahalanobis_distance(copies.reshape(-1, dim), mean, precision).view(batch, copies_per_context)
        if self.against == "bank":
            margin = bank_margin_loss(self.bank.distances(), copy_distance, self.margin, mask)
        else:
            margin = margin_loss(mahalanobis_distance(gold, mean, precision), copy_distance, self.margin, mask)
        drift = torch.zeros((), device=gold.device)
        if anchor_features is not None and self.anchor_weight:
            drift = anchor_loss(gold if anchored is None else anchored, anchor_features, precision)
        return self.weight * margin + self.anchor_weight * drift, margin, drift

    def push(self, gold: torch.Tensor) -> None:
        self.bank.push(gold)


def draw_copies(data, rows, config, epoch: int) -> dict[int, list[tuple[str, str]]]:
    """``config.density_copies`` negatives of ``config.copy_mix`` per row, as (kind, text), from a seed
    stream of their own (negatives_seed + COPY_SEED_OFFSET + epoch). A kind that cannot make a copy
    (``earlier`` in a one-turn context) falls back to a ``random`` utterance, as in
    :func:`density_train.negatives.mix.draw_labelled_negatives`; the margin leaves those out. A copy may equal one of
    the row's negatives (an echo of a one-turn context is the same whatever the seed).
    data: a ``density_train.data.examples.SelectionData``; config: a ``density_train.config.recipe.TrainConfig``."""
    from ..negatives.mix import NegativeMix, draw_labelled_negatives

    drawn = draw_labelled_negatives(
        data,
        rows,
        config.density_copies,
        NegativeMix.parse(config.copy_mix),
        seed=config.negatives_seed + COPY_SEED_OFFSET + epoch,
        epoch=0,
    )
    return dict(zip((int(row) for row in rows), drawn))


def start_density_term(config, start: str, gold_features, n_train: int, dim: int, device, bank_file) -> DensityTerm:
    """The density term of a run: the bank read from ``bank_file`` (a resumed run) or filled with
    ``gold_features(rows)`` ((n, d) numpy, the starting model's features of those training golds) for
    ``bank_size`` seeded rows, and the frozen starting model ``start`` as the anchor.

    config: a ``density_train.config.recipe.TrainConfig`` with ``density_weight`` > 0."""
    import numpy as np
    from safetensors.torch import load_file

    from ..model import DensityModel

    anchor = None
    if config.anchor_weight:  # TrainConfig makes sure there is an init_from
        anchor, _ = DensityModel.load(start, config.pair_format, config.feature_only_last_layer)
        anchor = anchor.to(device).eval().requires_grad_(False)
    bank = GoldBank(config.bank_size, dim, config.bank_shrinkage, device=device)
    if bank_file is not None and bank_file.is_file():
        bank.load_state_dict(load_file(str(bank_file)))
    else:
        rows = np.random.default_rng([config.seed, 1]).choice(
            n_train, size=min(config.bank_size, n_train), replace=False
        )
        bank.push(torch.from_numpy(gold_features(np.sort(rows))).float())
    return DensityTerm(
        bank, config.density_margin, config.density_weight, config.anchor_weight, anchor, config.margin_against
    )
