"""The named training recipes of the GPU-machine commands, in one table: ``python -m train train`` flags without the
data, the start, the output or the counts that a scale sets (benchmarks/device_train.py adds those).

Each recipe starts either from a backbone (``--backbone``) or from a DEnsity checkpoint (``--init-from``), and
selects its kept model by ``--select-on`` among its evaluations (one per epoch unless it says otherwise).
"""

from __future__ import annotations

import dataclasses

# The recipe of the bundled model's last rounds (results/experiments/anchor-and-overlap-rows/recipe.sh and
# grounded-corpora/run.sh): the density term against copies, anchored to the start, golds that reuse the last turn
# in every batch, on the published training split as every bundled model; bf16 autocast on CUDA. The counts (steps,
# validation and fit sizes) come from the flags below.
RELEASE_RECIPE = (
    "--corpus dailydialog --dailydialog-train official --epochs 1 --warmup-steps 30 --lr 2e-5 --batch-size 8 --resample-negatives --seed 43 "
    "--negatives-seed 43 --valid-negatives 15 --validation-kinds random,echo,speaker,repeat,earlier,span "
    "--evals-per-epoch 1 --negatives 4 --contrastive-weight 0 --no-dropout --density-weight 1 --density-margin 3 "
    "--bank-size 2048 --bank-shrinkage 0.1 --density-copies 4 --copy-mix echo:1,speaker:2 --anchor-weight 1 "
    "--overlap-rows 6 --weights-dtype float16"
).split()

# The paper's schedule (10 epochs of 16 contexts x (1 gold + 15 random negatives), the contrastive loss at tau 0.1
# and lambda 1, AdamW lr 5e-5, 1,000 warm-up steps, an evaluation per epoch, the best by validation Recall@1) in the
# first release's pair format and settings (results/releases/2026-11-25-first-release/release.sh and the ablation's
# results/experiments/contrastive-ablation/run.sh: shared-context layout, mean pooling, attention dropout 0, 64 reply
# tokens, the published DailyDialog split), with the negatives resampled every epoch.
PAPER_RECIPE = (
    "--corpus dailydialog --dailydialog-train official --layout shared-context --attention-dropout 0 --pooling mean "
    "--max-length 256 --max-response-length 64 --negatives 15 --negative-mix random:1 --resample-negatives "
    "--batch-size 16 --grad-accum 1 --lr 5e-5 --weight-decay 0 --max-grad-norm 1.0 --warmup-steps 1000 --tau 0.1 "
    "--contrastive-weight 1.0 --contrastive-average gold-anchors --seed 42 --negatives-seed 42 --epochs 10 "
    "--evals-per-epoch 1 --valid-negatives 15 --validation-kinds random --select-on recall_at_1 "
    "--weights-dtype float16"
).split()

# E3: the paper's schedule at 64 contexts a step, over the same 10 epochs (a quarter of the steps). The learning
# rate grows with the square root of the batch (the loop's --lr-scaling sqrt: 5e-5 x sqrt(64 / 16) = 1e-4, the rule
# for Adam of Malladi et al., NeurIPS 2022) and the warm-up keeps its contexts (1,000 steps of 16 = 250 of 64).
PAPER_64_RECIPE = [*PAPER_RECIPE, "--batch-size", "64", "--lr-scaling", "sqrt", "--warmup-steps", "250"]


@dataclasses.dataclass(frozen=True)
class Recipe:
    """A named recipe: its flags, where it starts (``backbone`` or ``checkpoint``) and what it is, in a line."""

    flags: tuple[str, ...]
    starts_from: str
    description: str
    # --max-steps-per-epoch at device scale (0: whole epochs)
    steps_per_epoch: int = 0

    def __post_init__(self):
        if self.starts_from not in ("backbone", "checkpoint"):
            raise ValueError(f"starts_from must be 'backbone' or 'checkpoint', got {self.starts_from!r}")


RECIPES = {
    "paper": Recipe(
        tuple(PAPER_RECIPE),
        "backbone",
        "E1: the paper's 10 epochs from the untuned MiniLM, the best epoch by validation Recall@1",
    ),
    "release": Recipe(
        tuple(RELEASE_RECIPE),
        "checkpoint",
        "E2: the release recipe's copy-margin stage (density term, last-turn overlap rows) from a checkpoint",
        # As many contexts as the bundled model's chain saw in that stage: 600 + 2,400 + 400 + 400 steps of 8
        # (CHANGELOG.md: the copy-margin release, the last-turn copies, the two soups' fine-tunes).
        steps_per_epoch=3800,
    ),
    "paper-64": Recipe(
        tuple(PAPER_64_RECIPE),
        "backbone",
        "E3: the paper's schedule at 64 contexts a step, lr 5e-5 scaled by the square root (1e-4), 250 warm-up steps",
    ),
}
