"""``gpudiag live`` (a terminal monitor, optionally following a trace being written),
``gpudiag demo`` and ``gpudiag mcp``."""

from __future__ import annotations

import argparse
import os
import stat

from gpudiag.cli.analyze import fail


def _follow_problem(path: str) -> str | None:
    """A trace to follow may not exist yet (training about to start); if it does, it must be
    a gpudiag trace in a regular file (opening a FIFO would block until a writer comes)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None  # not there yet
    if stat.S_ISDIR(mode):
        return "is a directory; pass the trace file DiagnoseCallback writes"
    if not stat.S_ISREG(mode):
        return (
            "not a regular file (a FIFO, socket or device): --follow tails the trace "
            "file a DiagnoseCallback is writing"
        )
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as e:
        return f"cannot read: {e.strerror or e}"
    from gpudiag.trace.formats import find_format

    fmt = find_format(head)
    if head.strip() and (fmt is None or fmt.name != "gpudiag"):
        return "not a gpudiag trace (--follow tails the file a DiagnoseCallback is writing)"
    return None


def cmd_live(args: argparse.Namespace) -> int:
    from gpudiag.show.live import run_live

    if args.interval <= 0:
        return fail("--interval must be positive")
    source = None
    if args.follow:
        from gpudiag.show.follow import TraceFollower, newest

        current = newest(args.follow)  # the run followed first (a newer one replaces it)
        for path in [current] if current else args.follow:
            problem = _follow_problem(path)
            if problem:
                return fail(f"{path}: {problem}")
        source = TraceFollower(args.follow)
    return run_live(
        interval=args.interval, once=args.once, follow=args.follow, training_source=source
    )


def cmd_demo(args: argparse.Namespace) -> int:
    from gpudiag.demo import run_demo

    return run_demo(quick=args.quick, out_dir=args.out)


def cmd_mcp(args: argparse.Namespace) -> int:
    from gpudiag.mcp_server import serve

    return serve()
