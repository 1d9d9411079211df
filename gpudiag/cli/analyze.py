"""``gpudiag analyze`` and ``gpudiag compare``: read the files of a run, diagnose, print.

Every problem with the input arrives here as one ``TraceError`` (from this process, a pool
worker or a Dask worker alike) and leaves as one line on stderr with exit code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from gpudiag.trace.errors import TraceError, unforeseen

if TYPE_CHECKING:
    from gpudiag.trace.limits import ReadLimits

EXIT_OK, EXIT_BAD_INPUT, EXIT_FAIL_ON, EXIT_UNJUDGED = 0, 2, 3, 4


def fail(message: str) -> int:
    """One line on stderr: input-derived text escaped (no ANSI, no newline, no surrogate)."""
    from gpudiag.show.safe import escaped

    print(f"gpudiag: {escaped(message)}", file=sys.stderr)
    return EXIT_BAD_INPUT


def print_json(value: dict[str, Any]) -> None:
    """A ``to_dict()`` as printed by ``--json`` (already strict JSON: no NaN, no Infinity)."""
    print(json.dumps(value, indent=2, allow_nan=False))


def diagnose_files(
    files: Sequence[str],
    err: Any,
    label: str,
    what: str = "",
    jobs: int | None = None,
    scheduler: str | None = None,
    as_ranks: bool = False,
    limits: ReadLimits | None = None,
) -> Any:
    """Read the trace files of one run (in a process pool, or on Dask with ``scheduler``) and
    diagnose them, with progress on stderr (a spinner naming the file, its number and the
    seconds spent; nothing when stderr is not a terminal). Files of several runs are refused
    unless ``as_ranks``. ``label``: what the command line called the run. TraceError for
    any problem with the input."""
    from gpudiag.analyze import diagnose
    from gpudiag.trace.runs import RankReader, group_runs, several_runs_problem

    current = files[0] if len(files) == 1 else label
    t0 = time.monotonic()
    try:
        if len(files) > 1 and not as_ranks:
            runs = group_runs(files)
            if len(runs) > 1:
                raise TraceError(label, several_runs_problem(runs))
        reader = RankReader(files, jobs, scheduler, limits)  # before the spinner
        with _status(err) as status:

            def progress(path: str, done: int) -> None:
                if err is None:
                    return
                from rich.markup import escape

                from gpudiag.show.safe import clean

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
    except Exception as e:  # an input we did not foresee must still not show a traceback
        raise unforeseen(current, e) from None


def _status(err: Any) -> contextlib.AbstractContextManager[Any]:
    """The spinner on ``err`` (a rich Console), or a silent stand-in when there is none."""
    if err is None:
        return contextlib.nullcontext(_Silent())
    return cast(
        contextlib.AbstractContextManager[Any], err.status("reading traces…", spinner="dots")
    )


class _Silent:
    """A status that shows nothing (stderr is not a terminal: rich would show nothing
    either, and importing it costs a tenth of a small trace's time)."""

    def update(self, text: str) -> None:
        pass


def _stderr_console() -> Any:
    """rich's Console on stderr where it is a terminal (for the spinner), else None."""
    if not sys.stderr.isatty():
        return None
    from rich.console import Console

    return Console(stderr=True)


def cmd_analyze(args: argparse.Namespace) -> int:
    from gpudiag.cli.parser import READ_LIMIT_FLAGS
    from gpudiag.trace.limits import ReadLimits
    from gpudiag.trace.runs import run_files

    limits = ReadLimits.from_env(**{dest: getattr(args, dest) for _, dest, *_ in READ_LIMIT_FLAGS})
    try:
        diagnosis = diagnose_files(
            run_files(args.paths),
            _stderr_console(),
            args.paths[0],
            jobs=args.jobs,
            scheduler=args.scheduler,
            as_ranks=args.ranks,
            limits=limits,
        )
    except TraceError as e:
        return fail(str(e))
    if args.html:
        from gpudiag.show.html import write_html

        problem = write_html(diagnosis, args.html)
        if problem:
            return fail(f"{args.html}: {problem}")
    if args.json:
        print_json(diagnosis.to_dict())
    else:
        from rich.console import Console
        from rich.markup import escape

        from gpudiag.show.report import plain_report, render_report
        from gpudiag.show.safe import clean

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


def cmd_compare(args: argparse.Namespace) -> int:
    from gpudiag.analyze.compare import compare
    from gpudiag.show.compare import render_comparison
    from gpudiag.trace.runs import run_files

    err = _stderr_console()
    try:
        base = diagnose_files(run_files([args.base]), err, args.base, "BASE: ")
        new = diagnose_files(run_files([args.new]), err, args.new, "NEW: ")
    except TraceError as e:
        return fail(str(e))
    result = compare(base, new)
    gate = args.fail_on_regression is not None
    if gate and not (result.base.steps and result.new.steps):
        side = args.base if not result.base.steps else args.new
        return fail(f"{side}: no training steps found, so step times cannot be compared")
    if args.json:
        print_json(result.to_dict())
    else:
        from rich.console import Console

        out = Console()
        out.print(render_comparison(result, args.base, args.new))
    if gate and (not result.judged or result.work is None):
        return _unjudged(result)
    if gate and result.regressed(args.fail_on_regression):
        return EXIT_FAIL_ON
    return EXIT_OK


def _unjudged(result: Any) -> int:
    """The gate was asked for and cannot judge: a run stopped early, the runs are different
    programs, or a side has no steady steps. One line on stderr, and its own exit code: a
    gate that cannot judge neither passes nor reports a regression."""
    sides = (("BASE", result.base), ("NEW", result.new))
    if result.differences:
        why = "BASE and NEW are different programs (" + ", ".join(result.differences) + ")"
    else:
        why = result.unmeasured or "; ".join(f"{n} {r.stopped}" for n, r in sides if r.stopped)
    print(f"gpudiag: the regression gate cannot judge: {why}", file=sys.stderr)
    return EXIT_UNJUDGED
