"""Long replies on the bundled model: what raising the reply's cap (``max_response_length``, 64 tokens in the
checkpoint) does to its scores. Two checks (issue 68), on DailyDialog's test dialogues:

(a) spam after the first 64 tokens. For each dialogue whose turns after the first hold at least ``LONG`` word pieces,
    the context is the first turn and the long real reply is the turns after it, joined and cut at ``LONG`` tokens
    (whole words). Its spam version keeps the real reply's first words up to 64 word pieces or more, then spam
    (``SPAM``, repeated) to the same length. At cap 64 both read the same words, so they score the same; once the cap
    reads past 64, the spam must lower the score: below the real reply's at that cap, and below its own at cap 64.
(b) replies under 64 tokens. Seeded sample of DailyDialog test pairs (every turn from the second against its
    prefix) whose reply has fewer than 64 word pieces: each must score the same at every cap (the context keeps its
    budget: ``density_metric.encoding.length_options``).

float32 on CPU. Usage, from the repository root (about 2 minutes on 2 cores):

    PYTHONPATH=. python results/bundled-default/long-replies/long_replies.py

writes ``long_replies.json`` and ``long_replies.md`` beside this file.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import numpy as np
from density_train.data.corpora import _dailydialog_turns, response_pairs

from density_metric import DensityScorer

DATA = Path("../shared/data/dailydialog")
OUT = Path(__file__).resolve().parent
COMMAND = "PYTHONPATH=. python results/bundled-default/long-replies/long_replies.py"
CAPS = (64, 128, 192, 256, 320)  # 64: the checkpoint's; 320: the most the encoder's 512 positions leave
LONG = 160  # word pieces of a long reply: past 128, within 192
OLD_CAP = 64
SPAM = "Click here to win a free iPhone now!!! Best deals at www.cheap-watches.example, limited offer, buy today."
N_LONG, N_SHORT, SEED = 200, 300, 12345


def pieces(tokenizer, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def words_up_to(tokenizer, words: list[str], tokens: int, at_least: bool) -> list[str]:
    """The shortest prefix of ``words`` with at least ``tokens`` word pieces (``at_least``), or the longest with at
    most ``tokens``."""
    for end in range(1, len(words) + 1):
        count = pieces(tokenizer, " ".join(words[:end]))
        if count >= tokens:
            return words[:end] if at_least or count == tokens else words[: end - 1]
    return words


def long_pairs(tokenizer) -> tuple[list[list[str]], list[str], list[str]]:
    """(a)'s contexts, long real replies and their spam versions, ``N_LONG`` of each (the first dialogues that fit)."""
    contexts, real, spam = [], [], []
    spam_words = (SPAM + " ") * 20
    for turns in _dailydialog_turns(DATA, "test"):
        rest = " ".join(turns[1:]).split()
        if len(turns) < 2 or pieces(tokenizer, " ".join(rest)) < LONG:
            continue
        reply = words_up_to(tokenizer, rest, LONG, at_least=False)
        prefix = words_up_to(tokenizer, reply, OLD_CAP, at_least=True)
        filler = words_up_to(
            tokenizer,
            spam_words.split(),
            pieces(tokenizer, " ".join(reply)) - pieces(tokenizer, " ".join(prefix)),
            at_least=False,
        )
        contexts.append([turns[0]])
        real.append(" ".join(reply))
        spam.append(" ".join(prefix + filler))
        if len(contexts) == N_LONG:
            break
    return contexts, real, spam


def short_pairs(tokenizer) -> tuple[list[list[str]], list[str]]:
    """(b)'s pairs: a seeded sample of ``N_SHORT`` DailyDialog test pairs whose reply is under 64 word pieces."""
    contexts, responses = response_pairs(_dailydialog_turns(DATA, "test"))
    short = [i for i, reply in enumerate(responses) if pieces(tokenizer, reply) < OLD_CAP]
    chosen = sorted(random.Random(SEED).sample(short, N_SHORT))
    return [contexts[i] for i in chosen], [responses[i] for i in chosen]


def main() -> None:
    start = time.perf_counter()
    scorers = {cap: DensityScorer(device="cpu", dtype="float32", max_response_length=cap) for cap in CAPS}
    tokenizer = scorers[OLD_CAP].encoder.tokenizer
    contexts, real, spam = long_pairs(tokenizer)
    short_contexts, short_replies = short_pairs(tokenizer)
    lengths = {"real": [pieces(tokenizer, r) for r in real], "spam": [pieces(tokenizer, r) for r in spam]}
    rows, short_scores = {}, {}
    for cap, scorer in scorers.items():
        real_result, spam_result = scorer.score(contexts, real, warn=False), scorer.score(contexts, spam, warn=False)
        rows[cap] = {"real": real_result.scores, "spam": spam_result.scores, "flags": real_result.flags}
        short_scores[cap] = scorer.score(short_contexts, short_replies, warn=False).scores
    base = rows[OLD_CAP]
    by_cap = {
        cap: {
            "real_mean": float(row["real"].mean()),
            "spam_mean": float(row["spam"].mean()),
            "spam_below_real": float(np.mean(row["spam"] < row["real"])),
            "spam_minus_real_mean": float(np.mean(row["spam"] - row["real"])),
            "spam_below_its_cap_64_score": float(np.mean(row["spam"] < base["spam"])),
            "real_minus_its_cap_64_score_mean": float(np.mean(row["real"] - base["real"])),
            "real_reply_truncated": int(sum("truncated_reply" in flags for flags in row["flags"])),
        }
        for cap, row in rows.items()
    }
    short_diff = max(float(np.max(np.abs(short_scores[cap] - short_scores[OLD_CAP]))) for cap in CAPS)
    report = {
        "command": COMMAND,
        "checkpoint": scorers[OLD_CAP].signature,
        "a_spam_after_64_tokens": {
            "n": len(real),
            "reply_tokens": {
                "real_mean": float(np.mean(lengths["real"])),
                "spam_mean": float(np.mean(lengths["spam"])),
            },
            "equal_at_cap_64": bool(np.array_equal(base["real"], base["spam"])),
            "by_cap": by_cap,
        },
        "b_replies_under_64_tokens": {
            "n": len(short_replies),
            "max_abs_score_difference_across_caps": short_diff,
            "identical_at_every_cap": short_diff == 0.0,
        },
        "seconds": round(time.perf_counter() - start, 1),
    }
    (OUT / "long_replies.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# Long replies on the bundled model",
        "",
        f"`{COMMAND}` ({report['seconds']} s). (a): n = {len(real)} DailyDialog test dialogues, reply = the turns",
        f"after the first, cut at {LONG} word pieces; spam after its first 64. (b): n = {len(short_replies)} test pairs",
        "with replies under 64 word pieces.",
        "",
        "| cap | real mean | spam mean | spam < real | spam < its cap-64 score | real - its cap-64 score |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for cap, row in by_cap.items():
        lines.append(
            f"| {cap} | {row['real_mean']:.2f} | {row['spam_mean']:.2f} | {row['spam_below_real']:.1%} | "
            f"{row['spam_below_its_cap_64_score']:.1%} | {row['real_minus_its_cap_64_score_mean']:+.2f} |"
        )
    lines += [
        "",
        f"(a) at cap 64 the real and spam replies score the same: {report['a_spam_after_64_tokens']['equal_at_cap_64']}.",
        f"(b) largest score difference of a reply under 64 tokens across caps {list(CAPS)}: {short_diff:.3g}.",
    ]
    (OUT / "long_replies.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
