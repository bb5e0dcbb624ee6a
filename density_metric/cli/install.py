"""The ``install`` command: the evaluate module into evaluate's cache (:mod:`density_metric.install`)."""

from __future__ import annotations

import argparse


def add_install_command(commands) -> None:
    """Register ``install`` on the command line's subparsers."""
    install = commands.add_parser(
        "install", help="install the evaluate module so evaluate.load('density') works offline"
    )
    install.set_defaults(func=install_command)


def install_command(args: argparse.Namespace) -> int:
    from ..install import install_evaluate_module

    print(f"evaluate module installed: {install_evaluate_module()}")
    return 0
