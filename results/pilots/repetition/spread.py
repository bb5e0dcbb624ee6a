"""How far out the look's statistics put a repeat, beside the spread of the control's distances (after look.py, whose
features it reads from runs/repetition-look/features.npz). Usage, from the repository root:
PYTHONPATH=. python results/pilots/repetition/spread.py runs/bundles/bf039cc"""

import sys

import numpy as np
from transformers import AutoTokenizer

from density_metric.gaussian import GaussianAccumulator, GaussianStats
from results.pilots.repetition.look import FIT, OUT, SEED, VALID, repetition_statistics
from train.corpora import load_dailydialog, response_pairs_with_dialogues
from train.data import SelectionData
from train.negatives import validation_candidates

tokenizer = AutoTokenizer.from_pretrained(sys.argv[1])
train = SelectionData.from_pairs(
    *response_pairs_with_dialogues(load_dailydialog("../shared/data/dailydialog", "train"))
)
valid = SelectionData.from_pairs(
    *response_pairs_with_dialogues(load_dailydialog("../shared/data/dailydialog", "validation"))
).select(range(VALID))
rows = np.sort(np.random.default_rng(SEED).choice(len(train), size=FIT, replace=False))


def stats(texts):
    return repetition_statistics(tokenizer(list(texts), add_special_tokens=False)["input_ids"])


fit = stats([train.responses[i] for i in rows])
repeat = stats(validation_candidates(valid, ["repeat"], seed=SEED)["repeat"])
gold = stats(valid.responses)
for j, name in enumerate(("repeated piece", "rep-2")):
    mean, sd = fit[:, j].mean(), fit[:, j].std()
    print(
        f"{name}: fit golds mean {mean:.4f} sd {sd:.4f}; median z of validation repeats "
        f"{np.median((repeat[:, j] - mean) / sd):.1f}, of validation golds {np.median((gold[:, j] - mean) / sd):.2f}"
    )
features = np.load(OUT / "features.npz", allow_pickle=False)
accumulator = GaussianAccumulator(features["fit"].shape[1])
accumulator.update(features["fit"].astype(np.float64))
gaussian = GaussianStats.fit(accumulator)
d_gold, d_repeat = gaussian.distances(features["gold"]), gaussian.distances(features["repeat"])
print(
    f"control d: validation golds median {np.median(d_gold):.1f} (quartiles {np.quantile(d_gold, 0.25):.1f}, "
    f"{np.quantile(d_gold, 0.75):.1f}); validation repeats median {np.median(d_repeat):.1f}"
)
