"""Rank files read on a Dask distributed cluster: ``gpudiag analyze --scheduler ADDRESS``.

The same per-rank task as the process pool (``runs.read_summaries``), on workers that may run
elsewhere and outlive the analysis.

    run = DaskRun(paths, "tcp://scheduler:8786", reduce=True, limits=ReadLimits())
    for path, (timelines, error) in run.results(): ...
    run.close()
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from gpudiag.trace.errors import TraceError
from gpudiag.trace.limits import ReadLimits
from gpudiag.trace.rank_summary import Result, read_summaries


class DaskRun:
    """The same per-rank task on a Dask distributed cluster. Paths are sent absolute: a
    worker resolves a relative one in its own directory (so the files must be where the
    workers see them at the same absolute path: one machine, or a shared filesystem)."""

    def __init__(self, paths: list[str], scheduler: str, reduce: bool, limits: ReadLimits) -> None:
        where = f"--scheduler {scheduler}"
        try:
            from distributed import Client
        except ImportError:
            raise TraceError(where, "needs Dask: pip install 'gpudiag[dask]'") from None
        try:
            self.client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as e:
            raise TraceError(where, f"cannot reach the Dask scheduler ({e})") from None
        except (ValueError, TypeError) as e:  # distributed's word for a malformed address
            raise TraceError(
                where, f"not a Dask scheduler address ({e}); expected e.g. tcp://HOST:8786"
            ) from None
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


def dask_task(path: str, reduce: bool, limits: ReadLimits) -> Result:
    """``read_summaries`` on a Dask worker, which lives on after the task (unlike a pool
    worker): what the read freed goes back to the system, so the worker does not keep its
    peak from one analysis to the next."""
    import gc

    from gpudiag.trace.allocator import give_back_free_memory

    result = read_summaries(path, reduce, limits)
    gc.collect()
    give_back_free_memory()
    return result
