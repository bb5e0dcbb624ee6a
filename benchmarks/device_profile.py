"""The device training command's ``profile`` section (benchmarks/device_train.py, ``--profile-steps``): steps of a
recipe timed and then profiled under ``torch.profiler``, its trainer in the command's own process, and a step's
figures from the profile (:func:`profile_summary`)."""

from __future__ import annotations

import time

from .device_commands import parsed_train_args, shown, train_argv
from .device_recipes import RECIPES
from .device_sections import SectionRun


def profile(run: SectionRun, result: dict, ends: float) -> str | None:
    """With ``--profile-steps N``: N steps of each of ``--profile-recipes`` (default: the run's own, which must
    start from the same kind of folder, ``--start``) timed and then profiled, one recipe after another
    (:func:`profile_recipe`), each recipe's numbers under its name; a recipe with under 10 s of the section left is
    skipped."""
    args = run.args
    names = args.profile_recipes or [args.recipe]
    for name in names:
        if RECIPES[name].starts_from != RECIPES[args.recipe].starts_from:
            raise ValueError(
                f"--profile-recipes {name} starts from a {RECIPES[name].starts_from}, --start is a "
                f"{RECIPES[args.recipe].starts_from} ({args.recipe})"
            )
    status = None
    for name in names:
        if ends - time.monotonic() < 10 and not args.dry_run:
            result[name] = {"status": "skipped: under 10 s of the section left"}
            status = f"stopped: the section's time, before {name}"
            continue
        result[name] = {}
        status = profile_recipe(run, name, result[name]) or status
        run.save()
    return status


def profile_recipe(run: SectionRun, recipe: str, result: dict) -> str | None:
    """``--profile-steps`` steps of ``recipe`` timed as they run, then as many under ``torch.profiler``, after
    ``--profile-warm-up`` steps, its trainer in this process, on the first ``--profile-pairs`` training pairs (the
    trainer's start reads every pair it is given); :func:`profile_summary` of the profile. The wall time a step is the
    unprofiled steps' (the profiler's own recording slows the others); :func:`unreplayed_forwards` of them."""
    import gc

    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as profiled

    from density_train.commands.train import peak_gpu_memory
    from density_train.data.corpora import load_selection_data
    from density_train.loop.trainer import Trainer

    args = run.args
    folder = run.work / "profile" / recipe
    argv = train_argv(args, folder, 1, recipe)
    argv += ["--limit", str(args.profile_pairs), "--epochs", "1", "--max-steps-per-epoch", "0"]  # its pairs' epoch
    parsed = parsed_train_args(argv)
    result["command"] = shown("train", argv) + " (its trainer, in this process)"
    if args.dry_run:
        return "skipped: dry run"
    trainer = Trainer(parsed.config, *load_selection_data(parsed), folder)
    steps, warm_up = args.profile_steps, args.profile_warm_up
    if warm_up + 2 * steps >= trainer.steps_per_epoch:  # the epoch's end would run an evaluation inside them
        raise ValueError(
            f"--profile-warm-up {warm_up} + twice --profile-steps {steps} (timed, then profiled) must stay under the "
            f"{trainer.steps_per_epoch} steps of an epoch of --profile-pairs {args.profile_pairs}"
        )
    trainer.save_state = lambda: None  # no weights written at the stops
    device = trainer.accelerator.device
    cuda = device.type == "cuda"
    synchronize = torch.cuda.synchronize if cuda else lambda: None
    widths = []  # each forward's token width, the warm-up's and the timed steps'
    hook = trainer.model.register_forward_pre_hook(lambda _, inputs: widths.append(inputs[0]["input_ids"].shape[1]))
    trainer.train(stop_after_steps=warm_up)
    synchronize()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    warmed = len(widths)
    started = time.perf_counter()
    trainer.train(stop_after_steps=steps)
    synchronize()
    wall = time.perf_counter() - started
    hook.remove()
    result.update(timed_unreplayed_forwards=unreplayed_forwards(widths, warmed), input_widths=len(set(widths)))
    profiled_started = time.perf_counter()
    with profiled(activities=[ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if cuda else [])]) as profiler:
        trainer.train(stop_after_steps=steps)
        synchronize()
    contexts = parsed.batch_size * parsed.grad_accum
    result.update(steps=steps, warm_up=warm_up, contexts_per_step=contexts)
    result.update(mixed_precision=trainer.accelerator.mixed_precision, wall_ms_per_step=round(1000 * wall / steps, 2))
    result["profiled_wall_ms_per_step"] = round(1000 * (time.perf_counter() - profiled_started) / steps, 2)
    result["contexts_per_s"] = round(contexts * steps / wall, 1)
    result.update(profile_summary(profiler.key_averages(), steps, cuda, result["wall_ms_per_step"]))
    result.update(peak_gpu_memory(device))
    del trainer, profiler
    gc.collect()  # a prepared model can hold itself through its wrapped forward: freed before the next recipe
    if cuda:
        torch.cuda.empty_cache()
    return None


def unreplayed_forwards(widths: list[int], warmed: int) -> int:
    """Of the forwards after the first ``warmed`` (``widths``: each forward's token width, in order), those whose
    width had been seen fewer than twice before: under CUDA graphs (``--compile-mode reduce-overhead``) a new shape
    runs eagerly, is recorded the second time and replayed only from the third, so such forwards are not yet the
    graphs' speed."""
    return sum(widths[:i].count(width) < 2 for i, width in enumerate(widths) if i >= warmed)


def profile_summary(events, steps: int, cuda: bool, wall_ms: float) -> dict:
    """A step's figures from a profile's ``key_averages()`` over ``steps`` steps: the operators' (``aten::``) calls
    and their self time on the host, every thread (Python between them is not in it, nor the CUDA runtime's calls,
    waits included); with ``cuda``, the GPU's busy time (its kernels and copies: the device's events, without the
    profiler's user annotations, which span them) and its share of ``wall_ms``, the kernels launched, and the
    operators that take most of each."""

    def per_step(microseconds: float) -> float:
        return round(microseconds / 1000 / steps, 3)

    def top(found, time_of) -> list[dict]:
        ranked = sorted(found, key=time_of, reverse=True)[:15]
        return [{"name": e.key, "calls": round(e.count / steps, 1), "ms": per_step(time_of(e))} for e in ranked]

    operators = [e for e in events if e.device_type.name == "CPU" and e.key.startswith("aten::")]
    summary = {
        "aten_calls_per_step": round(sum(e.count for e in operators) / steps, 1),
        "host_operator_ms_per_step": per_step(sum(e.self_cpu_time_total for e in operators)),
        "top_host": top(operators, lambda e: e.self_cpu_time_total),
    }
    if cuda:
        kernels = [e for e in events if e.device_type.name != "CPU" and not getattr(e, "is_user_annotation", False)]
        busy = per_step(sum(e.self_device_time_total for e in kernels))
        summary.update(gpu_busy_ms_per_step=busy, gpu_busy_share=round(busy / wall_ms, 3) if wall_ms else None)
        summary["kernel_calls_per_step"] = round(sum(e.count for e in kernels) / steps, 1)
        summary["kernel_kinds"] = len(kernels)  # 0: the profiler saw no kernel, and the share means nothing
        summary["top_gpu"] = top(operators, lambda e: e.self_device_time_total)
    return summary
