"""One command for a whole training run on a GPU machine: a named recipe trained for its schedule, its Gaussian
fitted on every training gold, the meta-evaluation on the sets that travel, the float16 weights when asked.

    python3 -m benchmarks.device_train paper --out "$OUT" --data-dir .carry/data --deadline-s 500 \\
        --start .carry/backbone --commit COMMIT [--bring-weights] [--then release]
    python3 -m benchmarks.device_train reassemble FILES_AT INTO

Recipes: benchmarks/device_recipes.py (``paper``, ``release``, ``paper-64``). Sections, in order (:data:`SECTIONS`):

1. ``versions``: python, torch, CUDA, the GPU and the packages, the commit (as in benchmarks/device_check.py);
1b. ``profile``, only with ``--profile-steps N``: N steps of the recipe under ``torch.profiler``, in this process
   (the wall, GPU-busy and host-operator time a step, the operators that take most);
2. ``train``: ``python -m train train`` with the recipe from ``--start`` (a backbone folder, or a checkpoint for a
   recipe that starts from one), its ``--max-minutes`` guard at the section's end; one evaluation per epoch, the
   kept model as the recipe selects; the run fits its Gaussian on every training gold (on the GPU where there is one)
   when its schedule ends;
3. ``fit``: where the guard stopped the run first, ``python -m train fit`` of its kept model (best/, or its last
   state) on every training gold;
3b. ``then``, only with ``--then RECIPE`` (a recipe that starts from a checkpoint): that recipe trained from the fitted
   checkpoint of 2-3 and fitted likewise, in ``--then-s`` seconds; the sections below then measure and bring back
   this second stage's checkpoint, and the first stage's files come back under ``first/`` in the tar (no weights
   of intermediate stages travel);
4. ``human_correlation``: ``benchmarks.human_correlation`` (in this process) of the checkpoint on every judgment set in
   ``--data-dir`` (protocols full, paper and dev; no baselines), with the DailyDialog probes;
5. ``corpus_probes``: ``benchmarks.corpus_probes`` (in this process) on the corpora in ``--data-dir``;
6. ``weights``: with ``--bring-weights``, the checkpoint's float16 weights in parts under 16 MiB and their sha256.

Each section has its seconds at the end of the deadline (:data:`SCALES`' ``*_s``; the training run gets the rest),
so a long run never eats the evaluation. ``device_train.json`` is rewritten atomically after every section, with
each one's status (``measured``, ``skipped: ...``, ``stopped: ...``, ``failed: ...``; a failed section does not stop
the next), and ``training.tar.gz`` after every stage (the run's log and output, the checkpoint but its weights, the
evaluations' reports and per-row scores). ``--dry-run`` checks the commands (the train command's flags through
train's own parser) and records them without running them. On CPU: ``--tiny`` (tests/benchmarks/test_device_train.py).
docs/gpu.md says how to run it.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import logging
import sys
import time
from pathlib import Path

from density_metric.checkpoint.format import CONFIG_FILE

from .device_commands import ended, parsed_train_args, shown, train_argv
from .device_profile import profile
from .device_recipes import RECIPES
from .device_sections import (
    TRAINING_TAR,
    WEIGHTS,
    SectionRun,
    add_run_arguments,
    check_run_arguments,
    fit_argv,
    pack_weights,
    run_command,
    run_files,
    run_module,
    tar_files,
    versions,
)
from .train_summary import evaluation_summary, probe_summary, training_summary

logger = logging.getLogger("device_train")
REPORT, LOG = "device_train.json", "device_train.log"
PROG = "python3 -m benchmarks.device_train"

# Each setting at device scale and at rehearsal scale (--tiny); a flag given on the command line wins. The *_s are
# the seconds each section after the training run may take, counted back from the deadline.
SCALES = {
    "train_limit": (0, 240),  # --limit: 0, every training and validation pair
    "steps_per_epoch": (-1, 10),  # --max-steps-per-epoch; -1: the recipe's
    "epochs": (0, 2),  # 0: the recipe's
    "batch_size": (0, 4),  # contexts a step; 0: the recipe's
    "valid_limit": (2000, 24),
    "valid_fit_pairs": (4000, 64),
    "fit_batch_size": (256, 64),
    "mixed_precision": ("auto", "no"),
    "meta_limit": (0, 30),  # human_correlation --limit: 0, every row
    "probes": (500, 12),
    "histogram_pairs": (1000, 12),
    "train_start_s": (30.0, 5.0),  # what the run takes before its guard's clock starts
    "fit_s": (60.0, 25.0),
    "human_correlation_s": (75.0, 45.0),
    "corpus_probes_s": (30.0, 25.0),
    "weights_s": (10.0, 5.0),
    "then_s": (180.0, 70.0),  # with --then: the second stage's run and its fit
    "profile_s": (60.0, 40.0),  # with --profile-steps: the profile, before the training run
    "profile_warm_up": (10, 2),
    "profile_pairs": (4000, 240),
}
CORPUS_PROBES = ("dailydialog", "self_dialogue")  # those of benchmarks.corpus_probes that read a folder of --data-dir


@dataclasses.dataclass
class TrainRun(SectionRun):
    """One run of the command: its arguments, clock, report and work folder (``training/``, ``meta/`` in it)."""

    report_file, log_file = REPORT, LOG
    ends: dict[str, float] = dataclasses.field(default_factory=dict)  # each section's end (:func:`section_ends`)

    @property
    def training(self) -> Path:
        """The last stage's folder: its checkpoint is the one evaluated and brought back."""
        return self.work / "training"

    @property
    def checkpoint(self) -> Path:
        return self.training / "run" / "checkpoint"

    @property
    def first(self) -> Path:
        """The recipe's own stage: ``training/``, or ``first/`` where ``--then`` trains a second stage from it."""
        return self.work / "first" if self.args.then else self.training

    def bring_back(self) -> None:
        """training.tar.gz rewritten: the last stage's files (:func:`run_files`: ``run/checkpoint/`` and the logs, as
        the device check's, so that ``reassemble`` rebuilds it), the first stage's under ``first/`` where there are
        two, and the evaluations' outputs (``meta/``)."""
        meta = sorted(path for path in (self.work / "meta").rglob("*") if path.is_file())
        stages = run_files(self.first) if self.args.then else []
        tar_files(
            Path(self.args.out) / TRAINING_TAR,
            {self.training: run_files(self.training), self.work: [*meta, *stages]},
        )


