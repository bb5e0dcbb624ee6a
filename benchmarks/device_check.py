"""One command for a GPU machine: what to measure there, in order, inside its own deadline.

    python3 -m benchmarks.device_check --out "$OUT" --data-dir .carry/data --deadline-s 480
    python3 -m benchmarks.device_check reassemble FILES_AT INTO

Sections, cheap and important first (:data:`SECTIONS`):

1. ``versions``: python, torch, CUDA, the GPU, transformers and the rest, the commit;
2. ``scoring_speed``: pairs/s of the checkpoint (default: the bundled one) on DailyDialog's test pairs, float32 and
   bfloat16, at several token budgets where ``DensityScorer`` takes ``max_tokens``, beside the naive per-pair loop
   of :mod:`benchmarks.speed` on a subset;
3. ``batch_invariance``: :mod:`benchmarks.batch_invariance` on as many pairs as the time left allows;
4. ``train_speed``: seconds per optimizer step of the release recipe (:data:`RELEASE_RECIPE`, density term
   included), in this process through the trainer's own loop;
5. ``training``: ``python -m train train`` with that recipe from the checkpoint for the steps that fit, its Gaussian
   fitted, and the fitted checkpoint's float16 weights in parts under 16 MiB with their sha256 (:func:`pack_weights`;
   :func:`reassemble` rebuilds them), beside ``training.tar.gz`` (the run's log and the checkpoint's other files).

The clock starts with the command. Section k must end by ``ENDS_BY[k] x --deadline-s`` (what one leaves is the next
one's), so a slow section never eats the training run; one with no time left is recorded as skipped, one that runs
out of it is stopped by an alarm with what it had measured. ``device_check.json`` in ``--out`` is rewritten
atomically after every measurement and ``device_check.log`` holds the log, so a kill at any moment leaves results.
On CPU the same script rehearses at tiny scale (``--tiny --checkpoint TINY``, tests/benchmarks/test_device_check.py).
docs/gpu.md says how to run it on a GPU machine, offline or not.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

from .device_recipes import RELEASE_RECIPE
from .device_sections import (
    MOST_PARTS,
    PART_BYTES,
    RETURNED_FILES,
    SUMS,
    TRAINING_TAR,
    WEIGHTS,
    SectionRun,
    add_run_arguments,
    check_run_arguments,
    fit_argv,
    pack_weights,
    reassemble,
    run_command,
    run_files,
    run_module,
    step_seconds,
    tar_files,
    versions,
)

# What tests/benchmarks/test_device_check.py and docs/gpu.md name here; the implementations are benchmarks.device_sections'.
__all__ = ["MOST_PARTS", "PART_BYTES", "RETURNED_FILES", "RELEASE_RECIPE", "SUMS", "WEIGHTS", "reassemble"]

logger = logging.getLogger("device_check")
REPORT, LOG = "device_check.json", "device_check.log"
PROG = "python3 -m benchmarks.device_check"

# Each setting at device scale and at rehearsal scale (--tiny); a flag given on the command line wins.
SCALES = {
    "pairs": (0, 32),  # 0: every DailyDialog test pair (6,740)
    "naive_pairs": (256, 8),
    "repeats": (2, 1),
    "token_budgets": ("4096,32768,65536", "256,1024"),  # beside the default (16,384 on CUDA, 1,024 on CPU)
    "invariance_pairs": (1000, 8),
    "speed_steps": (10, 2),
    "train_steps": (400, 4),
    "train_limit": (0, 200),  # 0: every training and validation pair
    "valid_limit": (500, 16),
    "valid_fit_pairs": (3000, 64),
    "fit_pairs": (20000, 64),
    # The training runs' --mixed-precision: bf16 autocast on CUDA; on a CPU, bf16 compiles oneDNN kernels for every
    # new shape, which made the rehearsal's training run twice as long.
    "mixed_precision": ("auto", "no"),
}


class Check(SectionRun):
    """One run of the device check: its arguments, its clock, its report and its work folder."""

    report_file, log_file = REPORT, LOG


# ---------------------------------------------------------------------------------------------- the sections


def dailydialog_test_pairs(data_dir: str | Path, n: int = 0) -> tuple[list, list]:
    """DailyDialog's test pairs (every turn of every dialogue against the turns before it), in a seeded order;
    the first ``n`` of them (0: all), as benchmarks/speed.py and batch_invariance.py draw theirs."""
    import numpy as np

    try:
        from density_train.data.corpora import load_dailydialog, response_pairs
    except (
        ImportError
    ):  # no datasets: the file's own format (turns end with __eou__), as density_train.data.corpora reads it
        with open(Path(data_dir) / "dailydialog" / "dialogues_test.txt", encoding="utf-8") as handle:
            dialogues = [[turn.strip() for turn in line.split("__eou__") if turn.strip()] for line in handle]
        contexts = [turns[:i] for turns in dialogues for i in range(1, len(turns))]
        responses = [turns[i] for turns in dialogues for i in range(1, len(turns))]
    else:
        contexts, responses = response_pairs(load_dailydialog(Path(data_dir) / "dailydialog", "test"))
    pick = np.random.default_rng(0).permutation(len(responses))[: n or None]
    return [contexts[i] for i in pick], [responses[i] for i in pick]


def token_budgets(check: Check) -> list[int]:
    """The --token-budgets to time, or none where DensityScorer has no ``max_tokens`` keyword."""
    from density_metric import DensityScorer

    if "max_tokens" not in inspect.signature(DensityScorer).parameters:
        return []
    return [int(value) for value in check.args.token_budgets.split(",") if value]


def scoring_speed(check: Check, result: dict, ends: float) -> None:
    """Pairs/s of DensityScorer, float32 and bfloat16, at its default batching and at each token budget, beside
    benchmarks/speed.py's naive per-pair float32 loop on --naive-pairs of the same pairs. Rounds of every method in
    turn (benchmarks.speed.timed_interleaved, which synchronizes CUDA), each method's best round counting, after a
    warm-up; a round starts only if the last one would fit again in the section's time."""
    import numpy as np
    import torch

    from density_metric import DensityScorer
    from density_metric.correlation import spearman

    from .speed import encoder_flops, naive_scores, plain_model, timed_interleaved

    args = check.args
    contexts, responses = dailydialog_test_pairs(args.data_dir, args.pairs)
    naive_n = min(args.naive_pairs, len(responses))
    budgets = token_budgets(check)
    result.update(
        pairs=len(responses),
        naive_pairs=naive_n,
        token_budgets=budgets or "DensityScorer takes no max_tokens: its default batching only",
    )
    scorers = {}
    for dtype in ("float32", "bfloat16"):
        scorers[dtype] = DensityScorer(args.checkpoint, dtype=dtype, progress=False)
        for budget in budgets:  # batch_size = the budget: a batch holds fewer pairs than tokens, so it never binds
            scorers[f"{dtype}, max_tokens={budget}"] = DensityScorer(
                args.checkpoint, dtype=dtype, progress=False, max_tokens=budget, batch_size=budget
            )
    fp32 = scorers["float32"]
    result.update(
        device=str(fp32.encoder.device),
        default_batch_size=fp32.batch_size,
        default_max_tokens=getattr(fp32.encoder, "max_tokens", None),
        signature=fp32.signature,
    )
    for scorer in scorers.values():  # CUDA context, kernels and the allocator's pool, before any timing
        scorer.score(contexts[:64], responses[:64])
    naive = "naive per-pair loop, float32"
    methods = {naive: functools.partial(naive_scores, fp32, plain_model(fp32), contexts[:naive_n], responses[:naive_n])}
    methods.update({name: functools.partial(scorer.score, contexts, responses) for name, scorer in scorers.items()})
    best, last_round = {}, 0.0
    for round_ in range(args.repeats):
        if round_ and last_round > ends - time.monotonic():
            result["rounds_skipped"] = f"{args.repeats - round_} (deadline)"
            break
        outputs, seconds = timed_interleaved(methods, 1)
        last_round = sum(seconds.values())
        best = {name: min(best.get(name, float("inf")), value) for name, value in seconds.items()}
        rates = {name: (naive_n if name == naive else len(responses)) / value for name, value in best.items()}
        result["rounds"] = round_ + 1
        result["pairs_per_s"] = {name: round(rate, 1) for name, rate in rates.items()}
        result["vs_naive"] = {name: round(rate / rates[naive], 2) for name, rate in rates.items()}
        check.save()
    result["bf16_vs_fp32_spearman"] = spearman(outputs["bfloat16"].scores, outputs["float32"].scores)
    result["bf16_vs_fp32_max_abs_calibrated_diff"] = float(
        np.abs(outputs["bfloat16"].calibrated - outputs["float32"].calibrated).max()
    )
    if torch.cuda.is_available():  # the encoder's matrix products over the best bf16 time, at --peak-tflops
        floor = encoder_flops(fp32, contexts, responses) / (args.peak_tflops * 1e12)
        fastest = min(best[name] for name in scorers if name.startswith("bfloat16"))
        result["bf16_share_of_arithmetic_floor"] = floor / fastest


