"""The device training command (benchmarks/device_train.py, docs/gpu.md) rehearsed on CPU: the paper recipe from a
tiny random encoder for 2 epochs of 10 steps, on DailyDialog-format dialogues of the tiny vocabulary and a slice of
DailyDialog-Zhao (its judgments; skipped without ../shared), inside a deadline; its guard stop, a failing stage, and
the real-scale commands checked by a dry run."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks import device_train
from benchmarks.device_recipes import RECIPES
from benchmarks.device_sections import (
    RETURNED_FILES,
    SUMS,
    TRAINING_TAR,
    WEIGHTS,
    SectionRun,
    missing_packages,
    run_sections,
)
from benchmarks.device_train import REPORT, SECTIONS, main, parse_args, parsed_train_args, section_ends, train_argv
from density_train.config.recipe import scaled_lr

from ..tiny import build_tiny_encoder
from .test_device_check import write_dailydialog

ROOT = Path(__file__).resolve().parents[2]
ZHAO = ROOT.parent / "shared" / "data" / "zhao2020" / "dailydialog_zhao.normalized.jsonl"
TINY_FORMAT = ["--", "--max-length", "64", "--max-response-length", "24"]  # the tiny encoder has 128 positions


def device_train_command(
    tmp_path: Path, backbone: Path, data: Path, *flags: str
) -> tuple[subprocess.CompletedProcess, Path]:
    """``python -m benchmarks.device_train paper --tiny`` as a GPU machine would run it; its process and --out."""
    out = tmp_path / "out"
    command = [sys.executable, "-m", "benchmarks.device_train", "paper", "--tiny", "--start", str(backbone)]
    command += ["--data-dir", str(data), "--out", str(out), "--work", str(tmp_path / "work"), "--commit", "c0ffee"]
    completed = subprocess.run([*command, *flags], cwd=ROOT, capture_output=True, text=True, timeout=400)
    return completed, out


@pytest.fixture(scope="module")
def backbone(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("backbone") / "tiny"
    model, tokenizer = build_tiny_encoder(folder)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def dialogues(tmp_path_factory) -> Path:
    """A data folder with DailyDialog-format dialogues only."""
    data = tmp_path_factory.mktemp("dialogues") / "data"
    write_dailydialog(data / "dailydialog")
    return data


def judged_data(tmp_path: Path, dialogues: Path) -> Path:
    """A copy of the ``dialogues`` data folder with the first 60 rows of DailyDialog-Zhao as its judgment set."""
    data = tmp_path / "data"
    shutil.copytree(dialogues, data)
    (data / "zhao2020").mkdir()
    (data / "zhao2020" / ZHAO.name).write_text("".join(ZHAO.read_text(encoding="utf-8").splitlines(True)[:60]))
    return data


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory, backbone, dialogues):
    """One whole run with --bring-weights: its process, --out, --work and how long it took."""
    if not ZHAO.is_file():
        pytest.skip(f"no {ZHAO}: the rehearsal's judgment set is a slice of it")
    tmp_path = tmp_path_factory.mktemp("rehearsal")
    data = judged_data(tmp_path, dialogues)
    started = time.monotonic()
    completed, out = device_train_command(
        tmp_path, backbone, data, "--deadline-s", "300", "--bring-weights", *TINY_FORMAT
    )
    return completed, out, tmp_path / "work", time.monotonic() - started


def statuses(out: Path) -> dict:
    return {name: section["status"] for name, section in json.loads((out / REPORT).read_text())["sections"].items()}


def test_every_stage_runs_in_order_inside_the_deadline_and_the_command_exits_0(rehearsal):
    completed, out, _, seconds = rehearsal
    assert completed.returncode == 0, completed.stderr[-3000:]
    report = json.loads((out / REPORT).read_text())
    assert report["finished"] and report["recipe"] == "paper" and not report["dry_run"]
    assert statuses(out) == dict.fromkeys(SECTIONS, "measured")
    assert report["elapsed_s"] <= 300 and seconds < 300 + 30
    assert report["sections"]["versions"]["commit"] == "c0ffee"


def test_the_run_takes_the_tiny_schedule_and_fits_every_training_gold(rehearsal):
    from density_train.loop.run_log import read_log

    sections = json.loads((rehearsal[1] / REPORT).read_text())["sections"]
    train = sections["train"]
    assert (
        train["train"]["exit_code"] == 0
        and "--epochs 10" in train["command"]
        and "--epochs 2" in train["command"]
        and "--batch-size 4" in train["command"]
    )
    assert train["steps_taken"] == 20 and train["contexts_seen"] == 20 * 4 and train["contexts_per_s"] > 0
    assert [evaluation["epoch"] for evaluation in train["evaluations"]] == [0, 1]  # one after each epoch
    log = read_log(rehearsal[2] / "training" / "run" / "log.jsonl")
    assert [r["recall_at_1"] for r in log if r["type"] == "eval"] == [e["recall_at_1"] for e in train["evaluations"]]
    assert "zhao_dev_spearman" in train["evaluations"][0]  # the dev Spearman, logged with --dev-judgments
    fit = sections["fit"]
    assert (
        fit["by"].startswith("python -m train train")
        and fit["train_pairs"] == train["train"]["printed"]["fit"]["train_pairs"]
    )
    assert fit["train_pairs"] >= 200  # --limit 240 of the tiny corpus's pairs: every one of them, no --fit-pairs


def test_the_meta_evaluation_summary_is_the_reports_and_its_files_come_back(rehearsal, tmp_path):
    import tarfile

    _, out, _, _ = rehearsal
    summary = json.loads((out / REPORT).read_text())["sections"]["human_correlation"]
    with tarfile.open(out / TRAINING_TAR) as tar:
        tar.extractall(tmp_path, filter="data")
    report = json.loads((tmp_path / "meta" / "human_correlation" / "human_correlation.json").read_text())
    zhao = report["sets"]["dailydialog_zhao"]
    for protocol in ("full", "paper", "dev"):
        assert summary["sets"]["dailydialog_zhao"][protocol]["spearman"] == round(
            zhao[protocol]["DEnsity"]["spearman"], 2
        )
    echo = report["probes"]["accuracy"]["echo"]["DEnsity"]
    assert summary["probe_floors"]["echo"] == {"share": echo, "floor": 0.95}
    assert summary["probes_hold"] == (
        echo >= 0.95 and report["probes"]["accuracy"]["speaker_confused"]["DEnsity"] >= 0.92
    )
    assert (tmp_path / "meta" / "human_correlation" / "scores.safetensors").is_file()  # for paired tests here
    assert (tmp_path / "meta" / "corpus_probes" / "corpus_probes.json").is_file()
    assert (tmp_path / "run" / "log.jsonl").is_file() and (tmp_path / "train.out").is_file()


def test_what_comes_back_fits_and_the_parts_reassemble_to_the_checkpoint(rehearsal, tmp_path):
    from density_metric import DensityScorer

    _, out, work, _ = rehearsal
    returned = [path for path in out.rglob("*") if path.is_file()]
    assert len(returned) <= RETURNED_FILES and all(path.parent == out for path in returned)
    assert all(path.stat().st_size <= 16 * 2**20 for path in returned)
    fitted = (work / "training" / "run" / "checkpoint" / WEIGHTS).read_bytes()
    whole = (out / SUMS).read_text().splitlines()[0].split()
    assert whole == [hashlib.sha256(fitted).hexdigest(), WEIGHTS]
    assert main(["reassemble", str(out), str(tmp_path)]) == 0
    checkpoint = tmp_path / "run" / "checkpoint"
    assert (checkpoint / WEIGHTS).read_bytes() == fitted
    assert DensityScorer(str(checkpoint), device="cpu").score([["hi how are you"]], ["fine"]).scores.shape == (1,)


def test_a_run_stopped_by_its_guard_is_fitted_and_a_failing_stage_does_not_stop_the_next(tmp_path, backbone, dialogues):
    """The guard stops the run after its first step: fit fits its kept model. With no judgment set in --data-dir the
    meta-evaluation fails, and the corpus probes and the weights still run."""
    completed, out = device_train_command(
        tmp_path,
        backbone,
        dialogues,
        "--deadline-s",
        "200",
        "--train-minutes",
        "0.00001",
        "--bring-weights",
        *TINY_FORMAT,
    )
    assert completed.returncode == 1, completed.stderr[-3000:]
    found = statuses(out)
    assert found["train"].startswith("stopped: its --max-minutes guard, at step 1")
    assert found["fit"] == "measured" and found["human_correlation"].startswith("failed: RuntimeError")
    assert found["corpus_probes"] == found["weights"] == "measured"
    fit = json.loads((out / REPORT).read_text())["sections"]["fit"]
    assert fit["fit"]["exit_code"] == 0 and fit["by"] in (
        "python -m train fit of best/",
        "python -m train fit of state/",
    )


def test_the_real_scale_commands_parse_with_trains_own_parser(backbone, tiny_mean_pooled_checkpoint, tmp_path):
    for recipe in RECIPES:
        start = backbone if RECIPES[recipe].starts_from == "backbone" else tiny_mean_pooled_checkpoint
        args = parse_args([recipe, "--out", str(tmp_path), "--start", str(start)])
        argv = train_argv(args, tmp_path / "run", 5.0)
        parsed = parsed_train_args(argv)  # every flag exists today
        assert "--limit" not in argv and parsed.limit in (0, None) and parsed.max_minutes == 5.0
        if recipe == "release":
            assert parsed.init_from == str(start) and parsed.max_steps_per_epoch == 3800 and parsed.batch_size == 8
        else:
            assert (
                parsed.epochs == 10
                and parsed.max_steps_per_epoch == 0
                and parsed.lr == 5e-5
                and parsed.lr_scaling == {"paper": "none", "paper-64": "sqrt"}[recipe]
            )
            assert scaled_lr(parsed.lr, parsed.batch_size, parsed.lr_scaling) == pytest.approx(
                {"paper": 5e-5, "paper-64": 1e-4}[recipe]
            )
            assert parsed.batch_size == {"paper": 16, "paper-64": 64}[recipe] and parsed.backbone == str(start)
    args = parse_args(["paper", "--out", str(tmp_path), "--", "--no-such-flag"])
    with pytest.raises(ValueError, match="unrecognized arguments: --no-such-flag"):
        parsed_train_args(train_argv(args, tmp_path / "run", 5.0))
    args = parse_args(["paper", "--out", str(tmp_path), "--", "--epochs", "ten"])  # the subcommand's own error
    with pytest.raises(ValueError, match="argument --epochs: invalid int value: 'ten'"):
        parsed_train_args(train_argv(args, tmp_path / "run", 5.0))


def test_a_dry_run_at_device_scale_records_every_command_and_runs_none(backbone, tmp_path):
    if not (ROOT.parent / "shared" / "data" / "dailydialog").is_dir():
        pytest.skip("no ../shared/data/dailydialog")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "benchmarks.device_train", "paper", "--dry-run", "--start", str(backbone)]
    command += ["--data-dir", str(ROOT.parent / "shared" / "data"), "--out", str(out), "--work", str(tmp_path / "w")]
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr[-3000:]
    sections = json.loads((out / REPORT).read_text())["sections"]
    assert sections["versions"]["status"] == "measured"
    assert {name: sections[name]["status"].split(" (")[0] for name in list(SECTIONS)[1:-1]} == dict.fromkeys(
        list(SECTIONS)[1:-1], "skipped: dry run"
    )
    assert "--epochs 10" in sections["train"]["command"] and "--max-steps-per-epoch" not in sections["train"]["command"]
    assert (
        "--dev-judgments" in sections["train"]["command"]
        and "--protocols full paper dev" in sections["human_correlation"]["command"]
    )
    assert not (tmp_path / "w" / "training").exists() and not list(out.glob(f"{WEIGHTS}.part*"))
    # with a second stage, whose start (the first stage's checkpoint) a dry run never makes
    command += ["--then", "release"]
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr[-3000:]
    then = json.loads((out / REPORT).read_text())["sections"]["then"]
    assert then["status"] == "skipped: dry run" and "--max-steps-per-epoch 3800" in then["command"]
    assert f"--init-from {tmp_path / 'w' / 'first' / 'run' / 'checkpoint'}" in then["command"]


def test_without_the_training_package_the_report_names_it_and_the_training_sections_fail(backbone, dialogues, tmp_path):
    """A checkout that was never installed has no density_train (train/ imports only under that name): the GPU
    machine's first call of 2026-12-04 found none. The report names it in the import check, the training and fit
    sections fail on it, and the command exits 1."""
    shadow = tmp_path / "shadow" / "density_train"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'density_train'\")\n")
    out = tmp_path / "out"
    command = [
        sys.executable,
        "-m",
        "benchmarks.device_train",
        "paper",
        "--dry-run",
        "--tiny",
        "--start",
        str(backbone),
    ]
    command += ["--data-dir", str(dialogues), "--out", str(out), "--work", str(tmp_path / "w")]
    env = {**os.environ, "PYTHONPATH": str(shadow.parent)}
    completed = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    report = json.loads((out / REPORT).read_text())
    assert completed.returncode == 1
    assert report["missing_packages"] == ["density_train: ModuleNotFoundError: No module named 'density_train'"]
    assert report["sections"]["versions"]["status"] == "measured"
    assert report["sections"]["train"]["status"].startswith("failed: ModuleNotFoundError")
    assert report["sections"]["fit"]["status"].startswith("failed: ModuleNotFoundError")


def test_each_later_section_has_its_seconds_before_the_deadline_and_training_the_rest(tmp_path):
    args = parse_args(["paper", "--out", str(tmp_path), "--deadline-s", "540"])
    run = device_train.TrainRun(args, 100.0, {}, tmp_path)
    ends = section_ends(run)
    assert ends["weights"] == ends["versions"] == 640.0
    assert ends["corpus_probes"] == 640.0 - args.weights_s
    assert ends["human_correlation"] == ends["corpus_probes"] - args.corpus_probes_s
    assert ends["fit"] == ends["human_correlation"] - args.human_correlation_s
    assert ends["train"] == ends["fit"] - args.fit_s == 640.0 - 175.0


def test_with_then_its_stage_has_its_seconds_between_the_fit_and_the_meta_evaluation(tmp_path):
    args = parse_args(["paper", "--then", "release", "--out", str(tmp_path), "--deadline-s", "540"])
    run = device_train.TrainRun(args, 100.0, {}, tmp_path)
    ends = section_ends(run)
    assert list(ends) == ["versions", "train", "fit", "then", "human_correlation", "corpus_probes", "weights"]
    assert ends["then"] == ends["human_correlation"] - args.human_correlation_s
    assert ends["fit"] == ends["then"] - args.then_s
    assert ends["train"] == ends["fit"] - args.fit_s == 640.0 - 175.0 - 180.0
    assert run.first == tmp_path / "first" and run.checkpoint == tmp_path / "training" / "run" / "checkpoint"
    for flags in (["--then", "paper"], ["--then", "release", "--train-minutes", "1"]):
        with pytest.raises(SystemExit):
            parse_args(["paper", "--out", str(tmp_path), *flags])


def test_then_trains_a_second_stage_from_the_first_checkpoint_and_a_second_call_resumes_the_chain(
    tmp_path, backbone, dialogues
):
    """``paper --then release``: the release recipe from the paper stage's fitted checkpoint, in one command. Here a
    chain resumed on a warm machine, end to end: the first call's guard stops each stage at its first step (a
    ``--max-minutes`` after ``--`` reaches both); the second, with the same --work and no guard, resumes the first
    stage to its schedule's end and fits it again, so the second stage that began from the first fit is moved aside
    and trained afresh from the new one. The meta-evaluation and the weights are the second stage's, the first
    stage's files come back under first/."""
    import tarfile

    from density_metric.checkpoint.format import CONFIG_FILE
    from density_train.loop.run_log import read_log
    from density_train.loop.state import STATE_FILE, start_summary

    if not ZHAO.is_file():
        pytest.skip(f"no {ZHAO}")
    data = judged_data(tmp_path, dialogues)
    # 8 contexts a step: the release recipe keeps 6 of them for golds that reuse the last turn
    flags = ["--then", "release", "--batch-size", "8", "--deadline-s", "300", *TINY_FORMAT]
    work = tmp_path / "work"
    first, second = work / "first" / "run", work / "training" / "run"

    completed, out = device_train_command(tmp_path, backbone, data, *flags, "--max-minutes", "0.00001")
    assert completed.returncode == 0, completed.stderr[-3000:]
    found = statuses(out)
    assert found["train"].startswith("stopped: its --max-minutes guard, at step 1")
    assert found["then"].startswith("stopped: its --max-minutes guard, at step 1")
    first_fit = (first / "checkpoint" / WEIGHTS).read_bytes()
    began = json.loads((second / "state" / STATE_FILE).read_text())["data"]["start_sha256"]
    assert began == start_summary(first / "checkpoint")["start_sha256"]

    completed, out = device_train_command(tmp_path, backbone, data, "--bring-weights", *flags)
    assert completed.returncode == 0, completed.stderr[-3000:]
    report = json.loads((out / REPORT).read_text())
    names = [*list(SECTIONS)[:3], "then", *list(SECTIONS)[3:]]
    assert list(report["sections"]) == names and statuses(out) == dict.fromkeys(names, "measured")
    steps = [r["step"] for r in read_log(first / "log.jsonl") if r["type"] == "train"]
    assert steps == list(range(1, 21))  # step 1 of the first call, then 2-20 resumed: none taken twice
    assert (first / "checkpoint" / WEIGHTS).read_bytes() != first_fit  # fitted again, after 20 steps
    then = report["sections"]["then"]
    aside = work / "training.earlier-1"
    assert then["earlier_stage"] == (
        f"{work / 'training'} began from other weights of {first / 'checkpoint'} ({began}) in an earlier call: "
        f"moved to {aside}"
    )
    assert [r["step"] for r in read_log(aside / "run" / "log.jsonl") if r["type"] == "train"] == [1]
    assert f"--init-from {first / 'checkpoint'}" in then["command"] and "--density-weight 1" in then["command"]
    assert then["steps_taken"] == 20 and then["by"] == "python -m train train, after its schedule"
    records = read_log(second / "log.jsonl")
    assert [r["step"] for r in records if r["type"] == "train"] == list(range(1, 21))
    assert [r["type"] for r in records].count("eval") == 2
    now = json.loads((second / "state" / STATE_FILE).read_text())["data"]["start_sha256"]
    assert now == start_summary(first / "checkpoint")["start_sha256"] != began
    assert (first / "checkpoint" / CONFIG_FILE).is_file() and (second / "checkpoint" / CONFIG_FILE).is_file()
    human = report["sections"]["human_correlation"]["command"]
    assert f"--checkpoint {second / 'checkpoint'}" in human
    brought = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(out.glob(f"{WEIGHTS}.part*")))).hexdigest()
    assert brought == hashlib.sha256((second / "checkpoint" / WEIGHTS).read_bytes()).hexdigest()
    assert brought != hashlib.sha256((first / "checkpoint" / WEIGHTS).read_bytes()).hexdigest()
    with tarfile.open(out / TRAINING_TAR) as tar:
        names = set(tar.getnames())
    assert {"run/log.jsonl", "first/run/log.jsonl", "first/run/checkpoint/config.json"} <= names
    assert "run/checkpoint/config.json" in names and not any(name.endswith(WEIGHTS) for name in names)


