"""A free TCP port on the loopback interface, for the tests that start a server or a process group, and the
torchrun command line that starts such a group on one."""

from __future__ import annotations

import socket
import sys


def free_port() -> int:
    """A port that nothing listens on now (the OS picks it; another process could take it before it is used)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def torchrun(*args: object, processes: int = 2) -> list[str]:
    """``python -m torch.distributed.run`` starting ``processes`` on a free port, then ``args`` (a script and its
    arguments, or ``-m`` and a module), all as strings."""
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", processes]
    return [str(part) for part in [*command, "--master_port", free_port(), *args]]