def batch_invariance(check: Check, result: dict, ends: float) -> None:
    """benchmarks.batch_invariance.relative_differences for each dtype, on the checkpoint's own device, on as many
    test pairs (up to --invariance-pairs) as fit the dtype's half of the section's time: their cost is about twice
    that of scoring them one at a time, whose rate is measured first on 16 pairs after a warm-up."""
    from density_metric import DensityScorer

    from .batch_invariance import relative_differences

    contexts, responses = dailydialog_test_pairs(check.args.data_dir)
    for index, dtype in enumerate(("float32", "bfloat16")):
        scorer = DensityScorer(check.args.checkpoint, dtype=dtype, progress=False)
        scorer.score(contexts[:16], responses[:16])  # warm-up
        scorer.batch_size, default = 1, scorer.batch_size
        started = time.perf_counter()  # on pairs of other lengths: a CPU's oneDNN compiles its kernels per shape
        scorer.score(contexts[16:32], responses[16:32])
        one_at_a_time = 16 / (time.perf_counter() - started)
        scorer.batch_size = default
        seconds = (ends - time.monotonic()) / (2 - index)
        n = min(check.args.invariance_pairs, max(8, int(0.8 * seconds * one_at_a_time / 2)))
        result[dtype] = {
            "device": str(scorer.encoder.device),
            "pairs": n,
            "signature": scorer.signature,
            "max_rel_diff": relative_differences(scorer, contexts[:n], responses[:n]),
        }
        check.save()


