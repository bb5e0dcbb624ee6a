"""What the GPU-machine commands share (benchmarks/device_check.py, benchmarks/device_train.py): sections run in
order inside one deadline, a JSON report rewritten atomically after each, subprocesses under a timeout, and the
float16 weights split into parts that fit what comes back from such a machine, with their sha256.

A command builds a :class:`SectionRun` (its arguments, its clock, its report, its work folder), calls
:func:`start`, then :func:`run_sections` with its sections (name -> (function, the time by which it must end)), and
returns :func:`finish`'s exit code. A section is ``function(run, result, ends)``: it writes what it measures into
``result`` (its part of the report) as it goes and returns by ``ends`` (``time.monotonic()``); past it an alarm
stops it. Its status is ``measured`` (or what it returns, such as ``skipped: not asked``), ``skipped: deadline``,
``stopped: deadline ...`` or ``failed: ...`` (an exception).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import faulthandler
import gc
import hashlib
import importlib
import json
import logging
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

logger = logging.getLogger("device")

ROOT = Path(__file__).resolve().parent.parent  # the checkout: `python -m train` runs from here
TRAINING_TAR, SUMS, WEIGHTS = "training.tar.gz", "SHA256SUMS", "model.safetensors"
# What comes back from a GPU machine's output folder: at most 8 files of at most 16 MiB. A report, a log, a tar and
# the sums beside the weights leave 4 parts of 15 MiB: 60 MiB of float16 weights (all-MiniLM-L6-v2's 22.7M
# parameters take 45 MB).
RETURNED_FILES, PART_BYTES = 8, 15 * 2**20
MOST_PARTS = RETURNED_FILES - 4

# Modules the sections import, checked first: a GPU machine's image holds most; docs/gpu.md carries the rest.
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
# Needed by training but not by scoring: where one does not import, the scoring sections still run and the training
# ones fail alone. datasets: train/ builds its tables with it (the image's pyarrow may be older than it needs);
# density_train: train/ itself, a name only an install (pip install -e .) or docs/gpu.md's link gives a checkout.
TRAINING_ONLY = ("datasets", "density_train")


class SectionTimeout(Exception):
    """Raised by the alarm at the end of a section's time."""


def _alarm(signum, frame):
    raise SectionTimeout


@dataclasses.dataclass
class SectionRun:
    """One run of a device command: its arguments (``out``, ``deadline_s``, ``commit``), its clock, its report and
    its work folder. ``report_file`` names the report in ``args.out``."""

    args: argparse.Namespace
    started: float
    report: dict
    work: Path
    report_file: ClassVar[str] = "report.json"
    log_file: ClassVar[str] = "report.log"

    def left(self) -> float:
        """Seconds to the deadline."""
        return self.started + self.args.deadline_s - time.monotonic()

    def at(self, share: float) -> float:
        """The ``time.monotonic()`` at ``share`` of the deadline."""
        return self.started + share * self.args.deadline_s

    def save(self) -> None:
        """Rewrite the report in --out; a reader (or a kill) sees the old file or the new one, never half."""
        self.report["elapsed_s"] = round(time.monotonic() - self.started, 1)
        write_atomically(Path(self.args.out) / self.report_file, json.dumps(self.report, indent=2) + "\n")


def write_atomically(path: Path, text: str) -> None:
    """``text`` into ``path`` through a hidden partial file beside it, swapped in whole. Not
    density_metric.io.outputs.write_text: importing density_metric loads torch, and the report must be written
    where torch does not import (every section "skipped: missing packages torch")."""
    partial = path.parent / f".{path.name}.partial"
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


# ---------------------------------------------------------------------------------------------- sections


def versions(run: SectionRun, result: dict, ends: float) -> None:
    """Python, the packages, torch's CUDA and GPU, the machine, and the commit (no .git may travel)."""
    import torch

    from density_metric import __version__
    from density_metric.encoding.device import machine_description

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
    # --commit wins: a GPU machine's .git was seen to name the landed commit, not the tree that was sent
    # (2026-11-28: HEAD there said 8e3b0fa for a tree sent at dcb458f).
    result["commit"] = run.args.commit or commit or f"unavailable ({why})"
    result["git_head_there"] = commit or f"unavailable ({why})"


def missing_packages() -> list[str]:
    """One line per module of :data:`REQUIRED` and :data:`TRAINING_ONLY` that does not import, with the reason."""
    missing = []
    for name in (*REQUIRED, *TRAINING_ONLY):
        try:
            importlib.import_module(name)
        except Exception as err:  # an ImportError, or a package that breaks while importing
            missing.append(f"{name}: {type(err).__name__}: {err}")
    return missing


Section = Callable[[SectionRun, dict, float], str | None]


