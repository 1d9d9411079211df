"""Many rank files: which run each belongs to, and reading them in parallel.

    runs = group_runs(files)                  # [[rank files of run A], [run B], ...]
    timelines = load_ranks(runs[0], jobs=2)   # a process pool; scheduler="tcp://..." for Dask

Grouping reads only each file's head: gpudiag traces carry ``run_id`` and ``rank`` in their
header (gpudiag/record/ranks.py), Kineto traces a ``distributedInfo`` rank. Files with the same
run id are one run; the same rank twice under one id (a cluster reused for a second run) splits
the group by start time. Files without a run id form one group unless two of them claim the
same rank (two single-process runs): then each is a run of its own.

Each rank is read where it is parsed (a pool worker, as many as the memory budget holds:
``pool_size``; a Dask worker: ``dask_run.py``) and only its *summary* comes back: steps, the
profiled window's device activity (merged per device and kind), input waits there and
counters thinned (``summary.py``); never the whole trace. Memory in the parent grows
with ranks x profiled window, not with trace size.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpudiag.trace.errors import TraceError
from gpudiag.trace.model.timeline import Timeline
from gpudiag.trace.ranks.summary import Result, read_summaries
from gpudiag.trace.source.limits import ReadLimits

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

TRACE_SUFFIXES = (".json", ".json.gz", ".gz", ".pb")


@dataclass
class RankFile:
    path: str
    run_id: str | None
    rank: int | None
    started_us: float | None
    fingerprint: tuple[int, str] | None = None  # size and digest of the head: copies match


def trace_files(folder: str) -> list[str]:
    """Trace files under a directory (xprof writes ``plugins/profile/<run>/*.xplane.pb``)."""
    out = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        out += [
            os.path.join(root, n)
            for n in sorted(names)
            if not n.startswith(".") and n.endswith(TRACE_SUFFIXES)
        ]
    return out


def run_files(args: Sequence[str]) -> list[str]:
    """The files that command-line arguments name, the one answer for ``analyze`` and
    ``compare``: a directory gives the trace files under it (``trace_files``; for a profile
    directory DiagnoseCallback kept, the run's trace instead of its windows), a quoted glob
    pattern its matches, anything else is a path. TraceError for a directory without trace
    files or a pattern that matches nothing."""
    from gpudiag.trace.load import matching_paths
    from gpudiag.trace.ranks.kept_run import files_of_kept_run

    files: list[str] = []
    for arg in args:
        matched = matching_paths(arg)
        if not matched:
            raise TraceError(arg, "no file matches this pattern")
        for path in matched:
            if os.path.isdir(path):
                found = trace_files(path)
                if not found:
                    raise TraceError(path, "directory holds no trace files")
                files += files_of_kept_run(path, found)  # a callback's profile_dir
            else:
                files.append(path)
    return files


def identify(path: str) -> RankFile:
    """Run id, rank and start of a file from its head (no full read), as its format in the
    table says. TraceError for a file that cannot be read at all."""
    import hashlib  # several files only: one trace never imports it

    from gpudiag.trace.formats import Identity, find_format
    from gpudiag.trace.source.files import peek_source

    head = peek_source(path, 1 << 16)  # TraceError for missing, empty, unreadable files
    fmt = find_format(head)
    who = fmt.identify(head) if fmt is not None else Identity()
    digest = hashlib.blake2b(head, digest_size=16).hexdigest()
    return RankFile(path, who.run_id, who.rank, who.started_us, (os.path.getsize(path), digest))


def group_runs(paths: Sequence[str]) -> list[list[RankFile]]:
    """Files grouped into runs, in first-seen order."""
    groups: dict[str | None, list[RankFile]] = {}
    for p in paths:
        f = identify(p)
        groups.setdefault(f.run_id, []).append(f)
    runs: list[list[RankFile]] = []
    for run_id, files in groups.items():
        if run_id is None:
            # without run ids, files claiming one rank twice (two single-process runs both
            # claim none) cannot be the ranks of one run: each is a run of its own
            ranks = [f.rank for f in files]
            runs.extend([files] if len(set(ranks)) == len(ranks) else [[f] for f in files])
            continue
        # one id, a rank seen twice: two runs on the same cluster; split them by start time
        files = sorted(files, key=lambda f: (f.started_us or 0.0, f.path))
        current: list[RankFile] = []
        for f in files:
            if f.rank is not None and any(g.rank == f.rank for g in current):
                runs.append(current)
                current = []
            current.append(f)
        runs.append(current)
    return runs


SHOWN_RUNS = 3  # runs, and names per run, in the one line that refuses several runs
NAME_CHARS = 40  # a file name is cut to this many characters there


def several_runs_problem(runs: list[list[RankFile]]) -> str:
    """Why files that hold several runs are refused, in one short line (a few hundred
    characters whatever the number of files): a file found twice (copied) is named as the
    duplicate; otherwise the first runs are listed."""
    files = [f for run in runs for f in run]
    hint = "or pass --ranks to read every file as a rank of one run"
    dup = _duplicated_rank(files)
    if dup is not None:
        (run_id, rank), copies, more = dup
        what = f"rank {rank}" if rank is not None else "one trace"
        of_run = f" of run {run_id}" if run_id else ""
        others = f"; {more} more file(s) copied likewise" if more else ""
        return (
            f"{what}{of_run} is in {len(copies)} files, copies of each other (same size "
            f"and head: {_names(copies)}){others}: remove the duplicate, {hint}"
        )
    alone = [run[0] for run in runs if len(run) == 1 and run[0].run_id is None]
    if len(alone) == len(runs):  # a folder of unrelated traces (docs/formats.md: why refused)
        return (
            f"these {len(alone)} files hold {len(alone)} runs, unrelated traces "
            f"({_names(alone)}); analyze one at a time (one report, one verdict, one exit "
            f"code per run), {hint}"
        )
    parts = []
    for run in runs[:SHOWN_RUNS]:
        n = len(run)
        parts.append(
            f"run {run[0].run_id or 'without run id'} "
            f"({n} file{'s' if n > 1 else ''}: {_names(run)})"
        )
    if len(runs) > SHOWN_RUNS:
        parts.append(f"+{len(runs) - SHOWN_RUNS} more runs")
    return (
        f"these {len(files)} files hold {len(runs)} runs ({'; '.join(parts)}); analyze one "
        f"run at a time, {hint}"
    )


def _duplicated_rank(
    files: list[RankFile],
) -> tuple[tuple[str | None, int | None], list[RankFile], int] | None:
    """The first file found twice (same size, same first 64 KiB: a copy), its run id and
    rank, and how many other files are copies too."""
    copies: dict[tuple[int, str], list[RankFile]] = {}
    for f in files:
        if f.fingerprint is not None:
            copies.setdefault(f.fingerprint, []).append(f)
    twice = [fs for fs in copies.values() if len(fs) > 1]
    if not twice:
        return None
    first = twice[0]
    return (first[0].run_id, first[0].rank), first, len(twice) - 1


def _names(files: list[RankFile]) -> str:
    names = [_short(os.path.basename(f.path)) for f in files[:SHOWN_RUNS]]
    more = len(files) - len(names)
    return ", ".join(names) + (f", +{more} more" if more > 0 else "")


def _short(name: str) -> str:
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"


# measured (docs/formats.md, "Bounds on any input"): a forked worker reading a small rank file
# peaks at 43-45 MB RSS; each interval it holds costs about 100 bytes at the peak (model/sink.py)
WORKER_BASE_MB = 45.0
BYTES_PER_INTERVAL = 100


def default_jobs(n_files: int) -> int:
    return max(
        1,
        min(
            n_files,
            len(os.sched_getaffinity(0))
            if hasattr(os, "sched_getaffinity")
            else (os.cpu_count() or 1),
        ),
    )


def pool_size(n_files: int, jobs: int | None, limits: ReadLimits) -> int:
    """How many processes read ``n_files`` rank files at once: ``jobs`` (default: one per
    core), no more than the memory budget holds once this process's own memory is counted
    (each worker: ``WORKER_BASE_MB`` plus the intervals its file may hold). 1: serial."""
    import psutil

    wanted = default_jobs(n_files) if jobs is None else max(1, min(jobs, n_files))
    own_mb = psutil.Process().memory_info().rss / 1e6
    per_worker = WORKER_BASE_MB + limits.max_intervals * BYTES_PER_INTERVAL / 1e6
    return max(1, min(wanted, int((limits.memory_mb - own_mb) // per_worker)))


def _pool_context() -> Any:
    """fork when no other thread runs (fast: nothing to import again); otherwise forkserver,
    since forking a process with threads can deadlock the child."""
    from multiprocessing import get_all_start_methods, get_context

    if threading.active_count() == 1 and "fork" in get_all_start_methods():
        return get_context("fork")
    return get_context("forkserver")


class RankReader:
    """Starts reading when created (so a pool forks before any progress thread starts);
    ``collect()`` waits for the summaries, in the order given."""

    def __init__(
        self,
        paths: Sequence[str],
        jobs: int | None = None,
        scheduler: str | None = None,
        limits: ReadLimits | None = None,
    ) -> None:
        self.paths = list(paths)
        # one file (one rank) is analysed whole, exactly as the callback that wrote it did
        self.reduce = len(self.paths) > 1
        # several: each holds its share of the interval bound (a run of 500 ranks is
        # bounded as one file is)
        limits = limits or ReadLimits.from_env()
        self.limits = limits.shared(len(self.paths)) if self.reduce else limits
        self.jobs = pool_size(len(self.paths), jobs, self.limits) if self.reduce else 1
        self._pool: ProcessPoolExecutor | None = None
        self._futures: dict[Future[Result], str] = {}
        self._dask: Any = None
        if scheduler:
            from gpudiag.trace.ranks.dask_run import DaskRun

            self._dask = DaskRun(self.paths, scheduler, self.reduce, self.limits)
        elif self.jobs > 1 and len(self.paths) > 1:
            from concurrent.futures import ProcessPoolExecutor  # several files only

            self._pool = ProcessPoolExecutor(max_workers=self.jobs, mp_context=_pool_context())
            self._futures = {
                self._pool.submit(read_summaries, p, self.reduce, self.limits): p
                for p in self.paths
            }

    def collect(self, on_file: Callable[[str, int], None] | None = None) -> list[Timeline]:
        """Rank summaries of every file; TraceError for the first bad file in path order."""
        results: dict[str, Result] = {}
        try:
            for path, result in self._results():
                results[path] = result
                if on_file:
                    on_file(path, len(results))
        finally:
            if self._pool is not None:
                self._pool.shutdown(cancel_futures=True)
            if self._dask is not None:
                self._dask.close()
        out: list[Timeline] = []
        for p in self.paths:
            tls, error = results[p]
            if error is not None:
                raise error
            out.extend(tls)
        return out

    def _results(self) -> Iterator[tuple[str, Result]]:
        if self._dask is not None:
            yield from self._dask.results()
        elif self._pool is not None:
            from concurrent.futures import as_completed

            for fut in as_completed(self._futures):
                yield self._futures[fut], fut.result()
        else:
            for p in self.paths:
                yield p, read_summaries(p, self.reduce, self.limits)


def load_ranks(
    paths: Sequence[str],
    jobs: int | None = None,
    scheduler: str | None = None,
    on_file: Callable[[str, int], None] | None = None,
    limits: ReadLimits | None = None,
) -> list[Timeline]:
    """Rank summaries of every file, in the order given. ``jobs=1``: in this process;
    ``scheduler``: on a Dask distributed cluster (the ``dask`` extra)."""
    return RankReader(paths, jobs, scheduler, limits).collect(on_file)
