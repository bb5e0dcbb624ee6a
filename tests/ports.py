"""A free TCP port on the loopback interface, for the tests that start a server or a process group."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port that nothing listens on now (the OS picks it; another process could take it before it is used)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
