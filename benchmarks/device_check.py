"""One command for a lent GPU machine: what to measure there, in order, inside its own deadline.

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
On CPU the same script rehearses at tiny scale (``--tiny --checkpoint TINY``, tests/test_device_check.py).
docs/gpu.md says how to run it on a lent machine.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import faulthandler
import functools
import gc
import hashlib
import importlib
import inspect
import json
import logging
import os
import signal
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
from pathlib import Path

logger = logging.getLogger("device_check")

ROOT = Path(__file__).resolve().parent.parent  # the checkout: `python -m train` runs from here
REPORT, LOG, TRAINING_TAR, SUMS, WEIGHTS = (
    "device_check.json",
    "device_check.log",
    "training.tar.gz",
    "SHA256SUMS",
    "model.safetensors",
)
# What comes back from a lent machine's $OUT: at most 8 files of at most 16 MiB. The four files above besides the
# weights leave 4 parts of 15 MiB: 60 MiB of float16 weights (all-MiniLM-L6-v2's 22.7M parameters take 45 MB).
RETURNED_FILES, PART_BYTES = 8, 15 * 2**20
MOST_PARTS = RETURNED_FILES - 4

# Modules the sections import, checked first: the lent machine's image holds most; docs/gpu.md carries the rest.
REQUIRED = (
    "numpy",
    "torch",
    "transformers",
    "tokenizers",
    "safetensors",
    "huggingface_hub",
    "tqdm",
    "scipy",
    "accelerate",
)
# Needed by the training sections (train/ builds its tables with it) but not by scoring: where it does not import
# (say, the image's pyarrow is older than it needs), the scoring sections still run and the training ones fail alone.
TRAINING_ONLY = ("datasets",)

# The recipe of the bundled model's last rounds (results/experiments/anchor-and-overlap-rows/recipe.sh and
# grounded-corpora/run.sh): the density term against copies, anchored to the start, golds that reuse the last turn
# in every batch; bf16 autocast on CUDA. The counts (steps, validation and fit sizes) come from the flags below.
RELEASE_RECIPE = (
    "--corpus dailydialog --epochs 1 --warmup-steps 30 --lr 2e-5 --batch-size 8 --resample-negatives --seed 43 "
    "--negatives-seed 43 --valid-negatives 15 --validation-kinds random,echo,speaker,repeat,earlier,span "
    "--evals-per-epoch 1 --negatives 4 --contrastive-weight 0 --no-dropout --density-weight 1 --density-margin 3 "
    "--bank-size 2048 --bank-shrinkage 0.1 --density-copies 4 --copy-mix echo:1,speaker:2 --anchor-weight 1 "
    "--overlap-rows 6 --weights-dtype float16"
).split()

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


class SectionTimeout(Exception):
    """Raised by the alarm at the end of a section's time."""


def _alarm(signum, frame):
    raise SectionTimeout


@dataclasses.dataclass
class Check:
    """One run of the device check: its arguments, its clock, its report and its work folder."""

    args: argparse.Namespace
    started: float
    report: dict
    work: Path

    def left(self) -> float:
        """Seconds to the deadline."""
        return self.started + self.args.deadline_s - time.monotonic()

    def save(self) -> None:
        """Rewrite the report in --out; a reader (or a kill) sees the old file or the new one, never half."""
        self.report["elapsed_s"] = round(time.monotonic() - self.started, 1)
        out = Path(self.args.out)
        partial = out / f".{REPORT}.partial"
        partial.write_text(json.dumps(self.report, indent=2) + "\n", encoding="utf-8")
        os.replace(partial, out / REPORT)


# ---------------------------------------------------------------------------------------------- the sections


