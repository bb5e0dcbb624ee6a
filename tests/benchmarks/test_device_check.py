"""The device check (benchmarks/device_check.py, docs/gpu.md) rehearsed on CPU: the command a lent GPU machine runs,
with a tiny random checkpoint, DailyDialog-format dialogues of the tiny vocabulary and a short deadline."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from benchmarks.device_check import (
    PART_BYTES,
    REPORT,
    RETURNED_FILES,
    SCALES,
    SECTIONS,
    SUMS,
    WEIGHTS,
    main,
    reassemble,
)

from ..tiny import WORDS

ROOT = Path(__file__).resolve().parents[2]


def write_dailydialog(folder: Path) -> None:
    """dialogues_{split}.txt of random dialogues (3-6 turns of tiny-vocabulary words), as DailyDialog writes them."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True)
    for split, dialogues in (("train", 80), ("validation", 30), ("test", 20)):
        lines = []
        for _ in range(dialogues):
            turns = [" ".join(rng.choice(WORDS, size=rng.integers(2, 9))) for _ in range(rng.integers(3, 7))]
            lines.append(" __eou__ ".join(turns) + " __eou__\n")
        (folder / f"dialogues_{split}.txt").write_text("".join(lines), encoding="utf-8")


def device_check(
    tmp_path: Path, checkpoint, deadline_s: float, env: dict | None = None
) -> tuple[subprocess.CompletedProcess, Path]:
    """``python -m benchmarks.device_check --tiny`` as a lent machine would run it; its process and --out."""
    write_dailydialog(tmp_path / "data" / "dailydialog")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "benchmarks.device_check", "--tiny", "--checkpoint", str(checkpoint)]
    command += ["--data-dir", str(tmp_path / "data"), "--out", str(out), "--work", str(tmp_path / "work")]
    completed = subprocess.run(
        [*command, "--deadline-s", str(deadline_s)], cwd=ROOT, capture_output=True, text=True, timeout=180, env=env
    )
    return completed, out


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory, tiny_mean_pooled_checkpoint):
    """One whole rehearsal, with a checkpoint in the bundled one's format (shared context, mean pooling): its
    process, --out and --work."""
    tmp_path = tmp_path_factory.mktemp("rehearsal")
    completed, out = device_check(tmp_path, tiny_mean_pooled_checkpoint, deadline_s=120)
    return completed, out, tmp_path / "work"


def test_every_section_is_measured_and_the_command_exits_0(rehearsal):
    completed, out, _ = rehearsal
    assert completed.returncode == 0, completed.stderr[-3000:]
    report = json.loads((out / REPORT).read_text())
    assert report["finished"] and report["missing_packages"] == []
    assert {name: section["status"] for name, section in report["sections"].items()} == dict.fromkeys(
        SECTIONS, "measured"
    )


def test_the_report_holds_each_sections_numbers(rehearsal):
    import torch

    sections = json.loads((rehearsal[1] / REPORT).read_text())["sections"]
    assert sections["versions"]["packages"]["torch"] == torch.__version__
    assert sections["versions"]["cuda_available"] is torch.cuda.is_available()
    speed = sections["scoring_speed"]
    assert speed["pairs"] == SCALES["pairs"][1] and speed["naive_pairs"] == SCALES["naive_pairs"][1]
    assert {"naive per-pair loop, float32", "float32", "bfloat16"} <= set(speed["pairs_per_s"])
    if isinstance(speed["token_budgets"], list):  # DensityScorer takes max_tokens: each budget in both dtypes
        assert len(speed["pairs_per_s"]) == 3 + 2 * len(speed["token_budgets"])
    assert all(rate > 0 for rate in speed["pairs_per_s"].values())
    assert speed["bf16_vs_fp32_spearman"] > 0.9
    for dtype in ("float32", "bfloat16"):
        invariance = sections["batch_invariance"][dtype]
        assert invariance["pairs"] >= 8 and set(invariance["max_rel_diff"]) >= {"batch_size_1", "reversed"}
    assert sections["train_speed"]["seconds_per_step"] > 0
    assert sections["train_speed"]["timed_steps"] == SCALES["speed_steps"][1]
    training = sections["training"]
    assert training["train"]["exit_code"] == 0
    assert training["steps_taken"] == training["steps_planned"] == SCALES["train_steps"][1]
    assert "fit" in training["train"]["printed"]  # the train command's report: its Gaussian was fitted