def run_section(run: SectionRun, name: str, section: Section, ends: float) -> str:
    """Run one section until ``ends`` (or the deadline, if sooner): its status, its numbers left in the report as it
    measured them."""
    result = run.report["sections"][name]
    seconds = min(ends - time.monotonic(), run.left())
    if seconds < 1:
        return f"skipped: deadline ({max(seconds, 0):.1f} s of its time left)"
    logger.info("%s: up to %.0f s", name, seconds)
    started = time.monotonic()
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        status = section(run, result, started + seconds) or "measured"  # a section may return its own
    except SectionTimeout:
        status = "stopped: deadline (what it measured before is kept)"
    except Exception as err:
        logger.error("%s failed:\n%s", name, traceback.format_exc())
        status = f"failed: {type(err).__name__}: {err}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    result["seconds"] = round(time.monotonic() - started, 1)
    return status


def start(args: argparse.Namespace, log_file: str) -> Path:
    """The command's start: --out made, the log to stderr and to ``log_file`` there, the Hub offline, a stack dump
    and exit 30 s past the deadline; the work folder (--work, or a new temporary one)."""
    args.out.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(name)s: %(message)s",
        handlers=[logging.StreamHandler(), logging.FileHandler(args.out / log_file)],
    )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a GPU machine may reach nothing: never wait on the Hub
    # A hang past the deadline prints every thread's stack and ends the process, before the command's limit.
    faulthandler.dump_traceback_later(args.deadline_s + 30, exit=True)
    work = args.work or Path(tempfile.mkdtemp(prefix=f"{Path(log_file).stem}-"))
    work.mkdir(parents=True, exist_ok=True)
    return work


def run_sections(run: SectionRun, sections: dict[str, tuple[Section, float]]) -> None:
    """Each section in turn until its end (``time.monotonic()``), after the import check: a missing package of
    :data:`REQUIRED` skips every section; without a :data:`TRAINING_ONLY` one, those that train fail alone."""
    missing = missing_packages()
    for line in missing:
        logger.error("missing package %s", line)
    run.report["missing_packages"] = missing
    required = [line.split(":")[0] for line in missing if line.split(":")[0] not in TRAINING_ONLY]
    for name, (section, ends) in sections.items():
        if required:
            status = "skipped: missing packages " + ", ".join(required)
        else:
            status = run_section(run, name, section, ends)
        run.report["sections"][name]["status"] = status
        logger.info("%s: %s", name, status)
        run.save()
        gc.collect()
        if "torch" in sys.modules and sys.modules["torch"].cuda.is_available():
            sys.modules["torch"].cuda.empty_cache()  # a training subprocess needs the memory, not this cache


def add_run_arguments(parser: argparse.ArgumentParser, scales: dict, deadline_s: float) -> None:
    """The flags every device command has: --out, --deadline-s, --work, --commit, --tiny, and one per setting of
    ``scales`` (name -> (device value, rehearsal value))."""
    parser.add_argument("--out", required=True, type=Path, help="the folder that comes back ($OUT on a GPU machine)")
    parser.add_argument(
        "--deadline-s", type=float, default=deadline_s, help=f"seconds the whole command may take ({deadline_s:g})"
    )
    parser.add_argument("--work", type=Path, help="folder for the runs (default: a new temporary one)")
    parser.add_argument("--commit", default="", help="the commit the tree was sent from, in case no .git travels")
    parser.add_argument("--tiny", action="store_true", help="rehearsal counts (a CPU and a tiny model)")
    counts = parser.add_argument_group("scale (defaults: the device's, or the rehearsal's with --tiny)")
    for name, (device, tiny) in scales.items():
        counts.add_argument("--" + name.replace("_", "-"), type=type(device), help=f"{device} (--tiny: {tiny})")


def check_run_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace, scales: dict) -> None:
    """Each setting of ``scales`` not given set to its scale's value; the deadline and --out checked."""
    for name, values in scales.items():
        if getattr(args, name) is None:
            setattr(args, name, values[args.tiny])
    if not args.deadline_s > 0:
        parser.error(f"--deadline-s must be positive, got {args.deadline_s}")
    if args.out.is_file():
        parser.error(f"--out {args.out}: a file, not a folder")


def run_command(
    argv: list[str], prog: str, parse_args, run_class: type[SectionRun], plan, shown: tuple[str, ...] = ()
) -> int:
    """A device command's main: ``reassemble`` or, with its arguments (``parse_args(argv)``), a ``run_class`` run
    of the sections ``plan(run)`` gives (name -> (section, end)); the arguments named in ``shown`` head its report."""
    started = time.monotonic()
    if argv[:1] == ["reassemble"]:
        return reassemble_command(argv[1:], prog)
    args = parse_args(argv)
    work = start(args, run_class.log_file)
    report = {"command": [*prog.split(), *argv], **{name: getattr(args, name) for name in shown}}
    report["deadline_s"] = args.deadline_s
    run = run_class(args, started, report, work)
    sections = plan(run)
    report["sections"] = {name: {"status": "pending"} for name in sections}
    run.save()
    logger.info("work folder %s; deadline %.0f s", work, args.deadline_s)
    run_sections(run, sections)
    return finish(run)


