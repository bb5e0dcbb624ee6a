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
