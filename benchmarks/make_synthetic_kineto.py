"""Make a larger, still valid PyTorch profiler (Kineto) trace from a real one.

The ``ProfilerStep#N`` iterations of the source trace are replicated ``--factor`` times, one
copy after the other on the same timeline: every event that starts at or after the first
step (CPU ops, CUDA runtime calls, kernels, memcpys/memsets, flow arrows, annotations) is
repeated with

* timestamps shifted by ``k * period``, where ``period`` is the span of the step window
  (first step start to the end of the last device event) plus the source's median gap
  between steps, so copy ``k + 1`` starts right after copy ``k``'s GPU work drains;
* ``External id``/``correlation`` and flow ``id`` shifted by one common stride (so the
  CPU op -> runtime call -> kernel links stay intact and unique), and the other per-event
  ids (``Sequence number``, ``Profiler Event Index``, ``Ev Idx``, ``Python id``) by their own;
* step numbers renumbered (``ProfilerStep#1009`` of copy ``k`` becomes ``#1009 + k * S``
  for ``S`` steps in the source), for the CPU annotation and its GPU mirror alike.

Metadata (``ph: M``), events before the first step, the top-level keys (``deviceProperties``,
``distributedInfo``, ...) and the profiler's global instants are kept once; the
``Record Window End`` instant and the ``PyTorch Profiler (0)`` span are moved/stretched to
the new end. The output uses Kineto's own layout (indented header, one event per line) and
is gzipped, so readers that scan the header line by line (HTA looks for ``"rank": N``)
behave as with a real trace. The result has ``factor`` times the steps and (almost exactly)
``factor`` times the events.

    python benchmarks/make_synthetic_kineto.py SRC.json.gz --factor 10 -o /tmp/x10.json.gz
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import re
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
# One stride for the ids that link a CPU op, its runtime call, the kernel and the flow arrow.
LINK_ID_KEYS = ("External id", "correlation")
# Per-event ids that are unique on their own; each gets its own stride.
OWN_ID_KEYS = ("Sequence number", "Profiler Event Index", "Ev Idx", "Python id", "Python parent id")

Event = dict[str, Any]


def load_trace(path: Path) -> dict[str, Any]:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise SystemExit(f"{path}: not a Kineto trace (no traceEvents list)")
    return doc


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class Replicator:
    """Splits a Kineto event list into kept-once and replicated parts and makes the copies."""

    def __init__(self, events: list[Event]) -> None:
        steps = [
            e
            for e in events
            if e.get("ph") == "X"
            and isinstance(e.get("name"), str)
            and STEP_RE.match(e["name"])
            and e.get("cat") != "gpu_user_annotation"
        ]
        if not steps:
            raise SystemExit("source trace has no ProfilerStep#N annotations to replicate")
        steps.sort(key=lambda e: e["ts"])
        self.window_start = steps[0]["ts"]
        numbers = [int(STEP_RE.match(e["name"]).group(1)) for e in steps]  # type: ignore[union-attr]
        self.step_stride = max(numbers) - min(numbers) + 1

        self.head: list[Event] = []  # metadata and events before the first step: once
        self.body: list[Event] = []  # the step window: replicated
        self.tail: list[Event] = []  # the profiler's span and global instants: once, at the end
        for e in events:
            ts = e.get("ts")
            if e.get("ph") == "M" or not isinstance(ts, int | float):
                self.head.append(e)
            elif e.get("cat") == "Trace" or (e.get("ph") == "i" and e.get("s") == "g"):
                self.tail.append(e)
            elif ts < self.window_start:
                self.head.append(e)
            else:
                self.body.append(e)

        end = max(e["ts"] + e.get("dur", 0) for e in self.body)
        gaps = [b["ts"] - (a["ts"] + a.get("dur", 0)) for a, b in itertools.pairwise(steps)]
        gap = statistics.median(gaps) if gaps else 1
        self.period: int | float = end - self.window_start + max(gap, 1)
        if all(_is_int(e["ts"]) for e in self.body):
            self.period = round(self.period)

        self.link_stride = 1 + max(
            [e["id"] for e in self.body if _is_int(e.get("id"))]
            + [
                v
                for e in self.body
                for k in LINK_ID_KEYS
                if _is_int(v := (e.get("args") or {}).get(k))
            ],
            default=0,
        )
        self.own_stride = {
            k: 1 + max((v for e in events if _is_int(v := (e.get("args") or {}).get(k))), default=0)
            for k in OWN_ID_KEYS
        }

    def copy(self, e: Event, k: int) -> Event:
        """Event ``e`` as it appears in copy ``k`` (``k = 0``: unchanged)."""
        if k == 0:
            return e
        out = dict(e)
        out["ts"] = e["ts"] + k * self.period
        if _is_int(e.get("id")):
            out["id"] = e["id"] + k * self.link_stride
        name = e.get("name")
        if isinstance(name, str) and name.startswith("ProfilerStep#"):
            m = STEP_RE.match(name)
            if m:
                out["name"] = f"ProfilerStep#{int(m.group(1)) + k * self.step_stride}"
        args = e.get("args")
        if isinstance(args, dict):
            new_args = dict(args)
            for key in LINK_ID_KEYS:
                v = args.get(key)
                if _is_int(v) and v > 0:
                    new_args[key] = v + k * self.link_stride
            for key, stride in self.own_stride.items():
                v = args.get(key)
                if _is_int(v) and v >= 0:
                    new_args[key] = v + k * stride
            out["args"] = new_args
        return out

    def events(self, factor: int) -> Iterator[Event]:
        yield from self.head
        for k in range(factor):
            for e in self.body:
                yield self.copy(e, k)
        shift = (factor - 1) * self.period
        for e in self.tail:
            if e.get("cat") == "Trace" and "dur" in e:
                yield {**e, "dur": e["dur"] + shift}  # the whole recording: stretch it
            elif e["ts"] >= self.window_start:
                yield {**e, "ts": e["ts"] + shift}  # e.g. "Record Window End": move to the end
            else:
                yield e

    def count(self, factor: int) -> int:
        return len(self.head) + factor * len(self.body) + len(self.tail)


def write_kineto(path: Path, top: dict[str, Any], events: Iterator[Event]) -> int:
    """Kineto's layout: indented top-level keys, then one event per line; gzip if ``.gz``.

    Returns the size of the JSON text in bytes (``json.dumps`` escapes to ASCII).
    """
    gz = path.suffix == ".gz"
    written = 0
    with (
        gzip.open(path, "wt", encoding="utf-8", compresslevel=6)
        if gz
        else open(path, "w", encoding="utf-8")
    ) as f:

        def put(text: str) -> None:
            nonlocal written
            f.write(text)
            written += len(text)

        put("{\n")
        for key, value in top.items():
            body = json.dumps(value, indent=2).replace("\n", "\n  ")
            put(f"  {json.dumps(key)}: {body},\n")
        put('  "traceEvents": [\n')
        batch: list[str] = []
        first = True
        for ev in events:
            batch.append(json.dumps(ev))
            if len(batch) >= 10000:
                put(("  " if first else ",\n  ") + ",\n  ".join(batch))
                first, batch = False, []
        if batch:
            put(("  " if first else ",\n  ") + ",\n  ".join(batch))
        put("\n  ]\n}\n")
    return written


def make(src: Path, factor: int, out: Path) -> dict[str, Any]:
    """Write the ``factor``-times trace to ``out``; returns its stats (see ``trace_stats``)."""
    doc = load_trace(src)
    rep = Replicator(doc["traceEvents"])
    top = {k: v for k, v in doc.items() if k != "traceEvents"}
    out.parent.mkdir(parents=True, exist_ok=True)
    json_bytes = write_kineto(out, top, rep.events(factor))
    return {
        "path": str(out),
        "events": rep.count(factor),
        "json_bytes": json_bytes,
        "file_bytes": out.stat().st_size,
    }


def trace_stats(path: Path) -> dict[str, Any]:
    """Events in ``traceEvents``, size of the JSON text and of the file, in bytes."""
    raw = path.read_bytes()
    text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    doc = json.loads(text)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return {
        "path": str(path),
        "events": len(events),
        "json_bytes": len(text),
        "file_bytes": len(raw),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", type=Path, help="Kineto trace (.json or .json.gz) with ProfilerSteps")
    ap.add_argument("--factor", type=int, default=10, help="copies of the step window (10)")
    ap.add_argument("-o", "--out", type=Path, help="output .json or .json.gz")
    ap.add_argument(
        "--stats",
        action="store_true",
        help="only print SRC's events and sizes as JSON; write nothing",
    )
    args = ap.parse_args(argv)
    if args.stats:
        print(json.dumps(trace_stats(args.src)))
        return 0
    if args.out is None:
        ap.error("-o/--out is required (unless --stats)")
    if args.factor < 1:
        ap.error("--factor must be >= 1")
    stats = make(args.src, args.factor, args.out)
    print(json.dumps(stats))
    print(
        f"{args.out}: {stats['events']} events, {stats['file_bytes'] / 2**20:.1f} MiB "
        f"({args.factor}x {args.src.name})",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