def versions(check: Check, result: dict, ends: float) -> None:
    """Python, the packages, torch's CUDA and GPU, the machine, and the commit (no .git may travel)."""
    import torch

    from density_metric import __version__
    from density_metric.features import machine_description

    cuda = torch.cuda.is_available()
    result.update(
        python=sys.version.split()[0],
        executable=sys.executable,
        packages={name: getattr(sys.modules[name], "__version__", "unknown") for name in REQUIRED},
        density_metric=__version__,
        torch_cuda=torch.version.cuda,
        cuda_available=cuda,
        machine=machine_description("cuda" if cuda else "cpu"),
        cpu_count=os.cpu_count(),
        torch_threads=torch.get_num_threads(),
    )
    if cuda:
        gpu = torch.cuda.get_device_properties(0)
        result["gpu"] = {
            "name": gpu.name,
            "memory_gib": round(gpu.total_memory / 2**30, 1),
            "multiprocessors": gpu.multi_processor_count,
            "capability": f"{gpu.major}.{gpu.minor}",
            "count": torch.cuda.device_count(),
        }
    try:
        found = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=max(1, ends - time.monotonic()),
        )
        commit = found.stdout.strip() if found.returncode == 0 else None
        why = (found.stderr.strip().splitlines() or ["git rev-parse HEAD failed"])[0]
    except (OSError, subprocess.TimeoutExpired) as err:
        commit, why = None, f"git rev-parse HEAD: {err}"
    # --commit wins: the lent machine's .git was seen to name the landed commit, not the tree that was sent
    # (2026-11-28: HEAD there said 8e3b0fa for a tree sent at dcb458f).
    result["commit"] = check.args.commit or commit or f"unavailable ({why})"
    result["git_head_there"] = commit or f"unavailable ({why})"


def dailydialog_test_pairs(data_dir: str | Path, n: int = 0) -> tuple[list, list]:
    """DailyDialog's test pairs (every turn of every dialogue against the turns before it), in a seeded order;
    the first ``n`` of them (0: all), as benchmarks/speed.py and batch_invariance.py draw theirs."""
    import numpy as np

    try:
        from train.corpora import load_dailydialog, response_pairs
    except ImportError:  # no datasets: the file's own format (turns end with __eou__), as train.corpora reads it
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
    from scipy.stats import spearmanr

    from density_metric import DensityScorer

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
    result["bf16_vs_fp32_spearman"] = float(spearmanr(outputs["bfloat16"].scores, outputs["float32"].scores).statistic)
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


def step_seconds(log_path: Path) -> tuple[int, list[float]]:
    """How many optimizer steps a run's log records, and the seconds of each after the first (which warms up), from
    their ``elapsed``."""
    from train.run_log import read_log

    elapsed = [record["elapsed"] for record in read_log(log_path) if record["type"] == "train"]
    return len(elapsed), [b - a for a, b in zip(elapsed, elapsed[1:])]


