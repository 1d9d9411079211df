"""A command's own peak RSS, measured from a small launcher process.

A process's peak RSS (``ru_maxrss``, from ``wait4``) counts the memory of the process it
was forked from until it executes the command: a command started from a pytest process of
280 MB reported 287 MB whatever it used. ``/usr/bin/time`` avoids that by forking from a
small process; so does this launcher (a ``python -S`` of about 10 MB), which forks the
command, waits for it, writes its peak RSS to a file and exits as it did.

    done = run_measured([sys.executable, "-m", "gpudiag", "analyze", path], timeout=60)
    if done is not None:
        proc, peak_mb = done
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
if code < 0:
    os.kill(os.getpid(), -code)
sys.exit(code)
"""


def run_measured(
    cmd: list[str],
    timeout: float,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    preexec_fn: Callable[[], None] | None = None,
) -> tuple[subprocess.CompletedProcess[bytes], float] | None:
    """``cmd`` run to its end (stdout and stderr captured) and its peak RSS in MB, or None
    past ``timeout`` (then the command and its children are killed)."""
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.NamedTemporaryFile("r", suffix=".rss") as rss,
    ):
        proc = subprocess.Popen(
            [sys.executable, "-S", "-c", LAUNCHER, rss.name, *cmd],
            stdout=out,
            stderr=err,
            env=env,
            cwd=cwd,
            preexec_fn=preexec_fn,
            start_new_session=True,  # a group of its own: a timeout kills the command too
        )
        deadline = time.monotonic() + timeout
        while proc.poll() is None:
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return None
            time.sleep(0.02)
        out.seek(0)
        err.seek(0)
        text = rss.read().strip()
        done = subprocess.CompletedProcess(cmd, proc.returncode, out.read(), err.read())
    return done, (int(text) / 1024 if text else 0.0)