# ------------------------------------------------------------------------------------------ the commands


def meta_argv(run: TrainRun, module: str) -> list[str]:
    """``python -m benchmarks.MODULE`` arguments for the run's checkpoint, into ``meta/MODULE``."""
    args = run.args
    argv = ["--checkpoint", str(run.checkpoint), "--data-dir", args.data_dir]
    argv += ["--out", str(run.work / "meta" / module)]
    if module == "human_correlation":
        argv += ["--no-baselines", "--protocols", "full", "paper", "dev", "--probes", str(args.probes)]
        argv += ["--histogram-pairs", str(args.histogram_pairs)]
        return argv + (["--limit", str(args.meta_limit)] if args.meta_limit else [])
    corpora = [name for name in CORPUS_PROBES if (Path(args.data_dir) / name).is_dir()]
    return argv + ["--corpora", *corpora, "--probes", str(args.probes)]


# ----------------------------------------------------------------------------------------------- sections


def train(run: TrainRun, result: dict, ends: float) -> str | None:
    """The recipe's run, guarded at this section's end; the subprocess may run on into the fit's time, to fit."""
    args = run.args
    return train_stage(run, result, args.recipe, args.start, run.first, ends, run.ends["fit"] - 2, check_start=True)


def train_stage(
    run: TrainRun,
    result: dict,
    recipe: str,
    start: str,
    folder: Path,
    guard_end: float,
    kill_at: float,
    check_start: bool = False,
) -> str | None:
    """``python -m train train`` of ``recipe`` from ``start`` into ``folder/run``, its --max-minutes guard at
    ``guard_end`` (less the run's imports and data: --train-start-s), killed at ``kill_at`` (past the guard, its own
    fit); the run's summary into ``result``. ``check_start``: the data and ``start`` folders checked first, dry
    run or not."""
    args = run.args
    # The guard counts from the trainer's start, after the run's imports and data: those seconds come off it.
    minutes = args.train_minutes or max(guard_end - time.monotonic() - args.train_start_s, 1) / 60
    argv = train_argv(args, folder / "run", minutes, recipe, start)
    result["command"] = shown("train", argv)
    # A flag that does not exist fails here, in seconds, dry run or not; a dry run's second stage starts from a
    # checkpoint that is not there yet, so its recipe is not checked against it.
    parsed = parsed_train_args(argv, check_config=check_start or not args.dry_run)
    folders = (("--data-dir", Path(args.data_dir) / "dailydialog"), ("--start", Path(start))) if check_start else ()
    for flag, path in folders:
        if not path.is_dir() and not (flag == "--start" and start in ("default", "minilm")):
            raise ValueError(f"{flag}: no folder {path}")
    result["contexts_per_step"] = parsed.batch_size * parsed.grad_accum
    if args.dry_run:
        return "skipped: dry run"
    folder.mkdir(parents=True, exist_ok=True)
    run.save()
    result["train"] = run_module("train", argv, folder, "train", kill_at - time.monotonic())
    log = folder / "run" / "log.jsonl"
    if log.is_file():
        result.update(training_summary(log, result["contexts_per_step"]))
    run.bring_back()
    if result["train"]["exit_code"] != 0:
        raise RuntimeError(f"python -m train train {ended(result['train'])}: see training.tar.gz")
    stopped = result["train"].get("printed", {}).get("stopped")
    if stopped:
        return f"stopped: its --max-minutes guard, at step {stopped['global_step']} (epoch {stopped['epoch']})"
    return None


