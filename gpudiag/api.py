"""The command line's analyses as Python calls, for notebooks, scripts and the MCP server.

    import gpudiag
    d = gpudiag.analyze_traces("run/rank*.json.gz")  # the Diagnosis `gpudiag analyze` prints
    d.verdict, d.to_dict()                            # to_dict() is exactly `--json`
    c = gpudiag.compare_runs("base/", "new/")         # what `gpudiag compare` computes

They read and diagnose through the service the CLI calls too (``gpudiag.diagnose_files``), so
a Diagnosis here equals the one behind ``gpudiag analyze --json``. (The name
``gpudiag.analyze`` is the package of the analyzers, hence ``analyze_traces``.) Bad input
raises ``InputError``: one line naming the file and the problem, as the CLI prints it.
Progress (reading, analyzing) shows on stderr in a terminal and in the output cell in Jupyter
(rich's notebook support, with ``ipywidgets``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpudiag.analyze.compare import Comparison
    from gpudiag.analyze.diagnosis import Diagnosis

PathArg = str | os.PathLike[str]


class InputError(ValueError):
    """A trace that cannot be used: the message names the file and the problem."""


@contextlib.contextmanager
def progress_display(show: bool = True) -> Iterator[Any]:
    """The console progress goes to: rich's on stderr, which in a Jupyter kernel draws in the
    output cell instead (through an ipywidgets Output). There the whole display lives in one
    Output of ours, closed at the end, because rich's live display leaves an empty output
    behind when it stops. Quiet when ``show`` is false, or in a notebook without ipywidgets,
    where rich would only warn on every update."""
    from rich.console import Console

    console = Console(stderr=True)
    if console.is_jupyter and importlib.util.find_spec("ipywidgets") is None:
        show = False
    if not show:
        yield Console(stderr=True, quiet=True, force_jupyter=False)
    elif not console.is_jupyter:
        yield console
    else:
        from IPython.display import display
        from ipywidgets import Output

        area = Output()
        display(area)
        try:
            with area:
                yield console
        finally:
            area.close()


def _arguments(paths: PathArg | Iterable[PathArg]) -> list[str]:
    if isinstance(paths, str | os.PathLike):
        return [os.fspath(paths)]
    return [os.fspath(p) for p in paths]


def analyze_traces(
    paths: PathArg | Iterable[PathArg],
    *,
    ranks: bool = False,
    jobs: int | None = None,
    progress: bool = True,
) -> Diagnosis:
    """Diagnose one run, as ``gpudiag analyze PATH...``: trace files, quoted glob patterns or
    a directory of rank files. ``ranks``: treat every file as a rank of one run even when
    their run ids differ (``--ranks``); ``jobs``: rank files read in parallel (``--jobs``);
    ``progress``: show the progress of reading and analyzing (``progress_display``)."""
    from gpudiag.diagnose_files import diagnose_files
    from gpudiag.trace.errors import TraceError
    from gpudiag.trace.ranks.runs import run_files
    from gpudiag.trace.source.limits import ReadLimits

    args = _arguments(paths)
    if not args:
        raise InputError("no trace given")
    try:
        with progress_display(progress) as console:
            diagnosis: Diagnosis = diagnose_files(
                run_files(args),
                console,
                args[0],
                jobs=jobs,
                as_ranks=ranks,
                limits=ReadLimits.from_env(),
            )
    except TraceError as e:
        raise InputError(str(e)) from None
    return diagnosis


def compare_runs(base: PathArg, new: PathArg, *, progress: bool = True) -> Comparison:
    """Compare two runs, as ``gpudiag compare BASE NEW``: each a trace file, a directory of
    rank files or a quoted glob."""
    from gpudiag.analyze.compare import compare
    from gpudiag.diagnose_files import diagnose_files
    from gpudiag.trace.errors import TraceError
    from gpudiag.trace.ranks.runs import run_files

    sides = os.fspath(base), os.fspath(new)
    try:
        with progress_display(progress) as console:
            before = diagnose_files(run_files([sides[0]]), console, sides[0], "BASE: ")
            after = diagnose_files(run_files([sides[1]]), console, sides[1], "NEW: ")
    except TraceError as e:
        raise InputError(str(e)) from None
    return compare(before, after)
