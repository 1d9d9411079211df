"""Mutate the sample traces many ways and run ``gpudiag analyze FILE --json`` on each.

Each mutant runs as a user runs it: a fresh process, under a wall-clock limit and an
address-space cap (``resource.setrlimit`` in the child), with ``GPUDIAG_DEBUG=1`` so that an
error no reader foresaw shows as the traceback it is. Each outcome is one of:

- ``answer``: exit 0, strict JSON whose every number is finite, a plausible median step
  (0 to 30 days), shares in [0, 1], nothing on stderr;
- ``refused``: exit 2 and one short line on stderr naming the file;
- a defect: ``traceback``, ``exit N``, ``signal N``, ``timeout``, ``non-finite``,
  ``implausible``, ``stderr`` (more than that one line, or output beside an answer).

Bases: the first events of every Kineto sample, a TensorFlow trace-viewer JSON and a
gpudiag stream made from them (the xplane sample through gpudiag's XSpace reader, a
TraceWriter run), and the xplane sample itself.

    python benchmarks/fuzz_readers.py                  # every base, 24 mutants each
    python benchmarks/fuzz_readers.py --per-base 60 --seed 3 --keep /tmp/mutants

``tests/test_fuzz_readers.py`` runs a small seeded subset and fails on any defect.
"""

from __future__ import annotations

import argparse
import bz2
import collections
import gzip
import io
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_traces"
MAX_STEP_MS = 30 * 86_400e3  # a median step beyond 30 days is not a figure (docs/formats.md)
MAX_LINE = 400  # characters of the refusal line besides the file's path
DEFECTS = ("traceback", "exit", "signal", "timeout", "non-finite", "implausible", "stderr")


@dataclass(frozen=True)
class Base:
    name: str
    kind: str  # "json" (top-level object + events), "gpudiag" (one event per line), "xplane"
    data: bytes


@dataclass(frozen=True)
class Outcome:
    base: str
    mutation: str
    verdict: str  # "answer", "refused" or a defect in DEFECTS
    detail: str
    seconds: float


# ---- bases -------------------------------------------------------------------------------
def _chrome(top: dict[str, Any], events: list[Any]) -> bytes:
    """Chrome JSON as Kineto and xprof write it: top keys, then one event per line."""
    head = json.dumps(top)[:-1] + (", " if top else "") + '"traceEvents": [\n'
    return (head + ",\n".join(json.dumps(e) for e in events) + "\n]}\n").encode()


def kineto_bases(events: int) -> list[Base]:
    out = []
    for p in sorted(SAMPLES.glob("*.json.gz")):
        with gzip.open(p) as f:
            doc = json.load(f)
        top = {k: v for k, v in doc.items() if k != "traceEvents"}
        name = p.name.removesuffix(".json.gz").removesuffix(".pt.trace")
        out.append(Base(name, "json", _chrome(top, doc["traceEvents"][:events])))
    return out


def tf_json_base(events: int) -> Base:
    """The xplane sample as trace-viewer JSON (gpudiag's XSpace reader gives xprof's events)."""
    from gpudiag.trace.xspace_events import open_xspace

    evs = []
    for ev in open_xspace(str(SAMPLES / "tf_gpu_multi_worker.xplane.pb")):
        if ev.get("ph") == "M" or len(evs) < events:
            evs.append(ev)
    return Base("tf_trace_viewer", "json", _chrome({"displayTimeUnit": "ns"}, evs))


def gpudiag_base(steps: int) -> Base:
    """A gpudiag stream: steps, counters, and a profiled window's device activity."""
    import numpy as np

    from gpudiag.record.writer import TraceWriter
    from gpudiag.trace.timeline import Kind, Metadata, Timeline

    window = Timeline(meta=Metadata(producer="gpudiag"))
    starts = np.arange(min(steps, 50)) * 10_000.0
    window.add_activity("GPU 0", Kind.COMPUTE, starts + 2_500.0, starts + 8_500.0)
    window.add_input_wait(starts, starts + 2_000.0)
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "run.json"
        w = TraceWriter(str(p), Metadata(producer="gpudiag", devices=["GPU 0"]), flush_every=0)
        for i in range(steps):
            t = i * 10_000.0
            w.step(i, t, t + 9_000.0, profiled=i < 50)
            w.counter("gpu_util", "GPU 0", t + 5_000.0, 70.0)
        w.timeline(window)
        w.close()
        return Base("gpudiag_stream", "gpudiag", p.read_bytes())


def xplane_base() -> Base:
    return Base("xplane", "xplane", (SAMPLES / "tf_gpu_multi_worker.xplane.pb").read_bytes())


