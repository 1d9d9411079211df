"""``gpudiag`` command line: analyze traces, watch GPUs live, run the demo.

    gpudiag analyze trace.json [--json] [--fail-on data-starved,sync-bound]
    gpudiag compare BASE NEW [--json] [--fail-on-regression PCT]
    gpudiag live [--interval 1] [--once] [--follow TRACE]
    gpudiag demo

Exit codes: 0 ok; 2 unreadable or invalid input (one line on stderr, never a traceback);
3 when ``--fail-on`` matches the verdict or NEW is more than ``--fail-on-regression`` percent
slower; 130 on Ctrl-C. TensorFlow is imported only by ``demo``. Whatever came from input is
printed escaped (``gpudiag.show.safe``), on any terminal encoding.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import stat
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from gpudiag import __version__

EXIT_OK, EXIT_BAD_INPUT, EXIT_FAIL_ON, EXIT_INTERRUPTED = 0, 2, 3, 130
VERDICTS = ("data-starved", "sync-bound", "compute-bound", "inconclusive")


def _verdict_list(text: str) -> list[str]:
    items = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in items if x not in VERDICTS]
    if bad or not items:
        raise argparse.ArgumentTypeError(
            f"unknown verdict {', '.join(bad) or repr(text)}; choose from {', '.join(VERDICTS)}"
        )
    return items


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a percentage >= 0, got {text!r}")
    return value


def _at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number no smaller than ``minimum``."""

    def whole_number(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = minimum - 1
        if n < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number >= {minimum}, got {text!r}")
        return n

    return whole_number


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="gpudiag",
        description="Why is my (multi-GPU) training slow? Diagnose data-starved, sync-bound or "
        "compute-bound runs from traces, or watch GPUs and host live.",
    )
    p.add_argument("--version", action="version", version=f"gpudiag {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    a = sub.add_parser(
        "analyze",
        help="diagnose trace files (gpudiag, TensorFlow .xplane.pb / trace.json.gz, PyTorch)",
        description="Diagnose one run. Several files (or a directory) are the ranks/workers "
        "of one run, grouped by the run id in their headers (docs/multi-worker.md).",
    )
    a.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="trace file(s), .gz or not, or a directory of a run's rank files",
    )
    a.add_argument(
        "--jobs",
        type=_at_least(1),
        default=None,
        metavar="N",
        help="rank files read in parallel (default: one per core; 1 = serial)",
    )
    a.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="read rank files on a Dask distributed cluster (needs gpudiag[dask])",
    )
    a.add_argument(
        "--ranks",
        action="store_true",
        help="treat every file as a rank of one run even if their run ids differ",
    )
    a.add_argument("--json", action="store_true", help="print Diagnosis.to_dict() as JSON")
    a.add_argument(
        "--fail-on",
        type=_verdict_list,
        default=[],
        action="extend",
        metavar="VERDICT[,VERDICT]",
        help="exit 3 when the verdict is one of these (for CI gates; may be "
        "repeated: the lists add up)",
    )
    a.add_argument(
        "--html",
        metavar="OUT.html",
        default=None,
        help="also write a self-contained HTML report (no network fetches)",
    )
    a.add_argument(
        "--max-gzip-ratio",
        type=_ratio,
        default=None,
        metavar="X",
        help="refuse a .gz file that expands more than X times its size, a "
        "decompression bomb (default 100, or $GPUDIAG_MAX_GZIP_RATIO)",
    )
    a.add_argument(
        "--max-intervals",
        type=_at_least(1000),
        default=None,
        metavar="N",
        help="hold at most N intervals per file (about 100 bytes of memory each at the "
        "peak); a bigger trace is analyzed over its first part, and the report says so "
        "(default 2000000, or $GPUDIAG_MAX_INTERVALS)",
    )
    a.add_argument(
        "--max-xplane-mb",
        type=_ratio,
        default=None,
        metavar="MB",
        help="refuse a .xplane.pb larger than MB megabytes: reading one takes about 2.7 "
        "times its size in memory (default 350, or $GPUDIAG_MAX_XPLANE_MB)",
    )
    c = sub.add_parser(
        "compare",
        help="compare two runs (before/after a change): step time, shares, findings, fixes",
        description="Compare two runs. Each of BASE and NEW is a trace file, a directory of "
        "rank files of one run, or a quoted glob of them.",
    )
    c.add_argument("base", metavar="BASE", help="the run before the change")
    c.add_argument("new", metavar="NEW", help="the run after the change")
    c.add_argument("--json", action="store_true", help="print the comparison as JSON")
    c.add_argument(
        "--fail-on-regression",
        type=_percent,
        default=None,
        metavar="PCT",
        help="exit 3 when NEW's median step is more than PCT%% slower than BASE's",
    )
    lv = sub.add_parser("live", help="terminal monitor of GPUs, host and a running job")
    lv.add_argument(
        "--interval",
        type=float,
        default=1.0,
        metavar="S",
        help="seconds between frames (default 1)",
    )
    lv.add_argument("--once", action="store_true", help="print one frame and exit")
    lv.add_argument(
        "--follow",
        metavar="TRACE",
        nargs="+",
        help="tail a trace a DiagnoseCallback is writing; adds a training panel. "
        "Several files or a (quoted) pattern: the newest is followed, and a newer "
        "run replaces it",
    )
    d = sub.add_parser("demo", help="train a small Keras model starved, then fixed, and compare")
    d.add_argument("--quick", action="store_true", help="fewer steps (for tests)")
    d.add_argument("--out", default=None, metavar="DIR", help="where to write the two traces")
    return p


