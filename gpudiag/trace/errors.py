"""The one exception readers raise for input they cannot use.

The CLI turns it into exit code 2 and a single line ``gpudiag: <file>: <problem>``; nothing
else a reader raises is allowed to reach the user as a traceback.
"""

from __future__ import annotations


class TraceError(Exception):
    """A file that cannot be read as a trace: missing, empty, truncated, wrong format..."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem
