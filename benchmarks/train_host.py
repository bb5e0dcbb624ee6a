"""The training loop's own work: host time per context of the loop at a baseline commit and of this tree's, in one run.

    python -m benchmarks.train_host --json benchmarks/train_host_cpu.json

The model costs almost nothing here: a random 2-layer, 32-wide BERT (2 heads, 128 intermediate) over the bundled
checkpoint's real 30,522-piece tokenizer. Each arm is a fresh ``Trainer`` in a process of its own (``--threads``
threads) with the paper's recipe: 16 DailyDialog contexts x (1 gold + 15 random negatives) a step, ``max_length``
256, float32, drawn from a seeded sample of ``--train-pairs`` training pairs. ``today`` runs the training and
``density_metric`` packages of ``--baseline`` (``git archive`` into a scratch folder); ``new`` runs this tree's.

Measured, per arm, over ``--steps`` steps after ``--warm-up`` steps: the **step's wall time**, from one optimizer
step's end to the next one's (everything the loop does for a step: draws, tokenising or gathers, the model, the
losses, the optimizer, the log), and in the same step the **model's time**, the time the loop's thread spends in
the model's forward pass, the two losses, the backward pass, gradient clipping and the optimizer step (timers around
those calls). **Host time** is their difference, the median over the steps: what the loop's thread does besides the model and
the optimizer, which a GPU would leave on the critical path (work a background thread does while the model runs is
not in it; waiting for that thread is). Both come from the same steps, so the model's share, which a busy machine
slows most, is taken out; on a busy machine a step's host time still catches the moments the thread was taken off
the CPU, so the same is reported with the thread's CPU time (``time.thread_time``) in place of wall time. The state's saves are switched off in both arms. Arms alternate for ``--rounds``
rounds; each keeps its round of least host time.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from .command_line import check_counts, check_dailydialog, check_output

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "311e5ec"  # the last commit whose loop tokenised its candidates every step
CONTEXTS = 16


def build_encoder(directory: Path) -> None:
    """The random 2-layer, 32-wide BERT with the bundled checkpoint's tokenizer, saved to ``directory``."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    tokenizer = AutoTokenizer.from_pretrained(ROOT / "density_metric" / "default")
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=512,
    )
    BertModel(config, add_pooling_layer=False).save_pretrained(directory)
    tokenizer.save_pretrained(directory)


def training_modules(tree: Path) -> dict:
    """The modules the worker reads, from ``tree``'s own training package, never from an install: the flat
    ``train/`` of the commits before its concept folders, else ``train/`` loaded as ``density_train``."""
    if (tree / "train" / "loop.py").exists():
        names = {
            "recipe": "train.config",
            "corpora": "train.corpora",
            "examples": "train.data",
            "trainer": "train.loop",
        }
    else:
        spec = importlib.util.spec_from_file_location(
            "density_train", tree / "train" / "__init__.py", submodule_search_locations=[str(tree / "train")]
        )
        sys.modules["density_train"] = package = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(package)
        names = {
            "recipe": "density_train.config.recipe",
            "corpora": "density_train.data.corpora",
            "examples": "density_train.data.examples",
            "trainer": "density_train.loop.trainer",
        }
    return {key: importlib.import_module(name) for key, name in names.items()}


