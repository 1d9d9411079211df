"""Structure-aware mutation families of the fuzz harness: what a byte-level mutant rarely
makes. Each is a function ``(base, rng) -> bytes`` like those of ``fuzz_mutations.py``.

- ``metadata_counts`` (xplane): a plane appended to the profile holding 50,000 to 1,000,000
  event or stat metadata entries (unused, or each the name of one kernel), 10,000 to 60,000
  lines, 3,000 to 5,000 planes, or one line of up to 500,000 events;
- ``device_counts`` (Chrome JSON): 500 to 4,000 devices, one kernel per step on the next
  device each step (a trace of D devices and D steps);
- ``string_boundaries`` (JSON): two names of 9 MiB a few hundred bytes apart (answered: each
  is under the 16 MiB bound), or one of 17 MiB (refused), escapes at the seams;
- ``impossible_times`` (every base): a kernel of 29 days (JSON) or a day less a picosecond
  (xplane) added, or twenty kernels overlapping on one stream: within the format's bounds,
  impossible for the trace. Its answer must name what it found (the judge's ``unnamed``).
"""

from __future__ import annotations

import json
import random
from typing import Any

from benchmarks.hostile_xspace import event as xevent
from benchmarks.hostile_xspace import event_metadata, line, plane, stat_metadata

DAY_US = 86_400e6
NAMED = ("impossible time", "overlap each other")  # what the answer must say of it


def metadata_counts(base: Any, rng: random.Random) -> bytes:
    """The xplane sample with a hostile plane appended (an XSpace's planes are its
    repeated field 1: appending a plane's bytes appends a plane)."""
    how = rng.randrange(6)
    pid = 1000
    name = b"/device:GPU:%d" % pid
    stream = b"Stream #7(Compute)"
    if how == 0:
        n = rng.choice([50_000, 150_000, 1_000_000])
        return base.data + plane(pid, name, [event_metadata(i + 1, b"k%d" % i) for i in range(n)])
    if how == 1:
        n = rng.choice([50_000, 150_000, 1_000_000])
        return base.data + plane(pid, name, [stat_metadata(i + 1, b"s%d" % i) for i in range(n)])
    if how == 2:  # each entry the name of one kernel of 0.5 ns
        n = rng.choice([20_000, 150_000])
        parts = [event_metadata(i + 1, b"k%d" % i) for i in range(n)]
        parts.append(line(7, stream, [xevent(i + 1, i * 1000, 500) for i in range(n)]))
        return base.data + plane(pid, name, parts)
    if how == 3:
        n = rng.choice([10_000, 60_000])
        lines = [line(i, b"Stream #%d(Compute)" % i, []) for i in range(n)]
        return base.data + plane(pid, name, [event_metadata(1, b"k"), *lines])
    if how == 4:
        n = rng.choice([3_000, 5_000])
        planes = (plane(pid + i, b"/device:GPU:%d" % (pid + i), []) for i in range(n))
        return base.data + b"".join(planes)
    # events cost their reading time whatever their size (~4 µs each, 15 µs on a loaded
    # machine): a million tiny ones are a 100 MB profile's worth, past the harness's 60 s
    n = rng.choice([100_000, 500_000])
    events = [xevent(1, i * 200, 100) for i in range(n)]
    return base.data + plane(pid, name, [event_metadata(1, b"k"), line(7, stream, events)])


def device_counts(base: Any, rng: random.Random) -> bytes:
    """Kineto-like kernels on many devices appended to the event list: step s runs one
    kernel on device s, so D devices make D steps (``ProfilerStep#`` markers added)."""
    devices = rng.choice([500, 2000, 4000])
    t0 = _kernel_lanes(base.data)[1] + 1000.0  # after the base's events: one run
    lines = []
    for s in range(devices):
        t = t0 + s * 100.0
        lines.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}",
                      "pid": 1, "tid": 1, "ts": t, "dur": 90.0})  # fmt: skip
        lines.append({"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn",
                      "pid": s, "tid": 7, "ts": t + 10.0, "dur": 50.0})  # fmt: skip
    return _append_events(base.data, lines)


def string_boundaries(base: Any, rng: random.Random) -> bytes:
    """Two names of 9 MiB a few hundred bytes apart (each under the 16 MiB bound, both over
    it together), or one of 17 MiB; escaped quotes and backslashes at their seams."""
    seam = rng.choice(["", '\\"', "\\\\", '\\\\\\"'])
    if rng.random() < 0.25:
        names = ["a" * (17 << 20)]
    else:
        names = [seam + "n" * (9 << 20) + seam, seam + "m" * (9 << 20) + seam]
    events = [
        {"ph": "i", "name": f"__NAME{i}__", "pid": 1, "tid": 1, "ts": 1.0, "s": "t",
         "args": {"pad": "p" * rng.randrange(100, 600)}}
        for i in range(len(names))
    ]  # fmt: skip
    data = _append_events(base.data, events)
    for i, n in enumerate(names):  # in place of a placeholder: json.dumps would escape seams
        data = data.replace(f"__NAME{i}__".encode(), n.encode(), 1)
    return data