def fit(run: TrainRun, result: dict, ends: float) -> str | None:
    """Nothing where the run fitted its checkpoint; else ``python -m train fit`` of its kept model."""
    printed = run.report["sections"]["train"].get("train", {}).get("printed", {})
    return fit_stage(run, result, run.args.recipe, run.first, printed, ends)


def fit_stage(
    run: TrainRun,
    result: dict,
    recipe: str,
    folder: Path,
    printed: dict,
    ends: float,
    start: str | None = None,
    key: str = "command",
) -> str | None:
    """Where the run of ``recipe`` (from ``start``) in ``folder`` fitted no checkpoint (``printed``: what it
    printed), ``python -m train fit`` of its kept model (best/, or its last state) into ``folder/run/checkpoint``,
    by ``ends``; its command under ``key`` of ``result``."""
    args, checkpoint = run.args, folder / "run" / "checkpoint"
    if (checkpoint / CONFIG_FILE).is_file() and "fit" in printed:
        result.update(by="python -m train train, after its schedule", **printed["fit"])
        return None
    run_folder = folder / "run"
    encoder = next(
        (run_folder / name for name in ("best", "state") if (run_folder / name).is_dir()), run_folder / "best"
    )
    parsed = parsed_train_args(train_argv(args, run_folder, 1, recipe, start))
    argv = fit_argv(encoder, checkpoint, Path(args.data_dir) / "dailydialog", parsed.config.pair_format)
    argv += ["--dailydialog-train", parsed.dailydialog_train, "--batch-size", str(args.fit_batch_size)]
    argv += ["--name", f"density-minilm-{recipe}"]
    result[key] = shown("train", argv)
    if args.dry_run:
        return "skipped: dry run (the run's own fit, or this one where its guard stops it first)"
    if not encoder.is_dir():
        raise RuntimeError(f"the run left neither best/ nor state/ in {run_folder}: nothing to fit")
    result["fit"] = run_module("train", argv, folder, "fit", ends - time.monotonic() - 2)
    run.bring_back()
    if result["fit"]["exit_code"] != 0:
        raise RuntimeError(f"python -m train fit {ended(result['fit'])}: see training.tar.gz")
    result.update(by=f"python -m train fit of {encoder.name}/", **result["fit"].get("printed", {}))
    return None


def then(run: TrainRun, result: dict, ends: float) -> str | None:
    """With ``--then RECIPE``: that recipe from the first stage's fitted checkpoint, guarded --fit-s before this
    section's end, and fitted (by its own run, or by ``python -m train fit`` where its guard stopped it first)."""
    args = run.args
    start = run.first / "run" / "checkpoint"
    if not args.dry_run and not (start / CONFIG_FILE).is_file():
        raise RuntimeError(f"no fitted checkpoint of the first stage in {start} (see train and fit)")
    if not args.dry_run:
        aside = set_aside_stale_stage(run.training, start)
        if aside is not None:
            result["earlier_stage"] = aside
    status = train_stage(run, result, args.then, str(start), run.training, ends - args.fit_s, ends - 2)
    if args.dry_run:  # its fit's command needs the first stage's checkpoint (its pair format)
        return status
    printed = result["train"].get("printed", {})
    fitted = fit_stage(run, result, args.then, run.training, printed, ends, str(start), "fit_command")
    return status or fitted


