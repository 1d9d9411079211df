"""The one exception for input gpudiag cannot use, from a reader to the command line.

A reader raises it, a pool or Dask worker returns it as it is (it pickles), and the CLI
prints it as one line ``gpudiag: <file>: <problem>`` with exit code 2. Nothing else a reader
raises may reach the user as a traceback: ``unforeseen`` turns any other exception into one.

    raise TraceError(path, "truncated gzip (the file ends mid-stream)")
"""

from __future__ import annotations

import os


class TraceError(Exception):
    """A file that cannot be read as a trace: missing, empty, truncated, wrong format..."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(path, problem)  # both in args: it crosses process boundaries intact
        self.path = path
        self.problem = problem

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


class TruncatedTrace(TraceError):
    """The file ends mid-document: cut short, or still being written (``load_file`` tells
    which from the file's modification time)."""


def unforeseen(path: str, error: BaseException) -> TraceError:
    """The TraceError for an exception no reader foresaw. Its text is gpudiag's, not the
    input's, so only its type is named; ``GPUDIAG_DEBUG=1`` re-raises it instead."""
    if isinstance(error, TraceError):
        return error
    if isinstance(error, MemoryError):
        return TraceError(path, "not enough memory to read this trace")
    if isinstance(error, RecursionError):
        return TraceError(path, "nested too deeply to read")
    if os.environ.get("GPUDIAG_DEBUG"):
        raise error
    return TraceError(
        path,
        f"this trace holds something gpudiag cannot read (internal "
        f"{type(error).__name__}; GPUDIAG_DEBUG=1 shows where)",
    )