def test_a_profile_times_steps_of_the_first_stage_before_it(tmp_path, backbone, dialogues):
    """--profile-steps: a section before the training run, its seconds from the start; on CPU it reports the wall
    time and the operators' host time a step (no GPU figures), and refuses more steps than an epoch holds."""
    flags = ["--tiny", "--start", str(backbone), "--data-dir", str(dialogues), "--out", str(tmp_path / "out")]
    flags += ["--work", str(tmp_path / "work"), "--deadline-s", "200", *TINY_FORMAT]
    args = parse_args(["paper", "--profile-steps", "3", *flags])
    (tmp_path / "out").mkdir()
    run = device_train.TrainRun(args, time.monotonic(), {}, tmp_path / "work")
    ends = section_ends(run)
    assert list(ends)[:3] == ["versions", "profile", "train"] and ends["profile"] == run.started + args.profile_s
    found = {}
    assert device_train.profile(run, found, ends["profile"]) is None
    result = found["paper"]  # the run's own recipe, by default
    assert result["steps"] == 3 and result["warm_up"] == 2 and result["contexts_per_step"] == 4
    assert "--limit 240 --epochs 1 --max-steps-per-epoch 0" in result["command"]
    assert result["wall_ms_per_step"] > 0 and result["profiled_wall_ms_per_step"] > 0
    assert result["host_operator_ms_per_step"] > 0
    assert 1 <= result["input_widths"] <= 5 and 0 <= result["timed_unreplayed_forwards"] <= 3  # 2 + 3 forwards
    assert result["aten_calls_per_step"] > 100  # a 2-layer BERT's forward and backward, the losses, the optimizer
    assert all(entry["name"].startswith("aten::") for entry in result["top_host"])
    assert "gpu_busy_ms_per_step" not in result and "top_gpu" not in result
    args = parse_args(["paper", "--profile-steps", "3", "--profile-recipes", "paper-64", "release", *flags])
    with pytest.raises(ValueError, match="--profile-recipes release starts from a checkpoint, --start is a backbone"):
        device_train.profile(device_train.TrainRun(args, time.monotonic(), {}, tmp_path / "w1"), {}, 0.0)
    # its epoch is its pairs' (not the run's --max-steps-per-epoch, 10 at this scale): 40 pairs of 4 contexts
    args = parse_args(["paper", "--profile-steps", "4", "--profile-pairs", "40", *flags])  # 2 + 2 x 4 of 10 steps
    with pytest.raises(ValueError, match="must stay under the 10 steps of an epoch of --profile-pairs 40"):
        device_train.profile(
            device_train.TrainRun(args, time.monotonic(), {}, tmp_path / "w2"), {}, time.monotonic() + 99
        )
    found = {}  # the section's time spent: each recipe left out, and said so
    status = device_train.profile(device_train.TrainRun(args, time.monotonic(), {}, tmp_path / "w3"), found, 0.0)
    assert status == "stopped: the section's time, before paper" and found["paper"]["status"].startswith("skipped")
    assert list(section_ends(device_train.TrainRun(parse_args(["paper", *flags]), 0.0, {}, tmp_path))) == list(SECTIONS)
    for wrong in (
        ["--profile-recipes", "paper"],
        ["--profile-only"],
        ["--profile-steps", "3", "--profile-warm-up", "0"],
        ["--profile-steps", "3", "--profile-only", "--then", "release"],
    ):
        with pytest.raises(SystemExit):
            parse_args(["paper", *wrong, *flags])
    # --profile-only: the profile in the whole deadline, and a train flag after -- reaches its trainer
    only = parse_args(["paper", "--profile-steps", "3", "--profile-only", *flags, "--seed", "7"])
    only_run = device_train.TrainRun(only, 100.0, {}, tmp_path / "w4")
    assert section_ends(only_run) == {"versions": 300.0, "profile": 300.0}
    assert list(device_train.planned(only)) == ["versions", "profile"]
    found = {}
    assert device_train.profile(only_run, found, time.monotonic() + 99) is None
    assert found["paper"]["command"].endswith(
        "--seed 7 --limit 240 --epochs 1 --max-steps-per-epoch 0 (its trainer, in this process)"
    )