def training_argv(check: Check, steps: int, out: Path) -> list[str]:
    """``python -m train`` arguments of the release recipe from the checkpoint, ``steps`` optimizer steps, into
    ``out``."""
    args = check.args
    argv = ["train", *RELEASE_RECIPE, "--data-dir", str(Path(args.data_dir) / "dailydialog")]
    argv += ["--init-from", args.checkpoint or "default", "--max-steps-per-epoch", str(steps), "--out", str(out)]
    argv += ["--valid-limit", str(args.valid_limit), "--valid-fit-pairs", str(args.valid_fit_pairs)]
    argv += ["--fit-pairs", str(args.fit_pairs), "--mixed-precision", args.mixed_precision]
    return argv + (["--limit", str(args.train_limit)] if args.train_limit else [])


def train_speed(check: Check, result: dict, ends: float) -> None:
    """Seconds per optimizer step of the release recipe, as ``python -m train train`` builds its trainer (the same
    flags and data), over --speed-steps steps after a warm-up step. benchmarks/train_speed.py's ``time_steps`` feeds
    its trainer negatives only, so it cannot time the density term's copies and anchor: the trainer's own loop does."""
    import torch

    from density_train.commands import build_parser
    from density_train.commands.train import peak_gpu_memory
    from density_train.config.flags import config_from_args
    from density_train.data.corpora import load_selection_data
    from density_train.loop.trainer import Trainer

    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    steps = check.args.speed_steps + 1
    out = Path(tempfile.mkdtemp(prefix="train_speed-", dir=check.work))
    # One step more in the epoch than are taken: its end would run an evaluation.
    args = build_parser().parse_args(training_argv(check, steps + 1, out))
    train_data, valid_data = load_selection_data(args)
    started = time.perf_counter()
    trainer = Trainer(config_from_args(args), train_data, valid_data, out)
    result["trainer_start_s"] = round(time.perf_counter() - started, 2)
    result["mixed_precision"] = trainer.accelerator.mixed_precision
    trainer.train(stop_after_steps=steps)
    del trainer
    _, seconds = step_seconds(out / "log.jsonl")
    result.update(
        timed_steps=len(seconds),
        seconds_per_step=round(statistics.mean(seconds), 4),
        median_seconds_per_step=round(statistics.median(seconds), 4),
        contexts_per_step=8,
        candidates_per_context=1 + 4 + 4,  # the gold, 4 negatives, 4 copies
    )
    if torch.cuda.is_available():
        result.update(peak_gpu_memory(torch.device("cuda")))


