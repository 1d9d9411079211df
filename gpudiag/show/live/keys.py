"""Single key presses from the terminal, for ``q`` to quit the monitor.

    with Keys() as keys:
        if "q" in keys.wait(1.0):   # waits up to 1 s; "" when nothing was pressed
            ...

The terminal is put in cbreak mode and restored on exit; without a TTY (or termios) ``wait``
just sleeps, and Ctrl-C still quits.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Any


class Keys:
    """Single key presses from a TTY in cbreak mode (restored on exit); otherwise waits."""

    def __init__(self, enabled: bool = True) -> None:
        self._fd: int | None = None
        self._old: Any = None
        self._enabled = enabled

    def __enter__(self) -> Keys:
        if not self._enabled:
            return self
        try:
            import termios
            import tty

            if sys.stdin is not None and sys.stdin.isatty():
                fd = sys.stdin.fileno()
                self._old = termios.tcgetattr(fd)
                tty.setcbreak(fd)
                self._fd = fd
        except Exception:  # no termios (Windows) or not a real TTY: Ctrl-C still quits
            self._fd = None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            import termios

            with contextlib.suppress(Exception):
                termios.tcsetattr(self._fd, termios.TCSADRAIN, self._old)
            self._fd = None

    @property
    def active(self) -> bool:
        """Whether key presses are read (a TTY on stdin): only then does ``q`` quit."""
        return self._fd is not None

    def wait(self, timeout: float) -> str:
        """Keys pressed within ``timeout`` s ("" if none)."""
        if self._fd is None:
            time.sleep(max(0.0, timeout))
            return ""
        import select

        ready, _, _ = select.select([self._fd], [], [], max(0.0, timeout))
        if not ready:
            return ""
        try:
            return os.read(self._fd, 64).decode(errors="ignore")
        except OSError:
            return ""