def set_aside_stale_stage(folder: Path, start: Path) -> str | None:
    """Where ``folder`` holds a second stage that an earlier call (the same ``--work``) began from other weights of
    ``start`` (its first stage trained on since, and was fitted again), that stage renamed ``folder.earlier-N``: a
    run refuses to resume from other start weights (density_train.loop.state.check_same_start), so this call's second
    stage starts afresh. A state that cannot be read is set aside too. What was done, or None."""
    from density_train.loop.state import STATE_FILE, recover_state, start_summary

    if not (folder / "run").is_dir():
        return None
    state = recover_state(folder / "run") / STATE_FILE  # a stop between a save's two renames, undone as a run would
    if not state.is_file():
        return None
    try:
        began = json.loads(state.read_text(encoding="utf-8")).get("data", {}).get("start_sha256")
    except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as err:
        why = f"its {state.name} cannot be read ({type(err).__name__})"
    else:
        if began is None or began == start_summary(start)["start_sha256"]:
            return None
        why = f"began from other weights of {start} ({began}) in an earlier call"
    number = 1
    while (aside := folder.with_name(f"{folder.name}.earlier-{number}")).exists():
        number += 1
    folder.rename(aside)
    return f"{folder} {why}: moved to {aside}"


def meta_section(module: str, summary):
    """The section that runs ``benchmarks.MODULE``'s main on the checkpoint, in this process (torch and the rest are
    imported already: a subprocess would import them again), and lifts ``summary`` of its JSON."""

    def section(run: TrainRun, result: dict, ends: float) -> str | None:
        argv = meta_argv(run, module)
        result["command"] = shown(f"benchmarks.{module}", argv)
        if run.args.dry_run:
            return "skipped: dry run"
        if not (run.checkpoint / CONFIG_FILE).is_file():
            raise RuntimeError(f"no checkpoint to evaluate in {run.checkpoint} (see train and fit)")
        (run.work / "meta").mkdir(exist_ok=True)
        try:
            importlib.import_module(f"benchmarks.{module}").main(argv)
        except SystemExit as err:  # its argparse's error: one line in the log, above
            raise RuntimeError(f"benchmarks.{module} exited with {err.code}") from None
        finally:
            run.bring_back()
        result.update(summary(run.work / "meta" / module / f"{module}.json"))
        return None

    section.__doc__ = f"``python -m benchmarks.{module}`` of the run's checkpoint."
    return section


def weights(run: TrainRun, result: dict, ends: float) -> str | None:
    """The checkpoint's weights in parts, with --bring-weights only; with --ship-dev-spearman too, only where the
    device's own evaluation passes the pre-check of the ship rule (:func:`ship_precheck`)."""
    if not run.args.bring_weights:
        return "skipped: not asked (--bring-weights)"
    if run.args.dry_run:
        return "skipped: dry run"
    if run.args.ship_dev_spearman is not None:
        result["ship_precheck"] = ship_precheck(run.report["sections"]["human_correlation"], run.args.ship_dev_spearman)
        if not result["ship_precheck"]["passes"]:
            return "skipped: the evaluation does not pass the ship pre-check (--ship-dev-spearman)"
    result.update(pack_weights(run.checkpoint / WEIGHTS, Path(run.args.out)))
    return None


def ship_precheck(evaluation: dict, dev_spearman: float) -> dict:
    """Whether the meta-evaluation's summary keeps the probes' floors and beats ``dev_spearman`` (the bundled model's
    DailyDialog-Zhao ``dev`` Spearman): the part of the ship rule the device can judge alone (the paired test of
    the rule needs the bundled model's scores, made after the weights are back)."""
    found = evaluation.get("sets", {}).get("dailydialog_zhao", {}).get("dev", {}).get("spearman")
    probes = bool(evaluation.get("probes_hold"))
    return {
        "dev_spearman": found,
        "to_beat": dev_spearman,
        "probes_hold": probes,
        "passes": probes and found is not None and found > dev_spearman,
    }


SECTIONS = {
    "versions": versions,
    "train": train,
    "fit": fit,
    "human_correlation": meta_section("human_correlation", evaluation_summary),
    "corpus_probes": meta_section("corpus_probes", probe_summary),
    "weights": weights,
}


def planned(args: argparse.Namespace) -> dict:
    """The sections of a run, in order: :data:`SECTIONS`, with ``profile`` before the training run where
    ``--profile-steps`` is given and ``then`` after the fit where ``--then`` is; with ``--profile-only``, versions
    and the profile alone."""
    if args.profile_only:
        return {"versions": SECTIONS["versions"], "profile": profile}
    names = list(SECTIONS)
    if args.then:
        names.insert(names.index("fit") + 1, "then")
    if args.profile_steps:
        names.insert(names.index("train"), "profile")
    return {name: {**SECTIONS, "then": then, "profile": profile}[name] for name in names}