def worker(args) -> dict:
    """One arm, in its own process: the timings of a fresh Trainer (the module docstring)."""
    import torch

    modules = training_modules(Path.cwd())
    TrainConfig, Trainer = modules["recipe"].TrainConfig, modules["trainer"].Trainer
    load_dailydialog, response_pairs = modules["corpora"].load_dailydialog, modules["corpora"].response_pairs
    SelectionData = modules["examples"].SelectionData

    torch.set_num_threads(args.threads)
    contexts, responses = response_pairs(load_dailydialog(Path(args.data_dir) / "dailydialog", "train"))
    sample = np.sort(np.random.default_rng(0).permutation(len(contexts))[: args.train_pairs])
    train = SelectionData.from_pairs([contexts[i] for i in sample], [responses[i] for i in sample])
    valid = SelectionData.from_pairs(contexts[:64], responses[:64])
    config = TrainConfig(
        backbone=args.encoder,
        mixed_precision="no",
        validation_kinds="",
        valid_limit=16,
        epochs=1,
        max_steps_per_epoch=args.warm_up + args.steps + 1,
        save_every=10**6,
    )
    started = time.perf_counter()
    trainer = Trainer(config, train, valid, Path(args.out))
    setup = time.perf_counter() - started
    trainer.save_state = lambda: None
    # Wall and this thread's CPU seconds inside the model's calls so far; both clocks and both sums at each step's end.
    inside, stamps = [0.0, 0.0], []

    def timed(call, step_end=False):
        @functools.wraps(call)  # keeps the LR scheduler's mark on optimizer.step
        def run(*a, **k):
            wall, cpu = time.perf_counter(), time.thread_time()
            result = call(*a, **k)
            now, now_cpu = time.perf_counter(), time.thread_time()
            inside[0] += now - wall
            inside[1] += now_cpu - cpu
            if step_end:
                stamps.append((now, inside[0], now_cpu, inside[1]))
            return result

        return run

    loop = modules["trainer"]

    model = trainer.model
    model.forward = timed(model.forward)
    loop.selection_loss = timed(loop.selection_loss)  # the losses are the model's arithmetic too
    loop.supervised_contrastive_loss = timed(loop.supervised_contrastive_loss)
    trainer.accelerator.backward = timed(trainer.accelerator.backward)
    trainer.accelerator.clip_grad_norm_ = timed(trainer.accelerator.clip_grad_norm_)
    stepped = getattr(trainer, "step_optimizer", trainer.optimizer)  # the optimizer the loop's step calls
    stepped.step = timed(stepped.step, step_end=True)
    trainer.train(stop_after_steps=args.warm_up + args.steps)
    walls, models, cpus, model_cpus = (np.diff(np.array(column))[-args.steps :].tolist() for column in zip(*stamps))
    return {"setup_seconds": setup, "walls": walls, "models": models, "cpus": cpus, "model_cpus": model_cpus}


def run_arm(tree: Path, args, encoder: Path, scratch: Path, name: str) -> dict:
    """:func:`worker` in a process whose ``train`` and ``density_metric`` are those of ``tree``."""
    result = scratch / f"{name}.json"
    command = [sys.executable, "-m", "benchmarks.train_host", "--worker", str(result), "--encoder", str(encoder)]
    command += ["--out", str(scratch / f"run-{name}"), "--data-dir", str(Path(args.data_dir).resolve())]
    command += ["--train-pairs", str(args.train_pairs), "--steps", str(args.steps), "--warm-up", str(args.warm_up)]
    command += ["--threads", str(args.threads)]
    shutil.rmtree(scratch / f"run-{name}", ignore_errors=True)
    # The progress bar redraws once a minute at most: at a GPU's step rate its redraws (every 0.1 s by default) fall
    # on one step in many; here, with the model's steps of seconds, they would fall on every step.
    environment = {**os.environ, "TQDM_MININTERVAL": "60"}
    subprocess.run(command, cwd=tree, check=True, stdout=subprocess.DEVNULL, env=environment)
    found = {name: np.array(values) for name, values in json.loads(result.read_text()).items()}
    host, host_cpu = found["walls"] - found["models"], found["cpus"] - found["model_cpus"]
    return {
        "step_wall_ms": round(1000 * float(np.median(found["walls"])), 2),
        "model_ms": round(1000 * float(np.median(found["models"])), 2),
        "host_ms_per_step": round(1000 * float(np.median(host)), 3),
        "host_ms_per_context": round(1000 * float(np.median(host)) / CONTEXTS, 4),
        "host_ms_per_step_mean": round(1000 * float(host.mean()), 3),
        "host_cpu_ms_per_step": round(1000 * float(np.median(host_cpu)), 3),
        "contexts_per_second": round(CONTEXTS / float(np.median(found["walls"])), 1),
        "setup_seconds": round(float(found["setup_seconds"]), 2),
    }


