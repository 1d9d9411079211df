"""The MCP server's analyses: child processes under one memory budget, one at a time.

Each tool call runs ``gpudiag analyze|compare --json`` in a child process, so its answer is
the CLI's and a trace that exhausts memory takes down that child, not the server. The server
and its children share one budget (``GPUDIAG_MEMORY_MB``, default 300 MB, as one
``gpudiag analyze`` does): one child runs at a time and is given what the server leaves of
the budget (its reading processes are sized from it, docs/formats.md); further calls wait
their turn, at most ``MAX_WAITING`` of them. Before, each call started with the whole budget:
six concurrent calls on a 5000-rank directory peaked at 1033 MB in 19 processes.

A call cancelled by its client, or running past ``TIMEOUT_S``, stops its child and the
child's reading processes (the child leads its own process group); its answer is read to at
most ``MAX_ANSWER_BYTES``.

    runner = ChildRunner()
    answer = await runner.run(["analyze", "--json", "--", "run/"], decode)
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.abc

from gpudiag.trace.ranks.allocator import give_back_free_memory
from gpudiag.trace.source.limits import DEFAULT_MEMORY_MB, MEMORY_ENV

T = TypeVar("T")
MAX_WAITING = 16  # calls queued behind the running one; more are told to call again
# A child running longer is stopped: reading is bounded (docs/formats.md), so only a stuck
# analysis gets there, and it must not hold the client forever.
TIMEOUT_S = 900
MAX_ANSWER_BYTES = 8 << 20  # a 5000-rank diagnosis is about 3 MB; parsed, ~10x that
MAX_STDERR_BYTES = 64 << 10  # the CLI writes one line
MIN_CHILD_MB = 100  # the least --memory-mb takes (cli/parser.py)
# What the server itself takes to hand an answer on while the next child runs: the answer
# as a dict, as its JSON text, and the message the SDK writes (a 3.5 MB answer of 5000
# ranks took the server from 75 to 172 MB, benchmarks/mcp_stress.py). Kept out of each
# child's share: the child then reads with fewer worker processes.
ANSWER_RESERVE_MB = 100.0


class Busy(Exception):
    """Too many calls already wait for the analysis running now."""


class TimedOut(Exception):
    """The child ran past ``TIMEOUT_S`` and was stopped."""


def budget_mb() -> float:
    """The server's and its children's memory budget together (MB)."""
    try:
        value = float(os.environ.get(MEMORY_ENV, DEFAULT_MEMORY_MB))
    except ValueError:
        return DEFAULT_MEMORY_MB
    return value if 0 < value < float("inf") else DEFAULT_MEMORY_MB


def own_rss_mb() -> float:
    import psutil

    return float(psutil.Process().memory_info().rss) / 1e6


class ChildRunner:
    """Runs ``gpudiag`` commands one at a time within the budget (see the module's doc)."""

    def __init__(self, max_waiting: int = MAX_WAITING) -> None:
        self.max_waiting = max_waiting
        self.waiting = 0
        self._lock: anyio.Lock | None = None  # made in the event loop, on first use

    async def run(self, argv: list[str], finish: Callable[[int, bytes, bytes], T]) -> T:
        """``finish(exit code, stdout, stderr)`` of ``gpudiag ARGV``, called before the next
        child starts (it decodes the answer: its memory is not the next child's); Busy
        when the queue is full, TimedOut past ``TIMEOUT_S``. Cancelled, it stops the child
        first."""
        if self._lock is None:
            self._lock = anyio.Lock()
        if self.waiting >= self.max_waiting:
            raise Busy(self.waiting)
        self.waiting += 1
        try:
            await self._lock.acquire()
        finally:
            self.waiting -= 1
        try:
            return finish(*await self._child(argv))
        finally:
            self._lock.release()

    async def _child(self, argv: list[str]) -> tuple[int, bytes, bytes]:
        gc.collect()  # the last answer's memory back to the system, then measured
        give_back_free_memory()
        share = max(MIN_CHILD_MB, budget_mb() - own_rss_mb() - ANSWER_RESERVE_MB)
        env = {**os.environ, MEMORY_ENV: f"{share:.0f}"}
        proc = await anyio.open_process(
            [sys.executable, "-m", "gpudiag", *argv],
            stdin=subprocess.DEVNULL,  # stdin carries the protocol
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,  # its own group: stopped with its reading processes
        )
        out: list[bytes] = []
        err: list[bytes] = []
        try:
            with anyio.move_on_after(TIMEOUT_S) as deadline:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_drain, proc.stdout, out, MAX_ANSWER_BYTES)
                    tg.start_soon(_drain, proc.stderr, err, MAX_STDERR_BYTES)
                await proc.wait()
            if deadline.cancelled_caught:
                raise TimedOut(TIMEOUT_S)
        finally:
            if proc.returncode is None:
                _stop_group(proc)
                with anyio.CancelScope(shield=True):
                    await proc.wait()
        code = proc.returncode if proc.returncode is not None else -signal.SIGKILL
        return code, b"".join(out), b"".join(err)


async def _drain(stream: anyio.abc.ByteReceiveStream | None, into: list[bytes], cap: int) -> None:
    """Read ``stream`` to its end, keeping at most ``cap`` bytes (then one marker byte more,
    so a caller can tell an answer cut short)."""
    if stream is None:
        return
    kept = 0
    async for chunk in stream:
        if kept <= cap:
            piece = chunk[: cap + 1 - kept]
            into.append(piece)
            kept += len(piece)


def _stop_group(proc: Any) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