def plan(run: TrainRun) -> dict:
    """Every section and its end (:func:`section_ends`), kept on ``run`` for the training run's timeout."""
    run.ends = section_ends(run)
    return {name: (section, run.ends[name]) for name, section in planned(run.args).items()}


def section_ends(run: TrainRun) -> dict[str, float]:
    """When each section must end (``time.monotonic()``): those after the training run their seconds (``--fit-s``
    and so on) before the deadline, counted back from it; the training run the rest; versions by the deadline."""
    if run.args.profile_only:  # the whole deadline
        return {"versions": run.at(1.0), "profile": run.at(1.0)}
    names = list(planned(run.args))
    ends, end = {"versions": run.at(1.0)}, run.at(1.0)
    later = {name: getattr(run.args, f"{name}_s") for name in names[names.index("train") + 1 :]}
    for name in reversed(list(later)):
        ends[name], end = end, end - later[name]
    ends["train"] = end
    if "profile" in names:  # its seconds from the start, the training run's from what is left
        ends["profile"] = min(run.started + run.args.profile_s, end)
    return {name: ends[name] for name in names}


# -------------------------------------------------------------------------------------------------- main


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("recipe", choices=RECIPES, help="; ".join(f"{k}: {r.description}" for k, r in RECIPES.items()))
    add_run_arguments(parser, SCALES, 500.0)
    parser.add_argument("--data-dir", default="../shared/data", help="folder with dailydialog/ and the judgment sets")
    parser.add_argument(
        "--start",
        help="the backbone folder (default .carry/backbone) or, for a recipe that starts from a checkpoint, the "
        "checkpoint (default: the bundled one)",
    )
    parser.add_argument("--bring-weights", action="store_true", help="write the fitted weights in parts to --out")
    parser.add_argument(
        "--ship-dev-spearman",
        type=float,
        help="with --bring-weights: only where the probes hold their floors and DailyDialog-Zhao's dev Spearman is "
        "above this (the bundled model's: 55.82)",
    )
    parser.add_argument(
        "--then",
        choices=[name for name, recipe in RECIPES.items() if recipe.starts_from == "checkpoint"],
        help="a second stage: this recipe from the first's fitted checkpoint, in --then-s seconds before the "
        "meta-evaluation, which then measures (and --bring-weights brings back) the second stage's checkpoint; the "
        "scale flags (--batch-size, --epochs, ...) and the flags after -- apply to both stages",
    )
    parser.add_argument("--train-minutes", type=float, help="the run's --max-minutes (default: its section's time)")
    parser.add_argument(
        "--profile-steps", type=int, default=0, help="profile this many steps of the first stage before it (0: none)"
    )
    parser.add_argument(
        "--profile-only",
        action="store_true",
        help="with --profile-steps: the profile alone, in the whole deadline, no training run (e.g. to profile a "
        "train flag given after --, such as --compile inductor)",
    )
    parser.add_argument(
        "--profile-recipes",
        nargs="+",
        choices=RECIPES,
        help="with --profile-steps: the recipes to profile, each from --start (default: the run's)",
    )
    parser.add_argument("--dry-run", action="store_true", help="check and record the commands, run none")
    split = argv.index("--") if "--" in argv else len(argv)  # after "--": flags for python -m train train
    args = parser.parse_args(argv[:split])
    args.train_args = argv[split + 1 :]
    check_run_arguments(parser, args, SCALES)
    if args.then and args.train_minutes:
        parser.error("--train-minutes guards the first stage alone: not with --then")
    if (args.profile_recipes or args.profile_only) and not args.profile_steps:
        parser.error("--profile-recipes and --profile-only need --profile-steps")
    if args.profile_only and args.then:
        parser.error("--profile-only trains no stage: not with --then")
    if args.profile_steps and args.profile_warm_up < 1:
        parser.error(f"--profile-warm-up must be at least 1, got {args.profile_warm_up}")
    if args.start is None:
        args.start = ".carry/backbone" if RECIPES[args.recipe].starts_from == "backbone" else "default"
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    return run_command(argv, PROG, parse_args, TrainRun, plan, shown=("recipe", "dry_run"))


if __name__ == "__main__":
    sys.exit(main())
