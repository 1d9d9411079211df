"""The trace files of one run, read and diagnosed: the service every front end calls.

``gpudiag analyze`` / ``compare`` (``cli/``), the Python calls of ``api.py`` (notebooks,
scripts) and so the MCP server, whose tools run the command line, all go through
``diagnose_files``, so a Diagnosis is the same whichever way it was asked for. It sits below
them and imports none of them.

    diagnosis = diagnose_files(run_files(["run/"]), console, "run/", limits=ReadLimits())

Every problem with the input arrives as one ``TraceError`` (from this process, a pool worker or
a Dask worker alike); each front end says it its own way (a line on stderr, ``InputError``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from gpudiag.trace.errors import TraceError, unforeseen

if TYPE_CHECKING:
    from gpudiag.trace.source.limits import ReadLimits


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
    diagnose them, with progress on ``err`` (a rich Console, or None for none: a spinner
    naming the file, its number and the seconds spent). Files of several runs are refused
    unless ``as_ranks``. ``label``: what the caller called the run. TraceError for any
    problem with the input."""
    from gpudiag.analyze import diagnose
    from gpudiag.trace.ranks.runs import RankReader, group_runs, several_runs_problem

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
