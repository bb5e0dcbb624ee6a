"""Training losses against naive loops written from the equations."""

import math

import pytest
import torch

from density_train.losses.response_selection import recall_and_mrr, selection_loss, supervised_contrastive_loss


def naive_scl(features, group_size, tau, average, keep=None):
    """Eq. 4 of the paper, one anchor and one positive at a time, over the rows in ``keep``."""
    z = [f / f.norm() for f in features.double()]
    kept = [i for i in range(len(z)) if keep is None or keep[i]]
    gold = [i % group_size == 0 for i in range(len(z))]
    total, anchors = 0.0, 0
    for i in kept:
        positives = [p for p in kept if p != i and gold[i] and gold[p]]
        if not positives:
            continue
        denominator = sum(math.exp(float(z[i] @ z[a]) / tau) for a in kept if a != i)
        total += -sum(math.log(math.exp(float(z[i] @ z[p]) / tau) / denominator) for p in positives) / len(positives)
        anchors += 1
    return total / anchors if average == "gold-anchors" else total / len(kept)


@pytest.mark.parametrize("average", ["gold-anchors", "all-rows"])
@pytest.mark.parametrize("groups, group_size", [(4, 3), (2, 5), (3, 1)])
def test_vectorised_contrastive_loss_equals_naive_double_loop(average, groups, group_size):
    torch.manual_seed(groups * 10 + group_size)
    features = torch.randn(groups * group_size, 8)
    expected = naive_scl(features, group_size, tau=0.1, average=average)
    assert supervised_contrastive_loss(features, group_size, tau=0.1, average=average).item() == pytest.approx(
        expected, rel=1e-5
    )


@pytest.mark.parametrize("average", ["gold-anchors", "all-rows"])
def test_excluded_rows_leave_the_contrastive_term(average):
    torch.manual_seed(7)
    groups, group_size = 3, 5
    features = torch.randn(groups * group_size, 8)
    keep = torch.tensor([i % group_size not in (2, 4) for i in range(groups * group_size)])
    expected = naive_scl(features, group_size, 0.1, average, keep=keep.tolist())
    got = supervised_contrastive_loss(features, group_size, 0.1, average, keep=keep).item()
    assert got == pytest.approx(expected, rel=1e-5)
    # The excluded rows have no effect: moving them changes nothing, moving a kept one does.
    moved = features.clone()
    moved[2] = features[0]  # an excluded negative becomes a copy of its gold
    assert supervised_contrastive_loss(moved, group_size, 0.1, average, keep=keep).item() == pytest.approx(
        got, rel=1e-6
    )
    moved[1] = features[0]  # a kept one does too
    assert supervised_contrastive_loss(moved, group_size, 0.1, average, keep=keep).item() != pytest.approx(
        got, rel=1e-3
    )


def test_contrastive_loss_rejects_a_keep_mask_of_the_wrong_length():
    with pytest.raises(ValueError, match="keep has shape"):
        supervised_contrastive_loss(torch.randn(6, 4), 3, keep=torch.ones(5, dtype=torch.bool))


def test_contrastive_loss_is_zero_without_a_second_gold_row():
    features = torch.randn(4, 8, requires_grad=True)
    loss = supervised_contrastive_loss(features, group_size=4)
    assert loss.item() == 0.0
    loss.backward()  # still part of the graph


def test_selection_loss_is_cross_entropy_with_gold_first():
    logits = torch.tensor([2.0, 0.0, 1.0, -1.0, 3.0, 0.5])
    expected = (
        -math.log(math.exp(2) / (math.exp(2) + 1 + math.exp(1)))
        - math.log(math.exp(-1) / (math.exp(-1) + math.exp(3) + math.exp(0.5)))
    ) / 2
    assert selection_loss(logits, group_size=3).item() == pytest.approx(expected, rel=1e-6)


def test_recall_at_1_and_mrr_by_hand():
    logits = torch.tensor([2.0, 0.0, 1.0, -1.0, 3.0, 0.5, 0.0, 1.0, 2.0])
    recall, mrr = recall_and_mrr(logits, group_size=3)
    assert recall.tolist() == [1.0, 0.0, 0.0]
    assert mrr.tolist() == pytest.approx([1.0, 1 / 3, 1 / 3])