def all_bases(events: int = 3000) -> list[Base]:
    return [*kineto_bases(events), tf_json_base(events), gpudiag_base(events // 10), xplane_base()]


# ---- mutations ---------------------------------------------------------------------------
Mutation = Callable[[Base, random.Random], bytes]
HOSTILE_NUMBERS = [
    b"1e308", b"-1e308", b"-1", b"1e999", b"-1e999", b"NaN", b"Infinity", b'"nan"', b'"inf"',
    b"0", b"1e16", b"1" + b"0" * 30, b"-0.0", b"true", b"null", b'"x"', b"[]", b"{}",
]  # fmt: skip
CONTROL = [b"\x00", b"\x1b[31m", b"\x7f", b"\xe2\x80\xae", b"\xed\xa0\x80", b"\\ud800", b"\r"]


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def truncate(base: Base, rng: random.Random) -> bytes:
    return base.data[: rng.randrange(len(base.data))]


def flip_bytes(base: Base, rng: random.Random) -> bytes:
    b = bytearray(base.data)
    for _ in range(rng.randrange(1, 40)):
        b[rng.randrange(len(b))] = rng.randrange(256)
    return bytes(b)


def control_chars(base: Base, rng: random.Random) -> bytes:
    """Control characters, a right-to-left override, a lone surrogate inside names."""
    data = base.data
    for _ in range(rng.randrange(1, 10)):
        at = data.find(b'"name": "', rng.randrange(len(data)))
        at = data.find(b'"name":"', rng.randrange(len(data))) if at < 0 else at
        if at < 0:
            break
        at = data.index(b'"', data.index(b":", at)) + 1
        data = data[:at] + rng.choice(CONTROL) + data[at:]
    return data


def duplicate_lines(base: Base, rng: random.Random) -> bytes:
    lines = _lines(base.data)
    i = rng.randrange(1, max(2, len(lines) - 2))
    j = min(len(lines) - 2, i + rng.randrange(1, 200))
    return b"\n".join(lines[:j] + lines[i:j] * rng.randrange(1, 20) + lines[j:])


def remove_lines(base: Base, rng: random.Random) -> bytes:
    lines = _lines(base.data)
    i = rng.randrange(len(lines))
    return b"\n".join(lines[:i] + lines[i + rng.randrange(1, 500) :])


def hostile_numbers(base: Base, rng: random.Random) -> bytes:
    """``ts``, ``dur`` and other numbers made huge, negative, NaN-like or of the wrong type."""
    data = base.data
    for _ in range(rng.randrange(1, 8)):
        key = rng.choice([b'"ts": ', b'"dur": ', b'"ts":', b'"dur":', b'": '])
        at = data.find(key, rng.randrange(len(data)))
        if at < 0:
            continue
        start = at + len(key)
        end = start
        while end < len(data) and data[end : end + 1] in b"0123456789.-+eE":
            end += 1
        if end > start:
            data = data[:start] + rng.choice(HOSTILE_NUMBERS) + data[end:]
    return data


def deep_nesting(base: Base, rng: random.Random) -> bytes:
    depth = rng.choice([70, 1000, 100_000])
    at = base.data.find(b'"args": {', rng.randrange(len(base.data)))
    if at < 0:
        at = base.data.find(b'"args":{')
    if at < 0:
        return b"[" * depth + base.data
    at = base.data.index(b"{", at)
    return base.data[:at] + b"[" * depth + b"]" * depth + b"," * 0 + base.data[at + 1 :]


def long_names(base: Base, rng: random.Random) -> bytes:
    """Names of 64 KiB to 4 MiB, some distinct, some repeated."""
    data = base.data
    size = rng.choice([1 << 16, 1 << 20, 4 << 20])
    count = rng.randrange(1, 6) if size > (1 << 16) else rng.randrange(10, 200)
    for n in range(count):
        at = data.find(b'"name": "', rng.randrange(len(data)))
        if at < 0:
            break
        at += len(b'"name": "')
        filler = (b"ncclKernel_cutlass_sm90_bf16_" * (size // 29 + 1))[:size]
        data = data[:at] + str(n).encode() + filler + data[at:]
    return data


def wrong_types(base: Base, rng: random.Random) -> bytes:
    swaps = [
        (b'"traceEvents": [', [b'"traceEvents": {"a": [', b'"traceEvents": "x", "y": [']),
        (b'"args": {', [b'"args": [{', b'"args": 5, "x": {', b'"args": "s", "x": {']),
        (b'"name": "', [b'"name": 5, "n": "', b'"name": ["', b'"name": null, "n": "']),
        (b'"pid": ', [b'"pid": [1], "p": ', b'"pid": {"a": 1}, "p": ', b'"pid": "x", "p": ']),
        (b'"ph": "X"', [b'"ph": 5', b'"ph": "B"', b'"ph": ["X"]']),
    ]
    old, news = rng.choice(swaps)
    new = rng.choice(news)
    data = base.data
    for _ in range(rng.randrange(1, 5)):
        at = data.find(old, rng.randrange(len(data)))
        if at >= 0:
            data = data[:at] + new + data[at + len(old) :]
    return data


def blank_lines(base: Base, rng: random.Random) -> bytes:
    n = rng.choice([1000, 200_000, 1_000_000])
    at = rng.choice([0, rng.randrange(len(base.data)), len(base.data)])
    return base.data[:at] + rng.choice([b"\n", b" ", b"\r\n"]) * n + base.data[at:]


def wrapped(base: Base, rng: random.Random) -> bytes:
    """gzip (once, twice, two members), zip, bzip2, a BOM, UTF-16, CRLF."""
    how = rng.randrange(7)
    if how == 0:
        return gzip.compress(gzip.compress(base.data, mtime=0), mtime=0)
    if how == 1:
        return gzip.compress(base.data, mtime=0) * 2
    if how == 2:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr(zipfile.ZipInfo("trace.json", (2020, 1, 1, 0, 0, 0)), base.data)
        return buf.getvalue()
    if how == 3:
        return bz2.compress(base.data)
    if how == 4:
        return b"\xef\xbb\xbf" + base.data
    if how == 5:
        return base.data.decode("utf-8", "replace").encode("utf-16")
    return base.data.replace(b"\n", b"\r\n")


def many_planes(base: Base, rng: random.Random) -> bytes:
    """An XSpace of thousands of one-kernel GPU planes (xprof started one thread each)."""
    from gpudiag.trace.xspace_schema import XSpace

    space = XSpace()
    for p in range(rng.choice([1000, 3000])):
        plane = space.planes.add(id=p, name=f"/device:GPU:{p}")
        plane.event_metadata[1].name = "volta_sgemm_128x64_nn"
        line = plane.lines.add(id=1, name="Stream #1(Compute)", timestamp_ns=1_000_000)
        line.events.add(metadata_id=1, offset_ps=0, duration_ps=rng.choice([10**6, -1, 2**62]))
    return space.SerializeToString()


COMMON: tuple[Mutation, ...] = (truncate, flip_bytes, duplicate_lines, remove_lines, wrapped)
TEXT: tuple[Mutation, ...] = (
    control_chars, hostile_numbers, deep_nesting, long_names, wrong_types, blank_lines,
)  # fmt: skip


def mutations_for(base: Base) -> tuple[Mutation, ...]:
    if base.kind == "xplane":
        return (truncate, flip_bytes, many_planes, wrapped)
    return COMMON + TEXT


def mutants(base: Base, count: int, rng: random.Random) -> Iterator[tuple[str, bytes]]:
    """``count`` mutants of a base, every mutation in turn, then again with new draws."""
    ops = mutations_for(base)
    for i in range(count):
        op = ops[i % len(ops)]
        data = op(base, rng)
        yield op.__name__, gzip.compress(data, 1, mtime=0) if rng.random() < 0.25 else data


# ---- running and judging -----------------------------------------------------------------
def _cap(mem_mb: int) -> Callable[[], None]:
    def apply() -> None:
        limit = mem_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def run_one(path: Path, timeout: float, mem_mb: int) -> tuple[str, str, float]:
    """(verdict, detail, seconds) of ``gpudiag analyze PATH --json``."""
    env = {**os.environ, "GPUDIAG_DEBUG": "1", "PYTHONPATH": str(REPO)}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    t0 = time.perf_counter()
    try:
        r = subprocess.run(
            [sys.executable, "-m", "gpudiag", "analyze", str(path), "--json"],
            capture_output=True,
            timeout=timeout,
            env=env,
            cwd=REPO,
            preexec_fn=_cap(mem_mb),
        )
    except subprocess.TimeoutExpired:
        return "timeout", f"over {timeout:g} s", time.perf_counter() - t0
    seconds = time.perf_counter() - t0
    verdict, detail = judge(r.returncode, r.stdout, r.stderr, str(path))
    return verdict, detail, seconds


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
) -> list[Outcome]:
    """Write every mutant under ``workdir`` and judge each run."""
    rng = random.Random(seed)
    todo: list[tuple[Base, str, Path]] = []
    for base in bases:
        for i, (what, data) in enumerate(mutants(base, per_base, rng)):
            path = workdir / f"{base.name}.{i:03d}.{what}"
            path.write_bytes(data)
            todo.append((base, what, path))

    def one(item: tuple[Base, str, Path]) -> Outcome:
        base, _, path = item
        verdict, detail, seconds = run_one(path, timeout, mem_mb)
        return Outcome(base.name, f"{path.name}", verdict, detail, seconds)

    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, todo))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--per-base", type=int, default=24, help="mutants of each base (24)")
    ap.add_argument("--events", type=int, default=3000, help="events kept of each sample")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per run (60)")
    ap.add_argument("--mem-mb", type=int, default=1024, help="address-space cap (1024 MB)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", help="write the mutants here and keep them")
    args = ap.parse_args()
    t0 = time.perf_counter()
    bases = all_bases(args.events)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(args.keep or tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        outcomes = fuzz(
            bases, args.per_base, args.seed, workdir, args.timeout, args.mem_mb, args.jobs
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
    slowest = max(outcomes, key=lambda o: o.seconds)
    print(f"slowest: {slowest.mutation} {slowest.seconds:.1f} s ({slowest.verdict})")
    for o in outcomes:
        if o.verdict in DEFECTS:
            print(f"DEFECT {o.verdict}: {o.mutation}: {o.detail}")
    return 1 if any(o.verdict in DEFECTS for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
