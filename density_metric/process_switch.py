"""A process-wide setting that threads change for a while: on while any of them needs it, put back by the last.

transformers' log level and progress bars, and datasets' progress bars, are one setting for the whole process. A
context that saves a setting, changes it and restores what it saved leaves it wrong for good when two threads
overlap (A saves, B saves A's change, A restores, B restores A's change). :class:`ProcessSwitch` counts the threads
inside it: the first saves and changes the setting, the last puts the saved value back.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any


class ProcessSwitch:
    """``with switch():`` holds a setting changed: ``turn(): saved`` changes it and returns what it was,
    ``put_back(saved)`` restores that; each runs once for any number of overlapping holders."""

    def __init__(self, turn: Callable[[], Any], put_back: Callable[[Any], None]):
        self._turn, self._put_back = turn, put_back
        self._lock = threading.Lock()
        self._holders = 0
        self._saved: Any = None

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._holders == 0:
                self._saved = self._turn()
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if self._holders == 0:
                    self._put_back(self._saved)
