"""How train reacts to launchers (issue 56): CPU processes that Accelerate would run each alone are refused, and an
`accelerate launch --cpu` that started one of several processes says so."""

import os
import subprocess
import sys

import pytest

from ...ports import free_port, torchrun
from .test_training import ROOT, write_corpus

ACCELERATE_LAUNCH = {"ACCELERATE_USE_CPU": "True", "ACCELERATE_DYNAMO_BACKEND": "NO"}  # what accelerate launch sets


def test_several_launched_processes_that_accelerate_runs_each_alone_are_refused():
    from density_train.arguments import check_processes

    with pytest.raises(ValueError, match=r"^2 processes were launched \(WORLD_SIZE=2\), but Accelerate sees 1, .*"):
        check_processes(1, {"WORLD_SIZE": "2", "RANK": "1"})


def test_accelerate_launch_that_started_one_of_several_cpu_processes_says_so():
    from density_train.arguments import check_processes

    warning = check_processes(1, {**ACCELERATE_LAUNCH, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"})
    assert warning.startswith("accelerate launch asked for several processes but started this one alone")
    assert "ACCELERATE_USE_CPU=1 torchrun --nproc_per_node N -m train train" in warning


@pytest.mark.parametrize(
    "processes, environ",
    [
        (1, {}),
        (1, ACCELERATE_LAUNCH),
        (1, {"WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"}),
        (2, {**ACCELERATE_LAUNCH, "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"}),
    ],
    ids=["plain", "accelerate-launch-one-process", "torchrun-one-process", "two-processes"],
)
def test_a_process_layout_that_accelerate_sees_whole_passes_silently(processes, environ):
    from density_train.arguments import check_processes

    assert check_processes(processes, environ) is None


@pytest.mark.parametrize("launcher", ["torchrun", "accelerate"])
def test_a_cpu_launch_of_two_processes_that_trains_as_one_says_so(launcher, tmp_path):
    # `accelerate launch --num_processes 2 --cpu` (the recipe docs/training.md gave) ran one process without a word,
    # and torchrun without ACCELERATE_USE_CPU=1 ran two independent runs into one --out. --backbone is missing, so a
    # run that gets past the check stops at once.
    write_corpus(tmp_path)
    argv = ["--corpus", "jsonl", "--train-file", tmp_path / "train.jsonl", "--valid-file", tmp_path / "valid.jsonl"]
    argv = ["-m", "train", "train", *argv, "--backbone", tmp_path / "none", "--out", tmp_path / "run"]
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ACCELERATE_", "MASTER_"))}
    env["OMP_NUM_THREADS"] = "1"
    if launcher == "torchrun":
        command = torchrun(*argv)
    else:
        command = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "2", "--cpu"]
        command += ["--main_process_port", str(free_port()), *argv]
    run = subprocess.run(list(map(str, command)), cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if launcher == "torchrun":  # each process says it (their lines may come interleaved), before any work
        assert run.returncode != 0 and "error: 2 processes were launched (WORLD_SIZE=2), but Accel" in run.stderr
        assert "--backbone" not in run.stderr and not (tmp_path / "run").exists()
    else:
        # accelerate 1.16 reports a failed child by raising again with the tail of its stderr (a RuntimeError
        # chained to a CalledProcessError): the child's own lines are those before that report.
        own = run.stderr.split("\nRuntimeError: ")[0]
        errors = [line for line in own.splitlines() if line.startswith("error: ")]
        assert "accelerate launch asked for several processes but started this one alone" in run.stderr
        assert errors == [f"error: --backbone {tmp_path / 'none'}: no such folder (and not a Hub id)"], run.stderr