def test_unreplayed_forwards_are_those_of_a_width_seen_under_twice_before():
    from benchmarks.device_profile import unreplayed_forwards

    # after 3 warm-up forwards (64, 64, 128): 64 a third time (replayed), 128 a second (recorded), 192 new, 128
    # a third time (replayed), 192 a second (recorded)
    assert unreplayed_forwards([64, 64, 128, 64, 128, 192, 128, 192], 3) == 3
    assert unreplayed_forwards([64, 64, 64], 3) == 0 and unreplayed_forwards([64, 64, 64], 0) == 2


def test_the_profile_summary_counts_operators_on_the_host_and_kernels_on_the_gpu():
    """Made-up events of a 2-step profile, as ``key_averages()`` gives them: the host's figures read the ``aten::``
    operators only (not the CUDA runtime's calls, whose time is mostly waiting); the GPU's busy time reads the
    device's events but the profiler's user annotations, which span kernels already counted."""
    from types import SimpleNamespace

    from benchmarks.device_profile import profile_summary

    def event(key, device, count, cpu_us=0.0, device_us=0.0, annotation=False):
        kind = SimpleNamespace(name=device)
        return SimpleNamespace(
            key=key,
            device_type=kind,
            count=count,
            self_cpu_time_total=cpu_us,
            self_device_time_total=device_us,
            is_user_annotation=annotation,
        )

    events = [
        event("aten::mm", "CPU", 8, cpu_us=400.0, device_us=3000.0),
        event("aten::add_", "CPU", 4, cpu_us=100.0, device_us=1000.0),
        event("cudaDeviceSynchronize", "CPU", 2, cpu_us=9000.0),
        event("sm90_gemm_kernel", "CUDA", 8, device_us=3000.0),
        event("elementwise_kernel", "CUDA", 4, device_us=1000.0),
        event("Optimizer.step#AdamW.step", "CUDA", 2, device_us=1500.0, annotation=True),
    ]
    summary = profile_summary(events, steps=2, cuda=True, wall_ms=4.0)
    assert summary["aten_calls_per_step"] == 6.0 and summary["host_operator_ms_per_step"] == 0.25
    assert summary["gpu_busy_ms_per_step"] == 2.0 and summary["gpu_busy_share"] == 0.5
    assert summary["kernel_calls_per_step"] == 6.0 and summary["kernel_kinds"] == 2
    assert [entry["name"] for entry in summary["top_gpu"]] == ["aten::mm", "aten::add_"]
    assert summary["top_host"][0] == {"name": "aten::mm", "calls": 4.0, "ms": 0.2}
    on_cpu = profile_summary(events[:3], steps=2, cuda=False, wall_ms=4.0)
    assert "gpu_busy_ms_per_step" not in on_cpu and on_cpu["aten_calls_per_step"] == 6.0