def export(revision: str, folder: Path) -> None:
    """``train``, ``density_metric`` and ``benchmarks`` of ``revision``, with this script beside them."""
    folder.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "train", "density_metric", "benchmarks"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    shutil.copy(Path(__file__), folder / "benchmarks" / "train_host.py")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.train_host", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data-dir", default="../shared/data", help="folder with dailydialog/ (default: ../shared/data)"
    )
    parser.add_argument("--train-pairs", type=int, default=4000, help="seeded sample of training pairs (default: 4000)")
    parser.add_argument("--steps", type=int, default=30, help="timed steps per arm (default: 30)")
    parser.add_argument("--warm-up", type=int, default=3, help="steps before the timed ones (default: 3)")
    parser.add_argument("--rounds", type=int, default=2, help="default: 2")
    parser.add_argument("--threads", type=int, default=2, help="torch threads per arm (default: 2)")
    parser.add_argument("--baseline", default=BASELINE, help=f"the commit of arm 'today' (default: {BASELINE})")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)  # one arm: write its timings there
    parser.add_argument("--encoder", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    check_counts(parser, args, "--train-pairs", "--steps", "--warm-up", "--rounds", "--threads")
    if args.worker:
        args.worker.write_text(json.dumps(worker(args)))
        return
    if args.train_pairs // CONTEXTS < args.steps + args.warm_up + 1:
        parser.error(f"--train-pairs {args.train_pairs} gives fewer than --steps + --warm-up + 1 steps of 16 contexts")
    check_output(parser, "--json", args.json)
    check_dailydialog(parser, args.data_dir, "train")
    best: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        build_encoder(scratch / "encoder")
        export(args.baseline, scratch / "today")
        for _ in range(args.rounds):
            for name, tree in (("today", scratch / "today"), ("new", ROOT)):
                found = run_arm(tree, args, scratch / "encoder", scratch, name)
                if name not in best or found["host_ms_per_step"] < best[name]["host_ms_per_step"]:
                    best[name] = found
    from density_metric.encoding.device import machine_description

    report = {
        "machine": machine_description("cpu"),
        "command": "python -m benchmarks.train_host " + " ".join(argv if argv is not None else sys.argv[1:]),
        "baseline": args.baseline,
        "encoder": "random BERT, 2 layers, hidden 32, 2 heads, intermediate 128; the bundled 30,522-piece tokenizer",
        "recipe": "paper: 16 contexts x (1 + 15 random negatives) a step, max_length 256, max_response_length 128, "
        "float32, contrastive tau 0.1 weight 1",
        "train_pairs": f"seeded sample of {args.train_pairs} DailyDialog training pairs",
        "threads": args.threads,
        "steps": args.steps,
        "warm_up": args.warm_up,
        "rounds": args.rounds,
        "host_time": "median over the timed steps of the step's wall time (optimizer step end to optimizer step end) "
        "minus the time the loop's thread spent in that step inside the model's forward pass, the two losses "
        "(selection_loss, supervised_contrastive_loss), the backward pass, gradient clipping and the optimizer step; "
        "state saves off; the progress bar redraws once a minute at most (TQDM_MININTERVAL=60; the baseline still "
        "redraws at every step, where it sets the bar's loss)",
        "arms": best,
        "host_cpu_time": "the same with the loop thread's CPU time (time.thread_time) for the wall time: what the "
        "thread computed besides the model, without the time the machine's other work took it off the CPU",
        "host_time_ratio": round(best["today"]["host_ms_per_step"] / max(best["new"]["host_ms_per_step"], 1e-3), 1),
        "host_cpu_time_ratio": round(
            best["today"]["host_cpu_ms_per_step"] / max(best["new"]["host_cpu_ms_per_step"], 1e-3), 1
        ),
        "wall_time_ratio": round(best["today"]["step_wall_ms"] / best["new"]["step_wall_ms"], 2),
        "samples": "medians of --steps steps per arm; host_ms_per_step_mean is the mean",
    }
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