def impossible_times(base: Any, rng: random.Random) -> bytes:
    """A time within the format's bounds that the trace cannot hold (the module's doc)."""
    if base.kind == "xplane":
        return _impossible_xplane(base.data, rng)
    if base.kind == "gpudiag":
        at = base.data.find(b'"cat":"device.compute"')
        if at < 0:
            return base.data
        start = base.data.index(b'"dur":', at) + len(b'"dur":')
        end = start
        while base.data[end : end + 1] in b"0123456789.":
            end += 1
        return base.data[:start] + str(29 * DAY_US).encode() + base.data[end:]
    lanes, latest = _kernel_lanes(base.data)
    extra: list[dict[str, Any]] = []
    if lanes:
        pid, tid, t0 = lanes[0]
    else:  # no device lane: one of its own (Kineto takes pid for the device; TF its names)
        pid, tid, t0 = 9_999, 7, latest
        extra = [{"ph": "M", "name": "process_name", "pid": pid,
                  "args": {"name": "/device:GPU:9999"}}]  # fmt: skip
    if rng.random() < 0.5:
        extra += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                   "args": {"name": f"Stream #{tid}(Compute)"}}] if not lanes else []  # fmt: skip
        extra += [{"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": pid,
                   "tid": tid, "ts": t0, "dur": 29 * DAY_US}]  # fmt: skip
    else:  # twenty kernels of 1 ms, 0.1 ms apart, on a stream of their own
        new = 99_999
        extra += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": new,
                   "args": {"name": f"Stream #{new}(Compute)"}}]  # fmt: skip
        extra += [{"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": pid,
                   "tid": new, "ts": t0 + 100.0 * k, "dur": 1000.0} for k in range(20)]  # fmt: skip
    return _append_events(base.data, extra)


def _impossible_xplane(data: bytes, rng: random.Random) -> bytes:
    from gpudiag.trace.tf.xspace.schema import XSpace

    space = XSpace()
    space.ParseFromString(data)
    streams = [(p, ln) for p in space.planes for ln in p.lines if "Stream" in ln.name]
    if not streams:
        return data
    p, ln = max(streams, key=lambda pl: len(pl[1].events))  # a stream the analysis reads
    if not ln.events:
        return data
    ev = ln.events[rng.randrange(len(ln.events))]
    if rng.random() < 0.5:
        ev.duration_ps = 86_400 * 10**12 - 1
        return bytes(space.SerializeToString())
    # twenty kernels like it on a stream of their own, 0.1 ms apart, 1 ms each
    own = p.lines.add(id=99_999, name="Stream #99999(Compute)")
    own.timestamp_ns = ln.timestamp_ns
    for k in range(20):
        own.events.add(
            metadata_id=ev.metadata_id, offset_ps=ev.offset_ps + k * 10**8, duration_ps=10**9
        )
    return bytes(space.SerializeToString())


def _kernel_lanes(data: bytes) -> tuple[list[tuple[Any, Any, float]], float]:
    """(pid, tid, ts) of the base's first kernels (Kineto's ``cat``, or a trace viewer's
    "Stream" line), read from the events one per line, and the latest time of any event."""
    streams: set[tuple[Any, Any]] = set()
    out = []
    latest = 0.0
    for raw in data.split(b"\n"):
        raw = raw.strip().rstrip(b",")
        if not raw.startswith(b"{") or b'"ph"' not in raw:
            continue
        try:
            ev = json.loads(raw)
        except ValueError:
            continue
        ts = ev.get("ts")
        if isinstance(ts, int | float):
            latest = max(latest, float(ts))
        if ev.get("ph") == "M" and "Stream" in str((ev.get("args") or {}).get("name", "")):
            streams.add((ev.get("pid"), ev.get("tid")))
        elif (
            ev.get("ph") == "X"
            and len(out) < 4
            and (ev.get("cat") == "kernel" or (ev.get("pid"), ev.get("tid")) in streams)
        ):
            out.append((ev.get("pid"), ev.get("tid"), float(ev.get("ts", 0.0))))
    return out, latest


def _append_events(data: bytes, events: list[dict[str, Any]]) -> bytes:
    """``events`` added at the end of a Chrome JSON event list written one per line."""
    close = data.rfind(b"]")
    if close < 0:
        return data
    lines = b"".join(b",\n" + json.dumps(e).encode() for e in events)
    return data[:close].rstrip() + lines + b"\n" + data[close:]
