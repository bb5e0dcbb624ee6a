"""Which training replies fit any context, by the bundled model's own density (issue 69, groundwork for a next plan).

For a seeded sample of DailyDialog *training* pairs (c, r), the bundled model scores r after its own context and after
K contexts of other training dialogues. A reply that fits any context keeps its density after unrelated contexts:
its ``after_others`` (mean density there) is high and its ``gap`` (own minus others) is small. The rows are grouped
as the frequent-gold list (train/negatives/bland.py, the list arms B-D pushed out), other replies of 1-8 words, and
longer ones. Training data only: no validation, test or probe text is read.

Usage: PYTHONPATH=. python results/experiments/bland-replies/context_dependence.py [--pairs 2000] [--others 4]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from density_metric import DensityScorer
from density_metric.io.outputs import write_text
from density_train.data.corpora import load_dailydialog, response_pairs_with_dialogues
from density_train.data.examples import SelectionData
from density_train.data.text import normalise
from density_train.negatives.bland import MAX_WORDS, bland_replies, word_count

HERE = Path(__file__).parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="../shared/data/dailydialog")
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--others", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=HERE / "context_dependence.md")
    args = parser.parse_args()

    contexts, responses, dialogues, indices = response_pairs_with_dialogues(load_dailydialog(args.data_dir, "train"))
    data = SelectionData.from_pairs(contexts, responses, dialogues, indices)
    listed = {normalise(text) for text, _ in bland_replies(data)}
    rng = np.random.default_rng(args.seed)
    sample = rng.choice(len(responses), size=args.pairs, replace=False)
    dialogue_of = np.array([id(d) for d in dialogues])
    own_contexts, replies, other_contexts = [], [], []
    for row in sample:
        own_contexts.append(contexts[row])
        replies.append(responses[row])
        others = []
        while len(others) < args.others:  # contexts of other dialogues
            pick = int(rng.integers(len(responses)))
            if dialogue_of[pick] != dialogue_of[row]:
                others.append(contexts[pick])
        other_contexts.append(others)
    scorer = DensityScorer(progress=True)
    own = np.asarray(scorer.score(own_contexts, replies, warn=False).scores, dtype=np.float64)
    flat = [c for others in other_contexts for c in others]
    after = np.asarray(scorer.score(flat, [r for r in replies for _ in range(args.others)], warn=False).scores)
    after = after.reshape(args.pairs, args.others).mean(1)
    words = np.array([word_count(r) for r in replies])
    in_list = np.array([normalise(r) in listed for r in replies])
    groups = {
        f"frequent-gold list ({len(listed)} keys)": in_list,
        f"other replies of 1-{MAX_WORDS} words": ~in_list & (words <= MAX_WORDS),
        f"replies of more than {MAX_WORDS} words": ~in_list & (words > MAX_WORDS),
    }
    lines = [
        "# Which training replies fit any context (bundled model)",
        "",
        f"`PYTHONPATH=. python results/experiments/bland-replies/context_dependence.py --pairs {args.pairs} "
        f"--others {args.others} --seed {args.seed}`: {args.pairs} DailyDialog training pairs (seeded sample),"
        f" each reply scored after its own context and after {args.others} contexts of other training dialogues.",
        "Density: higher is more typical. `gap` = own minus the mean after others; a reply that fits any context has a"
        " small gap.",
        "",
        "| group | n | density, own context | after others (mean) | gap, median | gap, mean | share with gap < 1 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    gap = own - after
    for name, mask in groups.items():
        if mask.any():
            lines.append(
                f"| {name} | {int(mask.sum())} | {np.median(own[mask]):.2f} | {np.median(after[mask]):.2f} | "
                f"{np.median(gap[mask]):.2f} | {gap[mask].mean():.2f} | {(gap[mask] < 1).mean():.1%} |"
            )
    order = np.argsort(-after)
    lines += [
        "",
        "The 25 sampled replies with the highest density after other dialogues' contexts (in the list: *):",
        "",
        "| reply | words | own | after others | gap |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for row in order[:25]:
        mark = " *" if in_list[row] else ""
        text = replies[row].replace("|", "/")
        lines.append(f"| `{text}`{mark} | {words[row]} | {own[row]:.2f} | {after[row]:.2f} | {gap[row]:.2f} |")
    top = order[: max(1, args.pairs // 20)]
    lines += [
        "",
        f"Of the top 5 % by density after others ({len(top)} rows), {in_list[top].mean():.0%} are list replies and "
        f"{(words[top] <= MAX_WORDS).mean():.0%} have 1-{MAX_WORDS} words; the sample has {in_list.mean():.1%} list "
        f"replies and {(words <= MAX_WORDS).mean():.0%} of 1-{MAX_WORDS} words.",
    ]
    write_text(args.out, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