def test_a_failing_section_is_recorded_and_the_next_one_runs(tmp_path):
    def fails(run, result, ends):
        result["partial"] = 1
        raise ValueError("broken")

    def measures(run, result, ends):
        result["value"] = 2

    def too_long(run, result, ends):
        time.sleep(5)

    args = parse_args(["paper", "--out", str(tmp_path), "--deadline-s", "60"])
    missing_packages()  # its imports done before the clocks start
    run = SectionRun(args, time.monotonic(), {"sections": {"a": {}, "b": {}, "c": {}, "d": {}}}, tmp_path)
    try:
        run_sections(
            run,
            {
                "a": (fails, run.at(1)),
                "b": (too_long, time.monotonic() + 2.5),
                "c": (measures, run.at(1)),
                "d": (measures, time.monotonic()),
            },
        )
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    sections = json.loads((tmp_path / SectionRun.report_file).read_text())["sections"]
    assert sections["a"]["status"] == "failed: ValueError: broken" and sections["a"]["partial"] == 1
    assert sections["b"]["status"].startswith("stopped: deadline") and sections["b"]["seconds"] < 4
    assert sections["c"] == {"status": "measured", "value": 2, "seconds": sections["c"]["seconds"]}
    assert sections["d"]["status"].startswith("skipped: deadline")


