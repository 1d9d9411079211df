"""Mutate the sample traces many ways and run ``gpudiag analyze FILE --json`` on each.

Each mutant runs as a user runs it: a fresh process, under a wall-clock limit and an
address-space cap (``resource.setrlimit`` in the child), with ``GPUDIAG_DEBUG=1`` so that an
error no reader foresaw shows as the traceback it is. Each outcome is one of:

- ``answer``: exit 0, strict JSON whose every number is finite, a plausible median step
  (0 to 30 days), shares in [0, 1], every time figure within a year, nothing on stderr;
- ``refused``: exit 2 and one short line on stderr naming the file;
- a defect: ``traceback``, ``exit N``, ``signal N``, ``timeout``, ``non-finite``,
  ``implausible``, ``stderr`` (more than that one line, or output beside an answer),
  ``memory`` (a peak RSS over ``MAX_RSS_MB``), ``unnamed`` (an answer to an impossible-times
  mutant whose limitations do not name what it holds), and with ``--line-by-line``
  ``differs``: a gpudiag stream whose reading a chunk at a time gives other output than its
  reading line by line.

Bases and mutations: ``fuzz_mutations.py``.

    python benchmarks/fuzz_readers.py                  # every base, 24 mutants each
    python benchmarks/fuzz_readers.py --per-base 60 --seed 3 --keep /tmp/mutants

``tests/trace/test_fuzz_readers.py`` runs a small seeded subset and fails on any defect.
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script: the repository's packages importable
from benchmarks.fuzz_mutations import Base, all_bases, mutants  # noqa: E402
from benchmarks.peak_rss import run_measured  # noqa: E402

MAX_STEP_MS = 30 * 86_400e3  # a median step beyond 30 days is not a figure (docs/formats.md)
MAX_LINE = 400  # characters of the refusal line besides the file's path
MAX_RSS_MB = 400.0  # the contract's ~300 MB, with room for the interpreter's own variance
DEFECTS = (
    "traceback", "exit", "signal", "timeout", "non-finite", "implausible", "stderr", "differs",
    "memory", "unnamed",
)  # fmt: skip


@dataclass(frozen=True)
class Outcome:
    base: str
    mutation: str
    verdict: str  # "answer", "refused" or a defect in DEFECTS
    detail: str
    seconds: float
    rss_mb: float = 0.0


# ---- running and judging -----------------------------------------------------------------
def _cap(mem_mb: int) -> Callable[[], None]:
    def apply() -> None:
        limit = mem_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


# ``gpudiag analyze FILE --json`` with a gpudiag stream read line by line: the reference the
# reading of a whole chunk at once must match, byte for byte (``--line-by-line``)
LINE_BY_LINE = """
import sys
from gpudiag.trace.native import reader as native_reader
native_reader._decode_lines = lambda lines: None
from gpudiag.cli import main
sys.exit(main(["analyze", sys.argv[1], "--json"]))
"""


def _analyze(
    path: Path, timeout: float, mem_mb: int, line_by_line: bool = False
) -> tuple[subprocess.CompletedProcess[bytes], float] | None:
    """The finished process and its own peak RSS (MB, ``peak_rss.py``), or None past
    ``timeout``."""
    env = {**os.environ, "GPUDIAG_DEBUG": "1", "PYTHONPATH": str(REPO)}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if line_by_line:
        args = ["-c", LINE_BY_LINE, str(path)]
    else:
        args = ["-m", "gpudiag", "analyze", str(path), "--json"]
    return run_measured(
        [sys.executable, *args], timeout, env=env, cwd=REPO, preexec_fn=_cap(mem_mb)
    )


def run_one(
    path: Path,
    timeout: float,
    mem_mb: int,
    line_by_line: bool = False,
    must_name: tuple[str, ...] = (),
    max_rss_mb: float = MAX_RSS_MB,
) -> tuple[str, str, float, float]:
    """(verdict, detail, seconds, peak RSS MB) of ``gpudiag analyze PATH --json``;
    ``line_by_line``: the same run with the stream read line by line must give the same
    exit, output and message; ``must_name``: an answer's limitations must say one of these
    (the mutant holds something it must name); past ``max_rss_mb`` it is a defect."""
    t0 = time.perf_counter()
    got = _analyze(path, timeout, mem_mb)
    seconds = time.perf_counter() - t0
    if got is None:
        return "timeout", f"over {timeout:g} s", seconds, 0.0
    r, rss = got
    verdict, detail = judge(r.returncode, r.stdout, r.stderr, str(path))
    if verdict not in DEFECTS and rss > max_rss_mb:
        return "memory", f"peak RSS {rss:.0f} MB", seconds, rss
    if verdict == "answer" and must_name:
        limitations = json.loads(r.stdout).get("limitations") or []
        if not any(n in lim for n in must_name for lim in limitations):
            return "unnamed", f"no limitation says {' or '.join(must_name)}", seconds, rss
    if line_by_line and verdict not in DEFECTS:
        ref = _analyze(path, timeout, mem_mb, line_by_line=True)
        if ref is None or (ref[0].returncode, ref[0].stdout, ref[0].stderr) != (
            r.returncode,
            r.stdout,
            r.stderr,
        ):
            return "differs", "not what reading it line by line gives", seconds, rss
    return verdict, detail, seconds, rss


def judge(code: int, out: bytes, err: bytes, path: str) -> tuple[str, str]:
    text = err.decode("utf-8", "replace")
    lines = text.splitlines()
    if "Traceback" in text:
        return "traceback", lines[-1][:200] if lines else ""
    if code < 0:
        return "signal", f"signal {-code}"
    if code == 2:
        if len(lines) != 1 or path not in lines[0]:
            return "stderr", f"{len(lines)} lines: {text[:200]!r}"
        if len(lines[0]) - len(path) > MAX_LINE or "internal " in lines[0]:
            return "stderr", lines[0][:200]
        return "refused", lines[0].replace(path, "FILE")[:160]
    if code != 0:
        return "exit", f"exit {code}: {text[:200]!r}"
    if text:
        return "stderr", text[:200]
    try:
        d = json.loads(out, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    except ValueError as e:
        return "non-finite", str(e)[:200]
    if not all(math.isfinite(x) for x in _numbers(d)):
        return "non-finite", "a number is not finite"
    median = (d.get("steps") or {}).get("median_ms")
    shares = (d.get("breakdown") or {}).values()
    if median is not None and not 0 <= median <= MAX_STEP_MS:
        return "implausible", f"median step {median} ms"
    if not all(isinstance(v, int | float) and -1e-9 <= v <= 1 + 1e-9 for v in shares):
        return "implausible", f"breakdown {d.get('breakdown')}"
    for where, value in _times(d):
        return "implausible", f"{where} = {value:g}"
    return "answer", f"{d.get('verdict')}, median {median} ms"


# a time figure beyond a year is no run's (a step, an epoch, a span, a total over devices)
YEAR_LIMITS = (("_ms", 365 * 86_400e3), ("_us", 365 * 86_400e6), ("seconds", 365 * 86_400.0))


def _times(x: Any, where: str = "") -> Iterator[tuple[str, float]]:
    """(path, value) of every time figure (a key ending ``_ms``, ``_us``, ``seconds``, or a
    list under one) beyond a year."""
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _times(v, f"{where}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _times(v, f"{where}[{i}]")
    elif isinstance(x, int | float) and not isinstance(x, bool):
        key = where.rsplit(".", 1)[-1].split("[")[0]
        for suffix, limit in YEAR_LIMITS:
            if key.endswith(suffix) and abs(x) > limit:
                yield where, float(x)


def _numbers(x: Any) -> Iterator[float]:
    if isinstance(x, bool):
        return
    if isinstance(x, int | float):
        yield float(x)
    elif isinstance(x, dict):
        for v in x.values():
            yield from _numbers(v)
    elif isinstance(x, list):
        for v in x:
            yield from _numbers(v)


def fuzz(
    bases: list[Base],
    per_base: int,
    seed: int,
    workdir: Path,
    timeout: float = 60.0,
    mem_mb: int = 1024,
    jobs: int = 2,
    line_by_line: bool = False,
    only: tuple[str, ...] = (),
    keep: bool = False,
) -> list[Outcome]:
    """Write each mutant under ``workdir`` and judge its run (``line_by_line``: each
    gpudiag stream mutant also against its reading line by line; ``only``: these mutations
    alone). Mutants are made in order (the same seed, the same mutants) as the runs go, and
    removed once judged unless ``keep``: some are tens of MB."""
    from benchmarks.fuzz_structure import NAMED

    rng = random.Random(seed)
    slots = threading.Semaphore(2 * jobs)  # mutants on disk at once

    def one(base: Base, what: str, path: Path) -> Outcome:
        try:
            check = line_by_line and base.kind == "gpudiag"
            named = NAMED if what == "impossible_times" else ()
            verdict, detail, seconds, rss = run_one(path, timeout, mem_mb, check, named)
            return Outcome(base.name, path.name, verdict, detail, seconds, rss)
        finally:
            if not keep:
                path.unlink(missing_ok=True)
            slots.release()

    futures = []
    with ThreadPoolExecutor(jobs) as pool:
        for base in bases:
            for i, (what, data) in enumerate(mutants(base, per_base, rng)):
                if only and what not in only:
                    continue
                slots.acquire()
                path = workdir / f"{base.name}.{i:03d}.{what}"
                path.write_bytes(data)
                futures.append(pool.submit(one, base, what, path))
        return [f.result() for f in futures]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-base", type=int, default=24, help="mutants of each base (24)")
    ap.add_argument("--events", type=int, default=3000, help="events kept of each sample")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per run (60)")
    ap.add_argument("--mem-mb", type=int, default=1024, help="address-space cap (1024 MB)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", help="write the mutants here and keep them")
    ap.add_argument("--stream-steps", type=int, help="steps of the gpudiag stream base")
    ap.add_argument("--only", action="append", help="fuzz only this base (repeatable)")
    ap.add_argument(
        "--mutation", action="append", help="only this mutation (repeatable), e.g. device_counts"
    )
    ap.add_argument(
        "--line-by-line",
        action="store_true",
        help="also read each gpudiag stream mutant line by line: the same output, or a defect",
    )
    args = ap.parse_args()
    t0 = time.perf_counter()
    bases = [
        b for b in all_bases(args.events, args.stream_steps) if not args.only or b.name in args.only
    ]
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(args.keep or tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        outcomes = fuzz(
            bases,
            args.per_base,
            args.seed,
            workdir,
            args.timeout,
            args.mem_mb,
            args.jobs,
            args.line_by_line,
            tuple(args.mutation or ()),
            keep=bool(args.keep),
        )
    counts = collections.Counter(o.verdict for o in outcomes)
    per_mutation = collections.Counter((o.mutation.split(".")[-1], o.verdict) for o in outcomes)
    print(f"{len(outcomes)} mutants of {len(bases)} bases in {time.perf_counter() - t0:.0f} s")
    for verdict in ("answer", "refused", *DEFECTS):
        if counts[verdict]:
            print(f"  {verdict:12s} {counts[verdict]}")
    print("by mutation (answer / refused / defect):")
    for what in sorted({m for m, _ in per_mutation}):
        a, r = per_mutation[(what, "answer")], per_mutation[(what, "refused")]
        d = sum(per_mutation[(what, v)] for v in DEFECTS)
        print(f"  {what:16s} {a:4d} {r:4d} {d:4d}")
    if not outcomes:
        return 0
    slowest = max(outcomes, key=lambda o: o.seconds)
    print(f"slowest: {slowest.mutation} {slowest.seconds:.1f} s ({slowest.verdict})")
    biggest = max(outcomes, key=lambda o: o.rss_mb)
    print(f"largest peak RSS: {biggest.mutation} {biggest.rss_mb:.0f} MB ({biggest.verdict})")
    for o in outcomes:
        if o.verdict in DEFECTS:
            print(f"DEFECT {o.verdict}: {o.mutation}: {o.detail}")
    return 1 if any(o.verdict in DEFECTS for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
