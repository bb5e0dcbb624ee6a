"""A training run's learning curve: validation signals against contexts seen, from its ``log.jsonl``.

    python -m benchmarks.learning_curve runs/release/log.jsonl --contexts-per-step 16 \
        --out results/releases/2026-11-25-first-release/learning_curve.png

Three panels, one point per evaluation: validation Recall@1 over the run's 1 + N candidates (N from
``--candidates``, else from the ``state/trainer_state.json`` beside the log), the AUC of
the gold against one hard negative kind (``--kind``, by DEnsity distance and by ``f(c,r)``, on
the full 0-1 scale with chance at 0.5), and the Spearman correlation with DailyDialog-Zhao's
``dev`` rows. The x axis is contexts seen
(optimizer steps x ``--contexts-per-step``). Reads the log only; a resumed run's repeated
evaluations (the same step logged twice) count once, the last one.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from density_train.loop.run_log import evaluations, read_log

from .command_line import check_counts, check_output


def read_evaluations(log: Path) -> list[dict]:
    """The run's evaluations in step order, one per step (the last logged for a step that was repeated)."""
    records = evaluations(read_log(log))
    if not records:
        raise ValueError(f"{log}: no evaluation records")
    return records


def curve(evaluations: list[dict], key: str, contexts_per_step: int) -> tuple[list[int], list[float]]:
    """(contexts seen, values) of ``key`` over the evaluations that logged it."""
    points = [(r["step"] * contexts_per_step, r[key]) for r in evaluations if key in r]
    return [x for x, _ in points], [y for _, y in points]


def logged_candidates(log: Path) -> int | None:
    """How many candidates the run's Recall@1 ranked (1 + its validation negatives), from the run's
    ``state/trainer_state.json`` beside ``log``; None without a readable one (a log copied alone)."""
    try:
        config = json.loads((log.parent / "state" / "trainer_state.json").read_text(encoding="utf-8"))["config"]
        return 1 + int(config.get("valid_negatives") or config["negatives"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def recall_title(candidates: int | None) -> str:
    """The Recall@1 panel's title, with the candidates it ranked where they are known."""
    return "Validation Recall@1" + (f" (1 + {candidates - 1})" if candidates else "")


def plot(
    evaluations: list[dict],
    contexts_per_step: int,
    kind: str,
    path: Path,
    title: str = "",
    candidates: int | None = None,
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    thousands = FuncFormatter(lambda x, _: f"{x / 1000:g}k")
    # (title, series, chance): a panel with a chance level is drawn on the full 0-1 scale with it marked.
    panels = [
        (recall_title(candidates), [("recall_at_1", "Recall@1")], None),
        (
            f"Validation AUC, gold vs {kind}",
            [(f"auc_density/{kind}", "DEnsity distance"), (f"auc_f/{kind}", "f(c,r)")],
            0.5,
        ),
        ("DailyDialog-Zhao dev, Spearman x100", [("zhao_dev_spearman", "DEnsity")], None),
    ]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for axis, (name, series, chance) in zip(axes, panels):
        drawn = False
        for key, label in series:
            xs, ys = curve(evaluations, key, contexts_per_step)
            if xs:
                axis.plot(xs, ys, marker="o", markersize=3, label=label)
                drawn = True
        if not drawn:
            axis.text(0.5, 0.5, "not logged", ha="center", va="center", transform=axis.transAxes)
        if chance is not None:  # below chance the model prefers the negative
            axis.axhline(chance, color="grey", linestyle="--", linewidth=1, label="chance")
            axis.set_ylim(0, 1)
        axis.set_title(name, fontsize=10)
        axis.set_xlabel("contexts seen")
        axis.xaxis.set_major_formatter(thousands)
        axis.grid(alpha=0.3)
        if len(series) > 1 and drawn:
            axis.legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.learning_curve", description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path, help="the run's log.jsonl")
    parser.add_argument(
        "--contexts-per-step", type=int, required=True, help="contexts per optimizer step (batch size x grad-accum)"
    )
    parser.add_argument("--kind", default="echo", help="the negative kind of the AUC panel (default: echo)")
    parser.add_argument("--title", default="")
    parser.add_argument(
        "--candidates",
        type=int,
        help="how many candidates Recall@1 ranked (1 + N negatives), for the panel's title (default: from the run's "
        "state/trainer_state.json beside the log; left out of the title without one)",
    )
    parser.add_argument("--out", type=Path, required=True, help="the figure (.png)")
    args = parser.parse_args(argv)
    check_counts(parser, args, "--contexts-per-step")
    check_counts(parser, args, "--candidates", least=2)
    check_output(parser, "--out", args.out, makes_folder=True)
    if not args.log.is_file():
        parser.error(f"{args.log}: no such file")
    try:
        evaluations = read_evaluations(args.log)
    except (ValueError, OSError) as err:  # a damaged or unreadable log, or one without evaluations
        parser.error(str(err))
    kinds = sorted({key.split("/")[-1] for record in evaluations for key in record if key.startswith("auc_")})
    if kinds and args.kind not in kinds:  # a log without AUCs draws the panel as "not logged"
        parser.error(f"--kind {args.kind!r} is not in the log (its kinds: {', '.join(kinds)})")
    candidates = args.candidates or logged_candidates(args.log)
    plot(evaluations, args.contexts_per_step, args.kind, args.out, args.title, candidates)
    print(f"{args.out}: {len(evaluations)} evaluations, last at step {evaluations[-1]['step']}")


if __name__ == "__main__":
    main()
