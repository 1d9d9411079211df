"""``gpudiag analyze`` and ``gpudiag compare``: the files of a run diagnosed
(``gpudiag.diagnose_files``), then printed.

Every problem with the input arrives here as one ``TraceError`` (from this process, a pool
worker or a Dask worker alike) and leaves as one line on stderr with exit code 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from gpudiag.diagnose_files import diagnose_files
from gpudiag.trace.errors import TraceError

EXIT_OK, EXIT_BAD_INPUT, EXIT_FAIL_ON, EXIT_UNJUDGED = 0, 2, 3, 4


def fail(message: str) -> int:
    """One line on stderr: input-derived text escaped (no ANSI, no newline, no surrogate)."""
    from gpudiag.show.safe import escaped

    print(f"gpudiag: {escaped(message)}", file=sys.stderr)
    return EXIT_BAD_INPUT


def print_json(value: dict[str, Any]) -> None:
    """A ``to_dict()`` as printed by ``--json`` (already strict JSON: no NaN, no Infinity)."""
    print(json.dumps(value, indent=2, allow_nan=False))


def _stderr_console() -> Any:
    """rich's Console on stderr where it is a terminal (for the spinner), else None."""
    if not sys.stderr.isatty():
        return None
    from rich.console import Console

    return Console(stderr=True)


def cmd_analyze(args: argparse.Namespace) -> int:
    from gpudiag.cli.parser import READ_LIMIT_FLAGS
    from gpudiag.trace.ranks.runs import run_files
    from gpudiag.trace.source.limits import ReadLimits

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
    from gpudiag.trace.ranks.runs import run_files

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
