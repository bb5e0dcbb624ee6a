"""The two training losses (paper, section 3.1 and eq. 4).

Batches are laid out in groups of ``group_size = 1 + N`` rows: the gold response of a
context first, then its N negatives.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

# How the contrastive term is averaged: over the gold anchors (the paper) or every row (the authors' code).
CONTRASTIVE_AVERAGES = ("gold-anchors", "all-rows")


def selection_loss(logits: torch.Tensor, group_size: int) -> torch.Tensor:
    """Cross-entropy over each group's 1 + N candidate scores f(c, r), the gold at index 0.

    logits: (B * group_size,).
    """
    groups = logits.float().view(-1, group_size)
    return F.cross_entropy(groups, torch.zeros(len(groups), dtype=torch.long, device=logits.device))


def supervised_contrastive_loss(
    features: torch.Tensor,
    group_size: int,
    tau: float = 0.1,
    average: str = "gold-anchors",
    keep: torch.Tensor | None = None,
) -> torch.Tensor:
    """Supervised contrastive loss on the L2-normalised [CLS] features of the whole batch (eq. 4).

    All gold pairs share one class; each negative is a class of its own, so only gold rows
    have positives. For anchor i with positives P(i) (the other gold rows):

        l_i = -1/|P(i)| sum_{p in P(i)} log( exp(z_i.z_p / tau) / sum_{a != i} exp(z_i.z_a / tau) )

    ``average="gold-anchors"`` (the paper) averages l_i over the gold anchors; ``"all-rows"`` divides the same sum
    by every row of the batch, as the authors' code does (an effective weight of about
    lambda / (1 + N)).

    ``keep`` (B * group_size,) bool leaves the rows where it is False out of the term altogether:
    they are neither anchors nor in any denominator (and "every row" counts only kept rows). Used
    for negatives that are near-copies of their gold (:data:`density_train.negatives.mix.GOLD_KINDS`); they
    stay in the cross-entropy.

    features: (B * group_size, d). Returns a scalar; 0 when no anchor has a positive (B = 1).
    """
    if average not in CONTRASTIVE_AVERAGES:
        raise ValueError(f"average must be one of {CONTRASTIVE_AVERAGES}, got {average!r}")
    z = F.normalize(features.float(), dim=-1)
    gold = torch.arange(z.shape[0], device=z.device) % group_size == 0
    if keep is not None:
        if keep.shape != gold.shape:
            raise ValueError(f"keep has shape {tuple(keep.shape)}, expected ({z.shape[0]},)")
        z, gold = z[keep], gold[keep]
    rows = z.shape[0]
    self_mask = torch.eye(rows, dtype=torch.bool, device=z.device)
    similarity = (z @ z.T / tau).masked_fill(self_mask, float("-inf"))
    log_prob = similarity - torch.logsumexp(similarity, dim=1, keepdim=True)
    positives = gold[:, None] & gold[None, :] & ~self_mask
    count = positives.sum(dim=1)
    per_anchor = -log_prob.masked_fill(~positives, 0.0).sum(dim=1) / count.clamp(min=1)
    anchors = count > 0
    if not anchors.any():
        return features.sum() * 0.0
    if average == "gold-anchors":
        return per_anchor[anchors].mean()
    return per_anchor[anchors].sum() / rows


def recall_and_mrr(logits: torch.Tensor, group_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per group: 1.0 if the gold (index 0) ranks first, and 1 / its rank. logits: (B * group_size,)."""
    groups = logits.float().view(-1, group_size)
    rank = 1 + (groups[:, 1:] > groups[:, :1]).sum(dim=1)
    return (rank == 1).float(), 1.0 / rank.float()
