"""The device training command's profile section (benchmarks/device_profile.py, docs/gpu.md) rehearsed on CPU with
the tiny random encoder of tests/benchmarks/test_device_train.py, and its summary of made-up profiler events."""

from __future__ import annotations

import time

import pytest

from benchmarks import device_train
from benchmarks.device_train import SECTIONS, parse_args, section_ends

from .test_device_train import TINY_FORMAT, backbone, dialogues  # noqa: F401  (backbone, dialogues: fixtures)


def test_a_profile_times_steps_of_the_first_stage_before_it(tmp_path, backbone, dialogues):  # noqa: F811
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
