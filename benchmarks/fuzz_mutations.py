"""The bases and mutations of the fuzz harness (``fuzz_readers.py``).

Bases: the first events of every Kineto sample, a TensorFlow trace-viewer JSON and a
gpudiag stream made from them (the xplane sample through gpudiag's XSpace reader, a
TraceWriter run), and the xplane sample itself. Mutations: twelve kinds, each a function
``(base, rng) -> bytes``, and the structure-aware families of ``fuzz_structure.py``;
``mutants`` draws them in turn, seeded, deterministic.

    for what, data in mutants(base, 24, random.Random(0)): ...
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import random
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_traces"


@dataclass(frozen=True)
class Base:
    name: str
    kind: str  # "json" (top-level object + events), "gpudiag" (one event per line), "xplane"
    data: bytes


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
    from gpudiag.trace.tf.xspace.events import open_xspace

    evs = []
    for ev in open_xspace(str(SAMPLES / "tf_gpu_multi_worker.xplane.pb")):
        if ev.get("ph") == "M" or len(evs) < events:
            evs.append(ev)
    return Base("tf_trace_viewer", "json", _chrome({"displayTimeUnit": "ns"}, evs))


def gpudiag_base(steps: int, profiled: int = 50) -> Base:
    """A gpudiag stream: steps (the first ``profiled`` written one by one, the rest summed
    into step groups), counters, and a profiled window's device activity."""
    import numpy as np

    from gpudiag.record.writer import TraceWriter
    from gpudiag.trace.model.timeline import Kind, Metadata, Timeline

    window = Timeline(meta=Metadata(producer="gpudiag"))
    starts = np.arange(min(steps, 50)) * 10_000.0
    window.add_activity("GPU 0", Kind.COMPUTE, starts + 2_500.0, starts + 8_500.0)
    window.add_input_wait(starts, starts + 2_000.0)
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "run.json"
        w = TraceWriter(str(p), Metadata(producer="gpudiag", devices=["GPU 0"]), flush_every=0)
        for i in range(steps):
            t = i * 10_000.0
            w.step(i, t, t + 9_000.0, profiled=i < profiled)
            w.counter("gpu_util", "GPU 0", t + 5_000.0, 70.0)
        w.timeline(window)
        w.close()
        return Base("gpudiag_stream", "gpudiag", p.read_bytes())


def xplane_base() -> Base:
    return Base("xplane", "xplane", (SAMPLES / "tf_gpu_multi_worker.xplane.pb").read_bytes())


def all_bases(events: int = 3000, stream_steps: int | None = None) -> list[Base]:
    """Every base. The gpudiag stream has ``events // 10`` steps (one chunk: it is read line
    by line), or ``stream_steps`` profiled steps, each its own lines (20,000 make several
    chunks of a MB, each decoded at once where it can be)."""
    stream = (
        gpudiag_base(events // 10)
        if stream_steps is None
        else gpudiag_base(stream_steps, profiled=stream_steps)
    )
    return [*kineto_bases(events), tf_json_base(events), stream, xplane_base()]


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
    from gpudiag.trace.tf.xspace.schema import XSpace

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


def mutations_for(base: Base, structure: bool = True) -> tuple[Mutation, ...]:
    """The mutations of a base; ``structure``: with the structure-aware families of
    ``fuzz_structure.py`` (metadata and device counts, string boundaries, impossible times)."""
    from benchmarks import fuzz_structure as fs

    if base.kind == "xplane":
        ops: tuple[Mutation, ...] = (truncate, flip_bytes, many_planes, wrapped)
        return ops + ((fs.metadata_counts, fs.impossible_times) if structure else ())
    if base.kind == "gpudiag":
        return COMMON + TEXT + ((fs.impossible_times,) if structure else ())
    extra = (fs.device_counts, fs.string_boundaries, fs.impossible_times)
    return COMMON + TEXT + (extra if structure else ())


def mutants(
    base: Base, count: int, rng: random.Random, structure: bool = True
) -> Iterator[tuple[str, bytes]]:
    """``count`` mutants of a base, every mutation in turn, then again with new draws."""
    ops = mutations_for(base, structure)
    for i in range(count):
        op = ops[i % len(ops)]
        data = op(base, rng)
        yield op.__name__, gzip.compress(data, 1, mtime=0) if rng.random() < 0.25 else data
