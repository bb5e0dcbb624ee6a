"""The selection rule of PLAN.md, applied to the arms' logs (validation only).

    python results/experiments/grounded-corpora/select_arm.py ROOT --arms a b c d [--json OUT]

ROOT/ARM/log.jsonl is each arm's training log. Each arm's kept evaluation is the one its run keeps in best/ (the
mean of the three grounding Spearmans among evaluations whose `dev` Spearman is at least the start's - 1), read
among the evaluations at or before the last step that every arm reached. Prints a markdown table (the kept
evaluation of each arm, own Gaussian and plain DailyDialog Gaussian) and the verdict; --json writes both.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from density_train.evaluation.model_selection import selection_value
from density_train.loop.run_log import evaluations, read_log

SIGNALS = (
    "grounding/persona_spearman",
    "grounding_personachat/persona_spearman",
    "grounding_topical_chat/persona_spearman",
)
SELECT_ON = "+".join(SIGNALS)
FLOOR = "zhao_dev_spearman=start-1"
CONTROL = "a"
ROWS = (
    "step",
    "recall_at_1",
    "auc_density/echo",
    "auc_density/speaker",
    "zhao_dev_spearman",
    "grounding/echo_win",
    "grounding_personachat/echo_win",
    "grounding_topical_chat/echo_win",
    "grounding_personachat/recall_at_1",
    "grounding_topical_chat/recall_at_1",
    *SIGNALS,
    "G",
)


def grounding_mean(metrics: dict, prefix: str = "") -> float:
    """G: the mean of the three grounding-use Spearmans (ConvAI2, PersonaChat, Topical-Chat held out)."""
    return sum(metrics[prefix + name] for name in SIGNALS) / len(SIGNALS)


def kept(records: list[dict], last_step: int) -> dict:
    """The evaluation the run's own selection keeps among those at or before ``last_step``."""
    found = evaluations(records)
    start = next(r for r in found if r["step"] == 0)
    usable = [r for r in found if r["step"] <= last_step]
    return max(usable, key=lambda r: (selection_value(r, SELECT_ON, FLOOR, start), r["step"]))


def verdict(
    arms: dict[str, dict], start: dict, trained: frozenset[str] = frozenset()
) -> tuple[str, str, dict[str, str]]:
    """(winner, its Gaussian: "" own or "plain/", reason per arm and Gaussian) by PLAN.md's rule. The control is
    judged under its own Gaussian (DailyDialog's); every other arm under each of its two Gaussians. An arm of
    ``trained`` (PLAN.md's second addendum: its step 0 already reads the contexts differently) beats the control
    only with a kept evaluation after its step 0."""
    a = arms[CONTROL]
    reasons, winners = {}, []
    for name, m in arms.items():
        if name == CONTROL:
            continue
        plain_gain = grounding_mean(m, "plain/") - grounding_mean(a)
        for gaussian in ("", "plain/"):
            fails = [] if name not in trained or m["step"] > 0 else ["kept its step 0: training raised nothing"]
            for metric in ("recall_at_1", "auc_density/echo", "auc_density/speaker"):
                mine = m[metric if metric == "recall_at_1" else gaussian + metric]
                if mine < a[metric] - 0.02:
                    fails.append(f"{metric} {mine:.3f} < control {a[metric]:.3f} - 0.02")
            echo = m[gaussian + "grounding/echo_win"]
            if echo < a["grounding/echo_win"]:
                fails.append(f"ConvAI2 echo_win {echo:.3f} < control {a['grounding/echo_win']:.3f}")
            dev = m[gaussian + "zhao_dev_spearman"]
            if dev < start["zhao_dev_spearman"] - 1.0:
                fails.append(f"dev {dev:.2f} < start {start['zhao_dev_spearman']:.2f} - 1")
            gain = grounding_mean(m, gaussian) - grounding_mean(a)
            if gain < 3.0:
                fails.append(f"G gain {gain:+.2f} < +3.0")
            if plain_gain < 1.5:
                fails.append(f"plain-Gaussian G gain {plain_gain:+.2f} < +1.5 (the encoder did not learn it)")
            for signal in SIGNALS:
                if m[gaussian + signal] < a[signal] - 1.0:
                    fails.append(f"{signal} {m[gaussian + signal]:.2f} < control {a[signal]:.2f} - 1")
            key = f"{name} ({'plain' if gaussian else 'own'} Gaussian)"
            reasons[key] = "; ".join(fails) if fails else f"beats the control (G {gain:+.2f}, plain {plain_gain:+.2f})"
            if not fails:
                winners.append((grounding_mean(m, gaussian), name, gaussian))
    if not winners:
        return CONTROL, "", reasons
    _, name, gaussian = max(winners)
    return name, gaussian, reasons