def train_speed(check: Check, result: dict, ends: float) -> None:
    """Seconds per optimizer step of the release recipe, as ``python -m train train`` builds its trainer (the same
    flags and data), over --speed-steps steps after a warm-up step. benchmarks/train_speed.py's ``time_steps`` feeds
    its trainer negatives only, so it cannot time the density term's copies and anchor: the trainer's own loop does."""
    import torch

    from train.__main__ import build_parser
    from train.corpora import load_corpus
    from train.data import SelectionData
    from train.flags import config_from_args
    from train.loop import Trainer

    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    steps = check.args.speed_steps + 1
    out = Path(tempfile.mkdtemp(prefix="train_speed-", dir=check.work))
    # One step more in the epoch than are taken: its end would run an evaluation.
    args = build_parser().parse_args(training_argv(check, steps + 1, out))
    train_data, valid_data = load_corpus(args, with_dialogues=True)
    started = time.perf_counter()
    trainer = Trainer(
        config_from_args(args), SelectionData.from_pairs(*train_data), SelectionData.from_pairs(*valid_data), out
    )
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
        result["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)


def run_train(argv: list[str], folder: Path, name: str, seconds: float) -> dict:
    """``sys.executable -m train ARGV`` from the checkout, its output in ``folder/name.out`` and ``.err``, killed after
    ``seconds``: its exit code (or None), wall time and the JSON it printed last, if any."""
    started = time.perf_counter()
    with open(folder / f"{name}.out", "w") as stdout, open(folder / f"{name}.err", "w") as stderr:
        try:
            code = subprocess.run(
                [sys.executable, "-m", "train", *argv], cwd=ROOT, stdout=stdout, stderr=stderr, timeout=seconds
            ).returncode
        except subprocess.TimeoutExpired:
            code = None
    report = {"exit_code": code, "seconds": round(time.perf_counter() - started, 1)}
    if code is None:
        report["killed"] = f"after its {seconds:.0f} s"
    text = (folder / f"{name}.out").read_text(encoding="utf-8", errors="replace")
    last = text[text.rfind("\n{") + 1 :]  # the commands print their report last, indented, from a line "{"
    with contextlib.suppress(ValueError):
        report["printed"] = json.loads(last)
    if code != 0:
        tail = (folder / f"{name}.err").read_text(encoding="utf-8", errors="replace").splitlines()[-5:]
        logger.warning("%s exited with %s; its stderr ends:\n%s", name, code, "\n".join(tail))
    return report


def training(check: Check, result: dict, ends: float) -> None:
    """A short run of the release recipe from the checkpoint, ``python -m train train`` in a subprocess: the steps
    that fit half of the section's time at train_speed's rate (at most --train-steps), its ``--max-minutes`` guard at
    60 % (or --train-minutes); then its Gaussian, fitted on --fit-pairs training pairs with the float16 weights. If the run stopped
    before writing its checkpoint, its last state is fitted with ``python -m train fit``. The weights come back in
    parts (:func:`pack_weights`), the run's log and the checkpoint's other files in training.tar.gz."""
    from density_metric.checkpoint_format import CONFIG_FILE, DensityConfig
    from density_metric.checkpoint_sources import resolve_checkpoint
    from train.config import flag_of

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
    result["train"] = run_train(argv, run, "train", ends - time.monotonic() - reserve)
    checkpoint, state = run / "run" / "checkpoint", run / "run" / "state"
    if not (checkpoint / CONFIG_FILE).is_file() and state.is_dir() and ends - time.monotonic() > 2 * reserve:
        pair_format = DensityConfig.from_file(resolve_checkpoint(args.checkpoint).path / CONFIG_FILE).pair_format
        fit = ["fit", "--encoder", str(state), "--out", str(checkpoint), "--weights-dtype", "float16"]
        fit += ["--data-dir", str(Path(args.data_dir) / "dailydialog"), "--limit", str(args.fit_pairs)]
        fit += [
            text
            for field in dataclasses.fields(pair_format)
            for text in (flag_of(field.name), str(getattr(pair_format, field.name)))
        ]
        result["fit_of_last_state"] = run_train(fit, run, "fit", ends - time.monotonic() - reserve)
    if (run / "run" / "log.jsonl").is_file():
        result["steps_taken"], taken = step_seconds(run / "run" / "log.jsonl")
        if taken:
            result["median_seconds_per_step"] = round(statistics.median(taken), 4)
    logs = [*run.glob("*.out"), *run.glob("*.err"), run / "run" / "log.jsonl"]
    with tarfile.open(out / TRAINING_TAR, "w:gz") as tar:  # not state/ nor best/: weights and optimizer, 100s of MB
        for path in [*logs, *(path for path in checkpoint.glob("*") if path.name != WEIGHTS)]:
            if path.is_file():
                tar.add(path, arcname=str(path.relative_to(run)))
    if (checkpoint / CONFIG_FILE).is_file():
        result["weights"] = pack_weights(checkpoint / WEIGHTS, out)
    else:
        raise RuntimeError("the run wrote no checkpoint: see training.tar.gz")


SECTIONS = {"versions": versions, "scoring_speed": scoring_speed, "batch_invariance": batch_invariance}
SECTIONS.update(train_speed=train_speed, training=training)
# The share of --deadline-s by which each section must be done (versions: only the deadline itself).
ENDS_BY = {"versions": 1.0, "scoring_speed": 0.25, "batch_invariance": 0.37, "train_speed": 0.47, "training": 1.0}


# ------------------------------------------------------------------------------------- weights in parts


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pack_weights(weights: Path, out: Path) -> dict:
    """``weights`` split into ``model.safetensors.partK`` files of at most :data:`PART_BYTES` in ``out``, and
    ``SHA256SUMS`` (sha256sum's format: the whole file's sum, then each part's) written last. A ValueError where
    the parts would not all come back (:data:`MOST_PARTS`)."""
    data = weights.read_bytes()
    parts = [data[start : start + PART_BYTES] for start in range(0, len(data), PART_BYTES)]
    if len(parts) > MOST_PARTS:
        raise ValueError(f"{weights}: {len(data):,} bytes make {len(parts)} parts; at most {MOST_PARTS} come back")
    sums = [f"{sha256(data)}  {WEIGHTS}"]
    for index, part in enumerate(parts):
        (out / f"{WEIGHTS}.part{index}").write_bytes(part)
        sums.append(f"{sha256(part)}  {WEIGHTS}.part{index}")
    (out / SUMS).write_text("\n".join(sums) + "\n", encoding="utf-8")
    return {"bytes": len(data), "parts": len(parts), "sha256": sha256(data)}


def reassemble(folder: str | Path, into: str | Path) -> Path:
    """``model.safetensors`` rebuilt in ``into`` from the parts in ``folder`` (:func:`pack_weights`), each part and
    the whole checked against ``SHA256SUMS``; a ValueError names a missing or damaged file. Returns its path."""
    folder = Path(folder)
    sums = {}
    for line in filter(str.strip, (folder / SUMS).read_text(encoding="utf-8").splitlines()):
        digest, name = line.split(maxsplit=1)
        sums[name.lstrip("*")] = digest  # sha256sum marks a file read in binary mode with a '*'
    if WEIGHTS not in sums:
        raise ValueError(f"{folder / SUMS}: no sum of {WEIGHTS}")
    names = sorted((name for name in sums if name != WEIGHTS), key=lambda name: int(name.rsplit("part", 1)[1]))
    data = b""
    for name in names:
        if not (folder / name).is_file():
            raise ValueError(f"{folder / name}: missing")
        part = (folder / name).read_bytes()
        if sha256(part) != sums[name]:
            raise ValueError(f"{folder / name}: sha256 {sha256(part)} is not {sums[name]} ({SUMS})")
        data += part
    if sha256(data) != sums[WEIGHTS]:
        raise ValueError(f"the parts in {folder} make sha256 {sha256(data)}, not {sums[WEIGHTS]} ({SUMS})")
    Path(into).mkdir(parents=True, exist_ok=True)
    (Path(into) / WEIGHTS).write_bytes(data)
    return Path(into) / WEIGHTS


def reassemble_command(argv: list[str]) -> None:
    """``reassemble FROM INTO``: training.tar.gz unpacked into INTO (the run's logs, ``run/checkpoint/`` without
    its weights), then the weights rebuilt into ``INTO/run/checkpoint``: a checkpoint that DensityScorer loads."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.device_check reassemble")
    parser.add_argument("source", type=Path, help="the folder the device check's files came back to")
    parser.add_argument("into", type=Path, help="a folder to unpack the run into")
    args = parser.parse_args(argv)
    try:
        with tarfile.open(args.source / TRAINING_TAR) as tar:
            tar.extractall(args.into, filter="data")
        print(reassemble(args.source, args.into / "run" / "checkpoint"))
    except (ValueError, OSError, tarfile.TarError) as err:
        parser.exit(2, f"error: {err}\n")


# ------------------------------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks.device_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="the folder that comes back ($OUT on a lent machine)")
    parser.add_argument("--deadline-s", type=float, default=480.0, help="seconds the whole check may take (480)")
    parser.add_argument("--data-dir", default="../shared/data", help="folder with dailydialog/ (../shared/data)")
    parser.add_argument("--checkpoint", default=None, help="the checkpoint to measure and train from (the bundled)")
    parser.add_argument("--work", type=Path, help="folder for the training runs (default: a new temporary one)")
    parser.add_argument("--commit", default="", help="the commit the tree was sent from, in case no .git travels")
    parser.add_argument("--peak-tflops", type=float, default=790.0, help="bf16 dense peak of the GPU, for the floor")
    parser.add_argument(
        "--train-minutes",
        type=float,
        help="the training run's --max-minutes guard (default: 60 %% of the training section's time)",
    )
    parser.add_argument("--tiny", action="store_true", help="rehearsal counts (a CPU and a tiny checkpoint)")
    counts = parser.add_argument_group("scale (defaults: the device's, or the rehearsal's with --tiny)")
    for name, (device, tiny) in SCALES.items():
        counts.add_argument("--" + name.replace("_", "-"), type=type(device), help=f"{device} (--tiny: {tiny})")
    args = parser.parse_args(argv)
    for name, scales in SCALES.items():
        if getattr(args, name) is None:
            setattr(args, name, scales[args.tiny])
    if not args.deadline_s > 0:
        parser.error(f"--deadline-s must be positive, got {args.deadline_s}")
    if args.out.is_file():
        parser.error(f"--out {args.out}: a file, not a folder")
    return args


def missing_packages() -> list[str]:
    """One line per module of :data:`REQUIRED` that does not import, with the reason."""
    missing = []
    for name in (*REQUIRED, *TRAINING_ONLY):
        try:
            importlib.import_module(name)
        except Exception as err:  # an ImportError, or a package that breaks while importing
            missing.append(f"{name}: {type(err).__name__}: {err}")
    return missing


def run_section(check: Check, name: str) -> str:
    """Run one section inside its time: its status, its numbers left in the report as it measured them."""
    result = check.report["sections"][name]
    ends = check.started + ENDS_BY[name] * check.args.deadline_s
    seconds = min(ends - time.monotonic(), check.left())
    if seconds < 1:
        return f"skipped: deadline ({max(seconds, 0):.1f} s of its time left)"
    logger.info("%s: up to %.0f s", name, seconds)
    started = time.monotonic()
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        SECTIONS[name](check, result, started + seconds)
        status = "measured"
    except SectionTimeout:
        status = "stopped: deadline (what it measured before is kept)"
    except Exception as err:
        logger.error("%s failed:\n%s", name, traceback.format_exc())
        status = f"failed: {type(err).__name__}: {err}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    result["seconds"] = round(time.monotonic() - started, 1)
    return status


def main(argv: list[str] | None = None) -> int:
    started = time.monotonic()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["reassemble"]:
        reassemble_command(argv[1:])
        return 0
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(name)s: %(message)s",
        handlers=[logging.StreamHandler(), logging.FileHandler(args.out / LOG)],
    )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a lent machine reaches nothing: never wait on the Hub
    # A hang past the deadline prints every thread's stack and ends the process, before the command's limit.
    faulthandler.dump_traceback_later(args.deadline_s + 30, exit=True)
    work = args.work or Path(tempfile.mkdtemp(prefix="device-check-"))
    work.mkdir(parents=True, exist_ok=True)
    report = {"command": ["python3", "-m", "benchmarks.device_check", *argv], "deadline_s": args.deadline_s}
    report["sections"] = {name: {"status": "pending"} for name in SECTIONS}
    check = Check(args, started, report, work)
    check.save()
    logger.info("work folder %s; deadline %.0f s", work, args.deadline_s)
    missing = missing_packages()
    for line in missing:
        logger.error("missing package %s", line)
    report["missing_packages"] = missing
    missing = [line for line in missing if line.split(":")[0] not in TRAINING_ONLY]
    for name in SECTIONS:
        if missing:
            status = "skipped: missing packages " + ", ".join(line.split(":")[0] for line in missing)
        else:
            status = run_section(check, name)
        report["sections"][name]["status"] = status
        logger.info("%s: %s", name, status)
        check.save()
        gc.collect()
        if "torch" in sys.modules and sys.modules["torch"].cuda.is_available():
            sys.modules["torch"].cuda.empty_cache()  # the training subprocess needs the memory, not this cache
    faulthandler.cancel_dump_traceback_later()
    report["finished"] = True
    check.save()
    print(json.dumps(report, indent=1))  # last, for a reply that carries only the end of the output
    failed = missing or any(section["status"].startswith("failed") for section in report["sections"].values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
