"""The command line's parser and entry point: the commands' options registered (one module a command:
:mod:`.score`, :mod:`.compare`, :mod:`.install`), the checks every command makes first, and the run."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from ..errors import fail
from .compare import add_compare_command
from .install import add_install_command
from .score import add_score_command


def program_name(argv0: str | None = None) -> str:
    """The command as the user typed it, for usage lines: ``density-metric`` (the console script), or
    ``python -m density_metric`` (argparse's own default would say ``__main__.py``)."""
    name = Path(sys.argv[0] if argv0 is None else argv0).name
    return "python -m density_metric" if name in ("", "-c", "__main__.py") else name


def build_parser(prog: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; ``prog`` names the command in usage lines (default: :func:`program_name`)."""
    parser = argparse.ArgumentParser(prog=prog or program_name(), description="DEnsity dialogue response scores")
    commands = parser.add_subparsers(dest="command", required=True)
    add_score_command(commands)
    add_compare_command(commands)
    add_install_command(commands)
    return parser


def check_device(device: str) -> None:
    """An ``error:`` exit, before any file is touched, for a --device that this torch cannot score on here:
    scoring runs on CPU or CUDA (mps, xla or meta may parse as torch devices, and fail later with a traceback)."""
    from ..encoding.device import resolve_device

    try:
        kind = resolve_device(device).type
    except ValueError as err:
        fail(f"--device {device!r}: {err}")
    if kind not in ("cpu", "cuda"):
        fail(f"--device {device!r}: density-metric scores on cpu or cuda, not {kind}; use auto, cpu, cuda or cuda:N")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "context_sep", None) == "":
        fail("--context-sep must not be empty")
    if getattr(args, "device", None) is not None:
        check_device(args.device)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    return args.func(args)
