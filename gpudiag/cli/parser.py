"""The command line's arguments: one parser, its value checks, the read bounds' flags.

args = build_parser().parse_args(["analyze", "run.json", "--json"])
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from gpudiag.version import __version__

# as in gpudiag.analyze.diagnosis, which this does not import: `gpudiag --help` stays light
VERDICTS = ("data-starved", "sync-bound", "compute-bound", "inconclusive")


def verdict_list(text: str) -> list[str]:
    items = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in items if x not in VERDICTS]
    if bad or not items:
        raise argparse.ArgumentTypeError(
            f"unknown verdict {', '.join(bad) or repr(text)}; choose from {', '.join(VERDICTS)}"
        )
    return items


def at_least(minimum: float, whole: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number no smaller than ``minimum`` (an int if ``whole``)."""

    def number(text: str) -> float:
        try:
            value: float = int(text) if whole else float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < minimum:
            kind = "a whole number" if whole else "a number"
            raise argparse.ArgumentTypeError(f"expected {kind} >= {minimum:g}, got {text!r}")
        return value

    return number


def positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage >= 0, got {text!r}") from None
    if not value >= 0 or value == math.inf:
        raise argparse.ArgumentTypeError(f"expected a percentage >= 0, got {text!r}")
    return value


# the bounds of ReadLimits: (flag, field, type, metavar, help); docs/formats.md has the why
READ_LIMIT_FLAGS: tuple[tuple[str, str, Callable[[str], float], str, str], ...] = (
    (
        "--max-gzip-ratio",
        "gzip_ratio",
        positive,
        "X",
        "refuse a .gz file that expands more than X times its size, a decompression bomb "
        "(default 100, or $GPUDIAG_MAX_GZIP_RATIO)",
    ),
    (
        "--max-intervals",
        "max_intervals",
        at_least(1000, whole=True),
        "N",
        "hold at most N intervals per file (about 100 bytes of memory each at the peak); "
        "a bigger trace is analyzed over its first part, and the report says so "
        "(default 2000000, or $GPUDIAG_MAX_INTERVALS)",
    ),
    (
        "--max-xplane-mb",
        "xplane_mb",
        positive,
        "MB",
        "refuse a .xplane.pb larger than MB megabytes: reading one takes about 2.7 times "
        "its size in memory (default 350, or $GPUDIAG_MAX_XPLANE_MB)",
    ),
    (
        "--max-xplane-metadata",
        "xplane_metadata",
        at_least(1000, whole=True),
        "N",
        "refuse a .xplane.pb holding more than N metadata entries (event and stat names, "
        "about 300 bytes of memory each; real profiles hold up to about 11000) "
        "(default 100000, or $GPUDIAG_MAX_XPLANE_METADATA)",
    ),
    (
        "--max-xplane-lines",
        "xplane_lines",
        at_least(100, whole=True),
        "N",
        "refuse a .xplane.pb holding more than N lines (threads and streams, about 500 "
        "bytes each; real profiles hold tens) (default 50000, or $GPUDIAG_MAX_XPLANE_LINES)",
    ),
    (
        "--memory-mb",
        "memory_mb",
        at_least(100),
        "MB",
        "memory budget of the whole analysis, worker processes included: it decides how "
        "many rank files are read at once, each worker costing about 45 MB plus 100 bytes "
        "per interval it may hold (default 300, or $GPUDIAG_MEMORY_MB)",
    ),
)


def _analyze(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
        type=at_least(1, whole=True),
        default=None,
        metavar="N",
        help="rank files read in parallel by at most N processes (default: one per core), "
        "fewer where the memory budget (--memory-mb) does not hold N; 1 = serial",
    )
    a.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="read rank files on a Dask distributed cluster (needs gpudiag[dask]); paths "
        "are sent absolute, so the workers must see the files at the same path",
    )
    a.add_argument(
        "--ranks",
        action="store_true",
        help="treat every file as a rank of one run even if their run ids differ",
    )
    a.add_argument("--json", action="store_true", help="print Diagnosis.to_dict() as JSON")
    a.add_argument(
        "--fail-on",
        type=verdict_list,
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
    for flag, dest, kind, metavar, text in READ_LIMIT_FLAGS:
        a.add_argument(flag, dest=dest, type=kind, default=None, metavar=metavar, help=text)


def _compare(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
        type=percent,
        default=None,
        metavar="PCT",
        help="exit 3 when NEW does its work more than PCT%% slower than BASE (work per "
        "second, beyond the runs' noise); exit 4 when that cannot be judged (a run stopped "
        "early, the runs are different programs)",
    )


def _live(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="gpudiag",
        description="Why is my (multi-GPU) training slow? Diagnose data-starved, sync-bound or "
        "compute-bound runs from traces, or watch GPUs and host live.",
    )
    p.add_argument("--version", action="version", version=f"gpudiag {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    _analyze(sub)
    _compare(sub)
    _live(sub)
    d = sub.add_parser("demo", help="train a small Keras model starved, then fixed, and compare")
    d.add_argument("--quick", action="store_true", help="fewer steps (for tests)")
    d.add_argument("--out", default=None, metavar="DIR", help="where to write the two traces")
    sub.add_parser(
        "mcp",
        help="serve analyze, compare and remedies to an MCP client over stdio "
        "(needs gpudiag[mcp]; docs/mcp.md)",
    )
    return p