def test_what_comes_back_fits_the_lent_machines_limits(rehearsal):
    returned = [path for path in rehearsal[1].rglob("*") if path.is_file()]
    assert len(returned) <= RETURNED_FILES
    for path in returned:
        assert path.parent == rehearsal[1] and re.fullmatch(r"[A-Za-z0-9._-]+", path.name)
        assert path.stat().st_size <= 16 * 2**20
    assert PART_BYTES < 16 * 2**20


def test_the_parts_reassemble_to_the_fitted_weights_and_load_as_a_checkpoint(rehearsal, tmp_path):
    from density_metric import DensityScorer

    _, out, work = rehearsal
    [fitted] = work.glob(f"training-*/run/checkpoint/{WEIGHTS}")
    assert main(["reassemble", str(out), str(tmp_path)]) == 0
    checkpoint = tmp_path / "run" / "checkpoint"
    assert (checkpoint / WEIGHTS).read_bytes() == fitted.read_bytes()
    assert sorted(path.name for path in checkpoint.iterdir()) == sorted(path.name for path in fitted.parent.iterdir())
    scores = DensityScorer(str(checkpoint), device="cpu", dtype="float32").score([["hi how are you"]], ["fine"]).scores
    assert np.isfinite(scores).all()


def test_weights_of_several_parts_reassemble_in_order(rehearsal, tmp_path, monkeypatch):
    import benchmarks.device_sections as device_sections

    [fitted] = rehearsal[2].glob(f"training-*/run/checkpoint/{WEIGHTS}")
    monkeypatch.setattr(device_sections, "PART_BYTES", 5000)  # 11 or more parts: part10 sorts after part9
    monkeypatch.setattr(device_sections, "MOST_PARTS", 100)
    packed = device_sections.pack_weights(fitted, tmp_path)
    assert packed["parts"] == len(list(tmp_path.glob(f"{WEIGHTS}.part*"))) > 10
    assert reassemble(tmp_path, tmp_path / "rebuilt").read_bytes() == fitted.read_bytes()


def test_weights_in_more_parts_than_come_back_are_refused_before_any_part_is_written(rehearsal, tmp_path, monkeypatch):
    import benchmarks.device_sections as device_sections

    [fitted] = rehearsal[2].glob(f"training-*/run/checkpoint/{WEIGHTS}")
    monkeypatch.setattr(device_sections, "PART_BYTES", 5000)
    with pytest.raises(ValueError, match=rf"\d+ parts; at most {device_sections.MOST_PARTS} come back"):
        device_sections.pack_weights(fitted, tmp_path)
    assert not list(tmp_path.iterdir())


def test_a_damaged_part_is_named(rehearsal, tmp_path):
    out = rehearsal[1]
    for path in out.glob(f"{WEIGHTS}.part*"):
        shutil.copy(path, tmp_path)
    shutil.copy(out / SUMS, tmp_path)
    part = tmp_path / f"{WEIGHTS}.part0"
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 1
    part.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=rf"{WEIGHTS}\.part0: sha256"):
        reassemble(tmp_path, tmp_path / "rebuilt")
    assert not (tmp_path / "rebuilt").exists()


def test_a_deadline_too_short_for_any_work_skips_the_sections_and_exits_0(tmp_path, tiny_mean_pooled_checkpoint):
    completed, out = device_check(tmp_path, tiny_mean_pooled_checkpoint, deadline_s=1)
    assert completed.returncode == 0, completed.stderr[-3000:]
    report = json.loads((out / REPORT).read_text())
    assert report["finished"]
    statuses = {name: section["status"] for name, section in report["sections"].items()}
    assert all(status == "measured" or status.startswith("skipped: deadline") for status in statuses.values())
    assert statuses["training"].startswith("skipped: deadline")
    assert not list(out.glob(f"{WEIGHTS}.part*"))