def _fail(message: str) -> int:
    """One line on stderr: input-derived text escaped (no ANSI, no newline, no surrogate)."""
    from gpudiag.show.safe import escaped

    print(f"gpudiag: {escaped(message)}", file=sys.stderr)
    return EXIT_BAD_INPUT


def strict_json(value: Any) -> Any:
    """``value`` with every non-finite float as null: ``--json`` is always strict JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict_json(v) for v in value]
    return value


class BadInput(Exception):
    """One line for stderr naming the file and the problem; exit 2."""


def _expand(paths: Sequence[str]) -> list[str]:
    """Directories become the trace files under them."""
    from gpudiag.trace.runs import trace_files

    files: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            found = trace_files(p)
            if not found:
                raise BadInput(f"{p}: directory holds no trace files")
            files += found
        else:
            files.append(p)
    return files


def _diagnose_paths(
    paths: Sequence[str],
    err: Any,
    what: str = "",
    jobs: int | None = None,
    scheduler: str | None = None,
    as_ranks: bool = False,
) -> Any:
    """Read the trace files of one run (in a process pool, or on Dask with ``scheduler``) and
    diagnose them, with progress on stderr (a spinner naming the file, its number and the
    seconds spent; nothing when stderr is not a terminal). Files of several runs are refused
    unless ``as_ranks``."""
    from rich.markup import escape

    from gpudiag.analyze import diagnose
    from gpudiag.show.safe import clean
    from gpudiag.trace.errors import TraceError
    from gpudiag.trace.runs import RankReader, describe_runs, group_runs

    current = "?"
    t0 = time.monotonic()
    try:
        files = _expand(paths)
        current = files[0] if len(files) == 1 else (paths[0] if paths else "?")
        if len(files) > 1 and not as_ranks:
            runs = group_runs(files)
            if len(runs) > 1:
                raise BadInput(
                    f"{paths[0]}: these {len(files)} files hold {len(runs)} runs "
                    f"({describe_runs(runs)}); analyze one run at a time, or pass --ranks to "
                    "treat them all as ranks of one run"
                )
        reader = RankReader(files, jobs=jobs, scheduler=scheduler)  # before the spinner
        with err.status("reading traces…", spinner="dots") as status:

            def progress(path: str, done: int) -> None:
                count = f" {done}/{len(files)}" if len(files) > 1 else ""
                status.update(
                    f"{what}read{count} {escape(clean(os.path.basename(path)))}… "
                    f"({time.monotonic() - t0:.0f} s)"
                )

            timelines = reader.collect(progress)
            status.update(
                f"{what}analyzing {len(timelines)} timeline(s)… ({time.monotonic() - t0:.0f} s)"
            )
            return diagnose(timelines)
    except TraceError as e:
        raise BadInput(f"{e.path}: {e.problem}") from None
    except MemoryError:
        raise BadInput(f"{current}: not enough memory to read this trace") from None
    except RecursionError:
        raise BadInput(f"{current}: nested too deeply to read") from None
    except BadInput:
        raise
    except Exception as e:  # an input we did not foresee must still not show a traceback
        if os.environ.get("GPUDIAG_DEBUG"):
            raise
        raise BadInput(
            f"{current}: this trace holds something gpudiag cannot read "
            f"(internal {type(e).__name__}; GPUDIAG_DEBUG=1 shows where)"
        ) from None


def cmd_analyze(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape

    from gpudiag.show.html import write_html
    from gpudiag.show.report import plain_report, render_report
    from gpudiag.show.safe import clean
    from gpudiag.trace.sink import LIMIT_ENV
    from gpudiag.trace.source import RATIO_ENV
    from gpudiag.trace.xplane import XPLANE_LIMIT_ENV

    # set in the environment, so that the pool's worker processes read files the same way
    bounds = {
        RATIO_ENV: args.max_gzip_ratio,
        LIMIT_ENV: args.max_intervals,
        XPLANE_LIMIT_ENV: args.max_xplane_mb,
    }
    saved = {k: os.environ.get(k) for k in bounds}
    os.environ.update({k: repr(v) for k, v in bounds.items() if v is not None})
    try:
        paths = [f for arg in args.paths for f in expand_pattern(arg)]
        diagnosis = _diagnose_paths(
            paths,
            Console(stderr=True),
            jobs=args.jobs,
            scheduler=args.scheduler,
            as_ranks=args.ranks,
        )
    except BadInput as e:
        return _fail(str(e))
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    if args.html:
        problem = write_html(diagnosis, args.html)
        if problem:
            return _fail(f"{args.html}: {problem}")
    if args.json:
        print(json.dumps(strict_json(diagnosis.to_dict()), indent=2, allow_nan=False))
    else:
        out = Console()
        if out.width < 40:  # too narrow for panels (or unknown): plain lines, verdict first
            print("\n".join(line.plain for line in plain_report(diagnosis)))
        else:
            out.print(render_report(diagnosis, width=out.width))
        if args.html:
            out.print(
                f"HTML report: {escape(clean(args.html))}", style="bright_black", highlight=False
            )
    if diagnosis.verdict in args.fail_on:
        return EXIT_FAIL_ON
    return EXIT_OK


def _run_files(arg: str) -> list[str]:
    """The files of one run named on the command line: a file, a directory of rank files,
    or a glob pattern (quoted, so the shell leaves it to us)."""
    if os.path.isdir(arg):
        files = sorted(
            os.path.join(arg, n)
            for n in os.listdir(arg)
            if not n.startswith(".") and os.path.isfile(os.path.join(arg, n))
        )
        if not files:
            raise BadInput(f"{arg}: directory holds no trace files")
        return files
    return expand_pattern(arg)


def expand_pattern(arg: str) -> list[str]:
    """A glob pattern the shell left alone (quoted; Windows and zsh never expand for us) is
    expanded here, sorted; any other argument is a path."""
    from gpudiag.trace.load import matching_paths

    files = matching_paths(arg)
    if not files:
        raise BadInput(f"{arg}: no file matches this pattern")
    return files


def cmd_compare(args: argparse.Namespace) -> int:
    from rich.console import Console

    from gpudiag.analyze.compare import compare
    from gpudiag.show.compare import render_comparison

    err = Console(stderr=True)
    try:
        base = _diagnose_paths(_run_files(args.base), err, "BASE: ")
        new = _diagnose_paths(_run_files(args.new), err, "NEW: ")
    except BadInput as e:
        return _fail(str(e))
    result = compare(base, new)
    if args.fail_on_regression is not None and result.step_time_ratio is None:
        side = args.base if not result.base.median_step_ms else args.new
        return _fail(f"{side}: no training steps found, so step times cannot be compared")
    if args.json:
        print(json.dumps(strict_json(result.to_dict()), indent=2, allow_nan=False))
    else:
        out = Console()
        out.print(render_comparison(result, args.base, args.new))
    if args.fail_on_regression is not None and result.regressed(args.fail_on_regression):
        return EXIT_FAIL_ON
    return EXIT_OK


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
    if head.strip() and b'"gpudiag.metadata"' not in head:
        return "not a gpudiag trace (--follow tails the file a DiagnoseCallback is writing)"
    return None


def cmd_live(args: argparse.Namespace) -> int:
    from gpudiag.show.live import run_live

    if args.interval <= 0:
        return _fail("--interval must be positive")
    source = None
    if args.follow:
        from gpudiag.show.follow import TraceFollower, newest

        current = newest(args.follow)  # the run followed first (a newer one replaces it)
        for path in [current] if current else args.follow:
            problem = _follow_problem(path)
            if problem:
                return _fail(f"{path}: {problem}")
        source = TraceFollower(args.follow)
    return run_live(
        interval=args.interval, once=args.once, follow=args.follow, training_source=source
    )


def cmd_demo(args: argparse.Namespace) -> int:
    from gpudiag.demo import run_demo

    return run_demo(quick=args.quick, out_dir=args.out)


def _tolerant_streams() -> None:
    """Never a UnicodeEncodeError on an ASCII or Latin-1 terminal (LANG=C,
    PYTHONIOENCODING=ascii): what the encoding cannot hold is written as a backslash escape."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            # closed or detached: nothing to protect
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    _tolerant_streams()
    try:
        parser = _parser()
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return EXIT_OK
        if args.command == "analyze":
            return cmd_analyze(args)
        if args.command == "compare":
            return cmd_compare(args)
        if args.command == "live":
            return cmd_live(args)
        return cmd_demo(args)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