def test_the_weights_come_back_with_a_ship_precheck_only_where_the_evaluation_passes_it(tmp_path):
    from benchmarks.device_train import TrainRun, weights

    def section(dev: float, holds: bool, *flags: str) -> tuple[str | None, dict]:
        args = parse_args(["paper", "--out", str(tmp_path), "--bring-weights", *flags])
        evaluation = {"sets": {"dailydialog_zhao": {"dev": {"spearman": dev}}}, "probes_hold": holds}
        run = TrainRun(args, time.monotonic(), {"sections": {"human_correlation": evaluation}}, tmp_path / "work")
        (run.checkpoint).mkdir(parents=True, exist_ok=True)
        (run.checkpoint / WEIGHTS).write_bytes(b"weights")
        result = {}
        return weights(run, result, time.monotonic() + 10), result

    for dev, holds in ((55.0, True), (57.0, False)):
        status, result = section(dev, holds, "--ship-dev-spearman", "55.82")
        assert status.startswith("skipped: the evaluation does not pass") and not list(tmp_path.glob(f"{WEIGHTS}.*"))
        assert result["ship_precheck"] == {"dev_spearman": dev, "to_beat": 55.82, "probes_hold": holds, "passes": False}
    status, result = section(57.0, True, "--ship-dev-spearman", "55.82")
    assert status is None and result["ship_precheck"]["passes"] and result["parts"] == 1
    assert (tmp_path / f"{WEIGHTS}.part0").read_bytes() == b"weights"
    status, result = section(0.0, False)  # no pre-check asked: the weights come back
    assert status is None and result["parts"] == 1


