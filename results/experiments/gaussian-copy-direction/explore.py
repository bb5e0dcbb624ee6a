"""The exploration in NOTES.md, on the features that explore_features.py cached:

PYTHONPATH=. python results/experiments/gaussian-copy-direction/explore.py
"""

import numpy as np
from density_train.commands.train import load_dev_judgments
from density_train.evaluation.validation import last_turn_overlap
from grid import fisher_direction as fisher

from density_metric.correlation import auc, pearson, spearman
from density_metric.gaussian import mahalanobis

F = dict(np.load("runs/copy-direction/features.npz"))
dev = load_dev_judgments("../shared/data")
overlap = last_turn_overlap(dev.contexts, dev.responses)
KINDS = ["random", "echo", "speaker", "repeat", "earlier", "span"]


for m in ["release", "bundled"]:
    mean, precision = F[f"{m}/mean"], F[f"{m}/precision"]
    golds, valid_golds = F[f"{m}/train/gold"].astype(float), F[f"{m}/valid/gold"].astype(float)
    pooled = fisher(golds, np.concatenate([F[f"{m}/train/{k}"] for k in ["echo", "speaker", "earlier"]]).astype(float))
    per_kind = [fisher(golds, F[f"{m}/train/{k}"].astype(float)) for k in ["echo", "speaker", "earlier"]]
    for variant, directions in [("pooled", [pooled]), ("per kind", per_kind)]:
        for beta in [0, 10, 30, 100, 300, 1000]:
            tightened = precision + beta * sum(np.outer(u, u) for u in directions)
            gold = -mahalanobis(valid_golds, mean, tightened)
            aucs = {k: auc(gold, -mahalanobis(F[f"{m}/valid/{k}"], mean, tightened)) for k in KINDS}
            scores = -mahalanobis(F[f"{m}/dev"], mean, tightened)
            print(
                m, variant, beta, " ".join(f"{k}={a:.3f}" for k, a in aucs.items()),
                f"mean3={np.mean([aucs[k] for k in ('echo', 'speaker', 'repeat')]):.3f}",
                f"dev={100 * pearson(scores, dev.human):.2f}/{100 * spearman(scores, dev.human):.2f}",
                f"overlap={100 * spearman(scores, overlap):.1f}",
            )  # fmt: skip
    z = {k: (F[f"{m}/valid/{k}"] - mean) @ pooled for k in ["gold", *KINDS]}
    print(m, "pooled u: mean z", {k: round(float(v.mean()), 2) for k, v in z.items()})
    print(
        m,
        "pooled u, one-sided AUC",
        {k: round(auc(valid_golds @ pooled, F[f"{m}/valid/{k}"] @ pooled), 3) for k in KINDS},
    )
    print(m, "pooled u, |z| AUC", {k: round(auc(-abs(z["gold"]), -abs(z[k])), 3) for k in KINDS})
    for kind in ["repeat", "echo", "span"]:
        u = fisher(golds, F[f"{m}/train/{kind}"].astype(float))
        print(m, kind, "own direction, one-sided AUC", round(auc(valid_golds @ u, F[f"{m}/valid/{kind}"] @ u), 3))
