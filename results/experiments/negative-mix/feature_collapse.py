"""Feature collapse check of the mix pilot: mean pairwise cosine of g(c,r) over 40 validation pairs, per arm.

PYTHONPATH=. python results/experiments/negative-mix/feature_collapse.py
"""

import numpy as np
import torch
from density_train.data.corpora import load_dailydialog, response_pairs

from density_metric.encoding.features import Encoder
from density_metric.encoding.pair_format import PairFormat

torch.set_num_threads(1)
c, r = response_pairs(load_dailydialog("../shared/data/dailydialog", "validation"))
pf = PairFormat(max_length=128, max_response_length=32, layout="shared-context")
for arm in ("random", "mix"):
    e = Encoder.load(f"runs/pilot-mix/{arm}/best", pf, device="cpu", dtype="float32")
    f = e.features(e.encode(c[:40], r[:40], group=False)).astype(np.float64)
    z = f / np.linalg.norm(f, axis=1, keepdims=True)
    cos = z @ z.T
    print(
        arm,
        "mean pairwise cos",
        round(float(cos[np.triu_indices(40, 1)].mean()), 4),
        "feature std across pairs",
        round(float(f.std(0).mean()), 5),
        "norm",
        round(float(np.linalg.norm(f, axis=1).mean()), 3),
    )
