"""Rank files read on a Dask distributed cluster: ``gpudiag analyze --scheduler ADDRESS``.

The same per-rank task as the process pool (``runs.read_summaries``), on workers that may run
elsewhere and outlive the analysis.

    run = DaskRun(paths, "tcp://scheduler:8786", reduce=True, limits=ReadLimits())
    for path, (timelines, error) in run.results(): ...
    run.close()
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from collections.abc import Iterator
from typing import Any

from gpudiag.trace.errors import TraceError
from gpudiag.trace.ranks.summary import Result, read_summaries
from gpudiag.trace.source.limits import ReadLimits

# The whole connection (TCP connect, Dask's handshake, the client's registration) must end
# within this: Dask's own timeout covers the connect only, so a port that accepts and never
# speaks Dask (an HTTP server's) held the client for good.
HANDSHAKE_S = 10.0
# A Dask message opens with its length (8 bytes, little-endian); the scheduler's handshake,
# the first message it sends, is well under this. SSH's greeting read as a length is 3 EiB,
# which Dask tried to allocate.
MAX_HANDSHAKE_BYTES = 1 << 20
DEFAULT_PORT = 8786  # Dask's scheduler


class DaskRun:
    """The same per-rank task on a Dask distributed cluster. Paths are sent absolute: a
    worker resolves a relative one in its own directory (so the files must be where the
    workers see them at the same absolute path: one machine, or a shared filesystem)."""

    def __init__(self, paths: list[str], scheduler: str, reduce: bool, limits: ReadLimits) -> None:
        self.client = connect(scheduler)
        absolute = [os.path.abspath(p) for p in paths]
        self.futures = self.client.map(
            dask_task, absolute, reduce=reduce, limits=limits, pure=False
        )
        self.where = {f.key: p for f, p in zip(self.futures, paths, strict=True)}

    def results(self) -> Iterator[tuple[str, Result]]:
        from distributed import as_completed as dask_completed

        for fut in dask_completed(self.futures):
            path = self.where[fut.key]
            tls, error = fut.result()
            if error is not None:  # named as the user named it, not by its absolute path
                error = TraceError(path, error.problem)
            fut.release()  # the worker may drop the summary once it is here
            yield path, (tls, error)

    def close(self) -> None:
        self.client.close()


def connect(scheduler: str) -> Any:
    """A ``distributed.Client`` of the scheduler, connected within ``HANDSHAKE_S`` from start
    to end, or a TraceError naming the scheduler (never the traces) and what it did."""
    where = f"--scheduler {scheduler}"
    try:
        from distributed import Client
        from distributed.comm.addressing import parse_address, parse_host_port
    except ImportError:
        raise TraceError(where, "needs Dask: pip install 'gpudiag[dask]'") from None
    try:
        scheme, location = parse_address(scheduler)
        host_port = parse_host_port(location) if scheme == "tcp" else None
    except (ValueError, TypeError) as e:  # distributed's word for a malformed address
        raise TraceError(
            where, f"not a Dask scheduler address ({e}); expected e.g. tcp://HOST:8786"
        ) from None
    if host_port is not None:  # a port that does not speak Dask never reaches Dask
        problem = probe(*host_port, HANDSHAKE_S)
        if problem:
            raise TraceError(where, problem)
    return _within_deadline(lambda: Client(scheduler, timeout=f"{HANDSHAKE_S}s"), where)


def probe(host: str, port: int, seconds: float) -> str | None:
    """What keeps ``host:port`` from being a Dask scheduler, or None: a Dask scheduler sends
    its handshake as soon as it accepts, a message that opens with its small length."""
    deadline = time.monotonic() + seconds
    try:
        with socket.create_connection((host, port), timeout=seconds) as sock:
            head = b""
            while len(head) < 8:  # the deadline holds for the whole greeting
                sock.settimeout(max(0.01, deadline - time.monotonic()))
                more = sock.recv(8 - len(head))
                if not more:
                    return (
                        f"the server at {host}:{port} closed the connection without speaking "
                        "Dask's protocol: is it a Dask scheduler's address?"
                    )
                head += more
    except TimeoutError:
        return (
            f"the server at {host}:{port} accepted the connection but did not speak Dask's "
            f"protocol within {seconds:g} s (an HTTP server or another service on that "
            f"port?); a Dask scheduler listens on {DEFAULT_PORT} by default"
        )
    except OSError as e:
        return f"cannot reach the Dask scheduler ({e.strerror or e})"
    (size,) = struct.unpack("<Q", head)
    if not 0 < size <= MAX_HANDSHAKE_BYTES:
        what = " (it greets as an SSH server does)" if head.startswith(b"SSH-") else ""
        return (
            f"the server at {host}:{port} does not speak Dask's protocol{what}: is it a "
            "Dask scheduler's address?"
        )
    return None


def _within_deadline(make: Any, where: str) -> Any:
    """``make()`` (a Client) in a thread, given up after ``HANDSHAKE_S`` and a margin: a
    client given up on is closed if it connects later."""
    box: dict[str, Any] = {}
    lock = threading.Lock()

    def run() -> None:
        try:
            client = make()
        except BaseException as e:  # reported below, in words that name the scheduler
            with lock:
                box["error"] = e
            return
        with lock:
            abandoned = box.get("abandoned", False)
            box["client"] = client
        if abandoned:
            client.close()

    thread = threading.Thread(target=run, name="gpudiag-dask-connect", daemon=True)
    thread.start()
    thread.join(HANDSHAKE_S + 2.0)  # Dask reports its own timeout first if it can
    with lock:
        client, error = box.get("client"), box.get("error")
        box["abandoned"] = client is None and error is None
    if client is not None:
        return client
    if error is None:
        raise TraceError(
            where, f"the Dask scheduler did not complete its handshake within {HANDSHAKE_S:g} s"
        )
    if isinstance(error, OSError | TimeoutError):
        raise TraceError(where, f"cannot reach the Dask scheduler ({error})")
    if isinstance(error, ValueError | TypeError):
        raise TraceError(
            where, f"not a Dask scheduler address ({error}); expected e.g. tcp://HOST:8786"
        )
    if isinstance(error, MemoryError):  # a message length no Dask peer sends
        raise TraceError(where, "the server does not speak Dask's protocol")
    raise TraceError(where, f"the Dask handshake failed ({type(error).__name__})")


def dask_task(path: str, reduce: bool, limits: ReadLimits) -> Result:
    """``read_summaries`` on a Dask worker, which lives on after the task (unlike a pool
    worker): what the read freed goes back to the system, so the worker does not keep its
    peak from one analysis to the next."""
    import gc

    from gpudiag.trace.ranks.allocator import give_back_free_memory

    result = read_summaries(path, reduce, limits)
    gc.collect()
    give_back_free_memory()
    return result
