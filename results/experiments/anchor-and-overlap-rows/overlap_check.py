"""Which DailyDialog-Zhao `dev` rows (n = 160) the fine-tunes from the bundled release move, and how that relates
to the reply's word overlap with the last context turn (issue 31; validation rows only). Each model is scored with
its own checkpoint's Gaussian: the bundled release's and the last-turn chain's of all 76,053 training pairs, the
anchor pilot's arms' of 2,000 (their runs' --fit-pairs), so their rows are rougher.
Usage, from the repository root: PYTHONPATH=. python results/experiments/anchor-and-overlap-rows/overlap_check.py"""

import numpy as np
from density_train.commands.train import load_dev_judgments
from density_train.evaluation.validation import last_turn_overlap
from scipy.stats import rankdata, spearmanr

from density_metric import DensityScorer

dev = load_dev_judgments("../shared/data")
o = last_turn_overlap(dev.contexts, dev.responses)
h = dev.human


def partial(x, y, z):  # partial Spearman of x, y given z (ranks, linear residuals)
    rx, ry, rz = (rankdata(v) for v in (x, y, z))

    def res(a):
        return a - np.polyval(np.polyfit(rz, a, 1), rz)

    return np.corrcoef(res(rx), res(ry))[0, 1]


scores = {}
for name, path in [
    ("bundled", "runs/bundles/3b29ef3"),  # the last-turn-copies release: bash results/checkout_bundle.sh 3b29ef3 ...
    ("chain", "runs/last-turn-chain/checkpoint"),
    ("anchor-n", "runs/pilot-anchor/n/checkpoint"),
    ("anchor-c", "runs/pilot-anchor/c/checkpoint"),
    ("anchor-o", "runs/pilot-anchor/o/checkpoint"),
]:
    s = DensityScorer(path, device="cpu", dtype="float32").score(dev.contexts, dev.responses)
    s = np.asarray(s.scores, dtype=np.float64)
    scores[name] = s
    print(
        f"{name:9s} human {100 * spearmanr(s, h)[0]:6.2f}  overlap {100 * spearmanr(s, o)[0]:6.2f}  human|overlap {100 * partial(s, h, o):6.2f}"
    )
print(
    f"people: overlap {100 * spearmanr(h, o)[0]:.2f}; rows with overlap > 0: {(o > 0).sum()}, >= 0.5: {(o >= 0.5).sum()}"
)
for name in ("chain", "anchor-n", "anchor-c", "anchor-o"):
    d = rankdata(scores[name]) - rankdata(scores["bundled"])
    print(
        f"{name}: rank change vs bundled: Spearman with overlap {100 * spearmanr(d, o)[0]:.1f}, with human {100 * spearmanr(d, h)[0]:.1f}"
    )
    for lo, hi in ((0, 1e-9), (1e-9, 0.34), (0.34, 1.01)):
        m = (o >= lo) & (o < hi)
        print(
            f"   overlap in [{lo:.2f},{hi:.2f}): n={m.sum():3d} Spearman with human bundled {100 * spearmanr(scores['bundled'][m], h[m])[0]:6.2f} {name} {100 * spearmanr(scores[name][m], h[m])[0]:6.2f}"
        )
d = rankdata(scores["chain"]) - rankdata(scores["bundled"])
order = np.argsort(d)
print("\nUP under the chain (rank change, human, overlap, len, response | last turn)")
for i in order[::-1][:10]:
    print(
        f"{d[i]:+5.0f} h={h[i]:.2f} o={o[i]:.2f} n={len(dev.responses[i].split()):2d} {dev.responses[i][:70]!r} | {dev.contexts[i][-1][:50]!r}"
    )
print("DOWN")
for i in order[:10]:
    print(
        f"{d[i]:+5.0f} h={h[i]:.2f} o={o[i]:.2f} n={len(dev.responses[i].split()):2d} {dev.responses[i][:70]!r} | {dev.contexts[i][-1][:50]!r}"
    )
L = np.array([len(r.split()) for r in dev.responses])
print(
    "rank change vs length",
    100 * spearmanr(d, L)[0],
    "human vs length",
    100 * spearmanr(h, L)[0],
    "bundled vs length",
    100 * spearmanr(scores["bundled"], L)[0],
    "chain vs length",
    100 * spearmanr(scores["chain"], L)[0],
)