def test_a_second_stage_begun_from_other_first_stage_weights_is_set_aside_and_an_unchanged_one_kept(tmp_path):
    """A second call with the same --work (a chain resumed on a warm machine): where the first stage trained on and
    was fitted again, the earlier second stage cannot resume from it and is moved aside; else it resumes."""
    from benchmarks.device_train import set_aside_stale_stage
    from density_train.loop.state import STATE_FILE

    start = tmp_path / "first" / "run" / "checkpoint"
    start.mkdir(parents=True)
    (start / "model.safetensors").write_bytes(b"weights of the first fit")
    training = tmp_path / "training"
    state = training / "run" / "state"
    assert set_aside_stale_stage(training, start) is None  # no second stage yet
    state.mkdir(parents=True)
    began = hashlib.sha256(b"model.safetensors" + b"weights of the first fit").hexdigest()[:16]  # files_hash's rule
    (state / STATE_FILE).write_text(json.dumps({"data": {"start_sha256": began}}))
    assert set_aside_stale_stage(training, start) is None and state.is_dir()  # the same start: it resumes
    (start / "model.safetensors").write_bytes(b"weights of the second fit")
    done = set_aside_stale_stage(training, start)
    assert done == f"{training} began from other weights of {start} ({began}) in an earlier call: moved to " + str(
        tmp_path / "training.earlier-1"
    )
    assert not training.exists() and (tmp_path / "training.earlier-1" / "run" / "state" / STATE_FILE).is_file()
    state.mkdir(parents=True)
    (state / STATE_FILE).write_text(json.dumps({"data": {"start_sha256": began}}))
    set_aside_stale_stage(training, start)
    assert (tmp_path / "training.earlier-2").is_dir()  # an earlier one set aside before is kept
    state.mkdir(parents=True)
    (state / STATE_FILE).write_text(json.dumps({"data": {}}))  # saved before the hash: nothing to compare
    assert set_aside_stale_stage(training, start) is None and state.is_dir()