def judge_continued(root: Path, winner: str) -> str:
    """PLAN.md's 'Then': the continued run against the control's and the pilot winner's kept evaluations."""
    chosen = json.loads((root / "select.json").read_text())
    gaussian = "" if chosen["gaussian"] == "own" else "plain/"
    control, pilot, start = chosen["kept"][CONTROL], chosen["kept"][winner], chosen["start"]
    found = evaluations(read_log(root / f"{winner}-more" / "log.jsonl"))
    continued = kept(found, found[-1]["step"])
    _, _, reasons = verdict({CONTROL: control, winner: continued}, start)
    reason = reasons[f"{winner} ({'plain' if gaussian else 'own'} Gaussian)"]
    g_continued, g_pilot = grounding_mean(continued, gaussian), grounding_mean(pilot, gaussian)
    keep = reason.startswith("beats") and g_continued >= g_pilot
    return "\n".join(
        [
            f"continued {winner}: kept evaluation at step {continued['step']} of {found[-1]['step']}",
            table({CONTROL: control, winner: pilot, f"{winner}-more": continued}, gaussian),
            f"- rule: {reason}",
            f"- G under the pilot's Gaussian: continued {g_continued:.2f}, pilot winner {g_pilot:.2f}",
            f"keep: {'continued' if keep else 'pilot winner'}",
        ]
    )


def table(arms: dict[str, dict], prefix: str) -> str:
    names = list(arms)
    lines = ["| metric | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
    for row in ROWS:
        cells = []
        for name in names:
            m = arms[name]
            key = row if row == "step" else prefix + row
            value = grounding_mean(m, prefix) if row == "G" else m.get(key, math.nan)
            cells.append(f"{value:.0f}" if row == "step" else f"{value:.3f}" if abs(value) <= 1 else f"{value:.2f}")
        lines.append(f"| {prefix}{row} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("--arms", nargs="+", default=["a", "b", "c", "d"])
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--trained",
        nargs="*",
        default=[],
        metavar="ARM",
        help="arms that beat the control only with a kept evaluation after their step 0 (PLAN.md, second addendum)",
    )
    parser.add_argument(
        "--continued",
        metavar="ARM",
        help="judge ROOT/ARM-more (the winner trained on) instead: 'keep: continued' if its kept evaluation beats "
        "the control under the rule with a G, under the pilot's Gaussian, at least the pilot winner's",
    )
    args = parser.parse_args(argv)
    if args.continued:
        print(judge_continued(args.root, args.continued))
        return
    logs = {name: read_log(args.root / name / "log.jsonl") for name in args.arms}
    last_step = min(max(r["step"] for r in evaluations(records)) for records in logs.values())
    arms = {name: kept(records, last_step) for name, records in logs.items()}
    start = next(r for r in evaluations(logs[CONTROL]) if r["step"] == 0)
    winner, gaussian, reasons = verdict(arms, start, frozenset(args.trained))
    text = "\n\n".join(
        [
            f"Kept evaluation of each arm (at or before step {last_step}, the last that every arm reached); "
            f"start (a, step 0): dev {start['zhao_dev_spearman']:.2f}, G {grounding_mean(start):.2f}",
            "Own Gaussian:\n\n" + table(arms, ""),
            "Plain DailyDialog Gaussian:\n\n" + table(arms, "plain/"),
            "\n".join(f"- {name}: {reason}" for name, reason in reasons.items()),
            f"winner: {winner} ({'plain DailyDialog' if gaussian else 'own'} Gaussian)",
        ]
    )
    print(text)
    if args.json:
        args.json.write_text(
            json.dumps(
                {"winner": winner, "gaussian": gaussian or "own", "reasons": reasons, "kept": arms, "start": start},
                indent=1,
            )
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