def finish(run: SectionRun) -> int:
    """The report marked finished, saved and printed (last, for a reply that carries only the end of the output);
    exit code 1 where a package is missing or a section failed."""
    faulthandler.cancel_dump_traceback_later()
    run.report["finished"] = True
    run.save()
    print(json.dumps(run.report, indent=1))
    sections = run.report["sections"].values()
    return 1 if run.report["missing_packages"] or any(s["status"].startswith("failed") for s in sections) else 0


# ----------------------------------------------------------------------------------------- subprocesses


def run_module(module: str, argv: list[str], folder: Path, name: str, seconds: float) -> dict:
    """``sys.executable -m MODULE ARGV`` from the checkout, its output in ``folder/name.out`` and ``.err``, killed
    after ``seconds``: its exit code (or None), wall time and the JSON it printed last, if any."""
    started = time.perf_counter()
    with open(folder / f"{name}.out", "w") as stdout, open(folder / f"{name}.err", "w") as stderr:
        try:
            code = subprocess.run(
                [sys.executable, "-m", module, *argv], cwd=ROOT, stdout=stdout, stderr=stderr, timeout=seconds
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


def step_seconds(log_path: Path) -> tuple[int, list[float]]:
    """How many optimizer steps a run's log records, and the seconds of each after the first (which warms up), from
    their ``elapsed``."""
    from density_train.loop.run_log import read_log

    elapsed = [record["elapsed"] for record in read_log(log_path) if record["type"] == "train"]
    return len(elapsed), [b - a for a, b in zip(elapsed, elapsed[1:])]


def fit_argv(encoder: Path, checkpoint: Path, dailydialog: Path, pair_format) -> list[str]:
    """``python -m train fit`` arguments: the Gaussian of DailyDialog's training golds (all of them; the folder
    ``dailydialog``) with ``encoder`` (a run's state/ or best/, which hold no pair format: ``pair_format``'s flags
    state it) in float16, into ``checkpoint``."""
    from density_train.config.recipe import flag_of

    argv = ["fit", "--encoder", str(encoder), "--out", str(checkpoint), "--weights-dtype", "float16"]
    argv += ["--data-dir", str(dailydialog)]
    return argv + [
        text
        for field in dataclasses.fields(pair_format)
        for text in (flag_of(field.name), str(getattr(pair_format, field.name)))
    ]


def run_files(run: Path) -> list[Path]:
    """What of a training run comes back in its tar (paths under ``run``): the subprocesses' output, the run's log
    and its checkpoint's files but the weights (not state/ nor best/: weights and optimizer, 100s of MB)."""
    checkpoint = run / "run" / "checkpoint"
    logs = [*sorted(run.glob("*.out")), *sorted(run.glob("*.err")), run / "run" / "log.jsonl"]
    return logs + sorted(path for path in checkpoint.glob("*") if path.name != WEIGHTS)


def tar_files(tar_path: Path, files: dict[Path, list[Path]]) -> None:
    """The plain files of ``files`` (a folder: the files under it, each named relative to it) into ``tar_path``
    (gzip), swapped in whole."""
    partial = tar_path.parent / f".{tar_path.name}.partial"
    with tarfile.open(partial, "w:gz") as tar:
        for root, paths in files.items():
            for path in paths:
                if path.is_file():
                    tar.add(path, arcname=str(path.relative_to(root)))
    os.replace(partial, tar_path)


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


def reassemble_command(argv: list[str], prog: str) -> int:
    """``reassemble FROM INTO``: training.tar.gz unpacked into INTO (the run's logs, ``run/checkpoint/`` without
    its weights), then the weights rebuilt into ``INTO/run/checkpoint``: a checkpoint that DensityScorer loads."""
    parser = argparse.ArgumentParser(prog=f"{prog} reassemble")
    parser.add_argument("source", type=Path, help="the folder the command's files came back to")
    parser.add_argument("into", type=Path, help="a folder to unpack the run into")
    args = parser.parse_args(argv)
    try:
        with tarfile.open(args.source / TRAINING_TAR) as tar:
            tar.extractall(args.into, filter="data")
        print(reassemble(args.source, args.into / "run" / "checkpoint"))
    except (ValueError, OSError, tarfile.TarError) as err:
        parser.exit(2, f"error: {err}\n")
    return 0