def test_a_second_stage_left_mid_save_or_unreadable_is_recovered_before_it_is_judged(tmp_path):
    """A stop between a save's two renames leaves state.old/: it is put back (as a run would) and judged; a state
    file that cannot be read cannot resume either, so that stage is set aside too."""
    from benchmarks.device_train import set_aside_stale_stage
    from density_train.loop.state import STATE_FILE, start_summary

    start = tmp_path / "checkpoint"
    start.mkdir()
    (start / "model.safetensors").write_bytes(b"weights")
    training = tmp_path / "training"
    old = training / "run" / "state.old"
    old.mkdir(parents=True)
    (old / STATE_FILE).write_text(json.dumps({"data": start_summary(start)}))
    assert set_aside_stale_stage(training, start) is None
    assert (training / "run" / "state" / STATE_FILE).is_file() and not old.exists()
    (training / "run" / "state" / STATE_FILE).write_text('{"data": ')  # cut short
    done = set_aside_stale_stage(training, start)
    assert done.endswith(
        f"its {STATE_FILE} cannot be read (JSONDecodeError): moved to {tmp_path / 'training.earlier-1'}"
    )
    assert not training.exists()


def test_a_start_without_safetensors_weights_or_a_hub_id_has_no_hash(tmp_path):
    from density_train.loop.state import start_summary

    (tmp_path / "pytorch_model.bin").write_bytes(b"weights")
    assert start_summary(tmp_path) == {"start_sha256": None}
    assert start_summary("bert-base-uncased") == {"start_sha256": None}
