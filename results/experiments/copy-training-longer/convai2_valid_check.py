"""Does pushing copies of the context out cost replies that restate the speaker's persona? A check on
ConvAI2 *validation* dialogues (no human ratings; ../shared/data/convai2), for each checkpoint given:
gold against a random reply from another dialogue and against an echo of the partner's last turn
(density AUC), and the Spearman of the gold's score with its word overlap with the persona lines and
with the last turn. 1,500 pairs drawn with seed 0.

    python results/experiments/copy-training-longer/convai2_valid_check.py NAME=CHECKPOINT ...
"""

import sys

import numpy as np
from density_train.data.corpora import load_convai2, response_pairs
from density_train.evaluation.validation import last_turn_overlap

from benchmarks.checkpoints import named_checkpoints
from density_metric.correlation import auc, spearman
from density_metric.scoring import DensityScorer

PERSONA = "your persona:"


def persona_overlap(contexts, responses):
    """Share of each reply's words in its persona lines (without their "your persona:" prefix): the
    last-turn overlap of validation, read against the persona lines joined as one turn."""
    personas = [
        [" ".join(line[len(PERSONA) :] for line in context if line.startswith(PERSONA))] for context in contexts
    ]
    return last_turn_overlap(personas, responses)


contexts, responses = response_pairs(load_convai2("../shared/data/convai2/valid_self_original_no_cands.txt"))
rng = np.random.default_rng(0)
rows = rng.choice(len(responses), size=1500, replace=False)
shift = rng.integers(50, len(responses) - 50, size=len(rows))  # another dialogue's reply (pairs are ~7 a dialogue)
ctx = [contexts[i] for i in rows]
gold = [responses[i] for i in rows]
random = [responses[(i + s) % len(responses)] for i, s in zip(rows, shift)]
echo = [c[-1] for c in ctx]
persona, last = persona_overlap(ctx, gold), last_turn_overlap(ctx, gold)
print(f"n = {len(rows)}; golds with any persona word: {np.mean(persona > 0):.3f}")
print(
    "| checkpoint | AUC gold vs random | AUC gold vs echo | Spearman(score, persona overlap) | Spearman(score, last-turn overlap) |"
)
print("| --- | --- | --- | --- | --- |")
for name, path in named_checkpoints(sys.argv[1:]).items():
    scorer = DensityScorer(path, device="cpu", dtype="float32")
    g, r, e = (scorer.score(ctx, texts).scores for texts in (gold, random, echo))
    print(
        f"| {name} | {auc(g, r):.3f} | {auc(g, e):.3f} | {100 * spearman(g, persona):.1f} | {100 * spearman(g, last):.1f} |",
        flush=True,
    )