def test_a_run_stopped_by_its_guard_is_fitted_from_its_last_state_and_comes_back(
    rehearsal, tmp_path, tiny_mean_pooled_checkpoint
):
    from benchmarks.device_check import Check, parse_args, training

    data = rehearsal[2].parent / "data"  # the rehearsal's dialogues
    argv = [
        "--tiny",
        "--checkpoint",
        str(tiny_mean_pooled_checkpoint),
        "--data-dir",
        str(data),
        "--out",
        str(tmp_path / "out"),
    ]
    args = parse_args([*argv, "--train-minutes", "0.00001"])  # stops after its first step, before the fit
    args.out.mkdir()
    check = Check(args, time.monotonic(), {"sections": {"train_speed": {}}}, tmp_path)
    result = {}
    training(check, result, time.monotonic() + 90)
    assert result["train"]["printed"]["stopped"]["global_step"] == result["steps_taken"] == 1
    assert result["fit_of_last_state"]["exit_code"] == 0 and result["weights"]["parts"] == 1
    assert reassemble(args.out, tmp_path / "rebuilt").is_file()


def test_a_package_that_does_not_import_is_named_on_one_line_and_no_section_runs(tmp_path, tiny_mean_pooled_checkpoint):
    broken = tmp_path / "broken" / "accelerate"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("import dill_that_is_not_there\n")
    env = {**os.environ, "PYTHONPATH": str(broken.parent)}
    completed, out = device_check(tmp_path, tiny_mean_pooled_checkpoint, deadline_s=60, env=env)
    assert completed.returncode == 1
    lines = [line for line in completed.stderr.splitlines() if "missing package " in line]
    assert len(lines) == 1 and lines[0].endswith(
        "missing package accelerate: ModuleNotFoundError: No module named 'dill_that_is_not_there'"
    )
    report = json.loads((out / REPORT).read_text())
    assert report["finished"] and len(report["missing_packages"]) == 1
    assert {section["status"] for section in report["sections"].values()} == {"skipped: missing packages accelerate"}


def test_without_datasets_the_scoring_sections_still_run_and_training_fails_alone(
    tmp_path, tiny_mean_pooled_checkpoint
):
    """The lent machine's image has no datasets (carried as wheels, which need a recent pyarrow): scoring needs none."""
    broken = tmp_path / "broken" / "datasets"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('pyarrow>=24 needed')\n")
    env = {**os.environ, "PYTHONPATH": str(broken.parent)}
    completed, out = device_check(tmp_path, tiny_mean_pooled_checkpoint, deadline_s=60, env=env)
    report = json.loads((out / REPORT).read_text())
    assert completed.returncode == 1 and report["missing_packages"] == ["datasets: ImportError: pyarrow>=24 needed"]
    statuses = {name: section["status"] for name, section in report["sections"].items()}
    assert "pairs_per_s" in report["sections"]["scoring_speed"] and "float32" in report["sections"]["batch_invariance"]
    assert statuses["training"].startswith("failed"), statuses


def test_the_report_and_the_tar_are_written_where_torch_does_not_import(tmp_path):
    """A machine whose torch is broken still gets its report ("skipped: missing packages torch"): the writers of
    benchmarks/device_sections.py must not import density_metric, which loads torch."""
    code = (
        "import argparse, sys, time\n"
        "from pathlib import Path\n"
        "sys.modules['torch'] = None  # import torch raises ImportError\n"
        "from benchmarks.device_sections import SectionRun, tar_files\n"
        "out = Path(sys.argv[1])\n"
        "(out / 'a.log').write_text('a line')\n"
        "run = SectionRun(argparse.Namespace(out=out, deadline_s=60), time.monotonic(), {'sections': {}}, out)\n"
        "run.save()\n"
        "tar_files(out / 'logs.tar.gz', {out: [out / 'a.log']})\n"
    )
    completed = subprocess.run([sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    assert json.loads((tmp_path / "report.json").read_text())["sections"] == {}  # SectionRun.report_file
    assert (tmp_path / "logs.tar.gz").stat().st_size > 0