def training(check: Check, result: dict, ends: float) -> None:
    """A short run of the release recipe from the checkpoint, ``python -m train train`` in a subprocess: the steps
    that fit half of the section's time at train_speed's rate (at most --train-steps), its ``--max-minutes`` guard at
    60 % (or --train-minutes); then its Gaussian, fitted on --fit-pairs training pairs with the float16 weights. If the run stopped
    before writing its checkpoint, its last state is fitted with ``python -m train fit``. The weights come back in
    parts (:func:`pack_weights`), the run's log and the checkpoint's other files in training.tar.gz."""
    from density_metric.checkpoint.format import CONFIG_FILE, DensityConfig
    from density_metric.checkpoint.sources import resolve_checkpoint

    args, out = check.args, Path(check.args.out)
    seconds = ends - time.monotonic()  # the section's
    reserve = max(5.0, 0.03 * args.deadline_s)  # the packing, after the run is killed at the latest
    per_step = check.report["sections"]["train_speed"].get("seconds_per_step")
    steps = args.train_steps if per_step is None else max(1, min(args.train_steps, int(0.5 * seconds / per_step)))
    run = Path(tempfile.mkdtemp(prefix="training-", dir=check.work))
    minutes = args.train_minutes or 0.6 * seconds / 60
    argv = [*training_argv(check, steps, run / "run"), "--max-minutes", f"{minutes:.4g}"]
    result.update(steps_planned=steps, command="python -m train " + " ".join(argv))
    check.save()
    result["train"] = run_module("train", argv, run, "train", ends - time.monotonic() - reserve)
    checkpoint, state = run / "run" / "checkpoint", run / "run" / "state"
    if not (checkpoint / CONFIG_FILE).is_file() and state.is_dir() and ends - time.monotonic() > 2 * reserve:
        pair_format = DensityConfig.from_file(resolve_checkpoint(args.checkpoint).path / CONFIG_FILE).pair_format
        fit = fit_argv(state, checkpoint, Path(args.data_dir) / "dailydialog", pair_format)
        fit += ["--limit", str(args.fit_pairs)]
        result["fit_of_last_state"] = run_module("train", fit, run, "fit", ends - time.monotonic() - reserve)
    if (run / "run" / "log.jsonl").is_file():
        result["steps_taken"], taken = step_seconds(run / "run" / "log.jsonl")
        if taken:
            result["median_seconds_per_step"] = round(statistics.median(taken), 4)
    tar_files(out / TRAINING_TAR, {run: run_files(run)})
    if (checkpoint / CONFIG_FILE).is_file():
        result["weights"] = pack_weights(checkpoint / WEIGHTS, out)
    else:
        raise RuntimeError("the run wrote no checkpoint: see training.tar.gz")


SECTIONS = {"versions": versions, "scoring_speed": scoring_speed, "batch_invariance": batch_invariance}
SECTIONS.update(train_speed=train_speed, training=training)
# The share of --deadline-s by which each section must be done (versions: only the deadline itself).
ENDS_BY = {"versions": 1.0, "scoring_speed": 0.25, "batch_invariance": 0.37, "train_speed": 0.47, "training": 1.0}


# ------------------------------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    add_run_arguments(parser, SCALES, 480.0)
    parser.add_argument("--data-dir", default="../shared/data", help="folder with dailydialog/ (../shared/data)")
    parser.add_argument("--checkpoint", default=None, help="the checkpoint to measure and train from (the bundled)")
    parser.add_argument("--peak-tflops", type=float, default=790.0, help="bf16 dense peak of the GPU, for the floor")
    parser.add_argument(
        "--train-minutes",
        type=float,
        help="the training run's --max-minutes guard (default: 60 %% of the training section's time)",
    )
    args = parser.parse_args(argv)
    check_run_arguments(parser, args, SCALES)
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    return run_command(
        argv, PROG, parse_args, Check, lambda check: {n: (SECTIONS[n], check.at(ENDS_BY[n])) for n in SECTIONS}
    )


if __name__ == "__main__":
    sys.exit(main())
