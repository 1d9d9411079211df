"""XSpace profiles of hostile shape, written straight in the protobuf wire format.

Building millions of metadata entries or events through the protobuf messages takes
minutes; written as bytes they take seconds. Each profile is a small valid training profile
(a host plane with ``train N`` markers, a GPU plane with one kernel per step) plus the
hostile part, so what is measured is the part, not an empty file.

    data = xspace(metadata=1_000_000)              # a million unused event-metadata entries
    data = xspace(used=100_000)                    # each the name of one 0.5 ns kernel
    data = xspace(lines=60_000)                    # empty lines on a second GPU plane
    data = xspace(planes=5_000)                    # empty device planes
    data = xspace(line_events=3_000_000)           # one line of 3 million events

Field numbers are xplane.proto's (gpudiag/trace/tf/xspace/schema.py).
"""

from __future__ import annotations

MS = 10**9  # picoseconds
STEP = 10 * MS


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def number(field: int, value: int) -> bytes:
    return varint(field << 3) + varint(value)


def message(field: int, payload: bytes) -> bytes:
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def event_metadata(mid: int, name: bytes) -> bytes:
    """An XPlane.event_metadata map entry (field 4)."""
    return message(4, number(1, mid) + message(2, number(1, mid) + message(2, name)))


def stat_metadata(sid: int, name: bytes) -> bytes:
    """An XPlane.stat_metadata map entry (field 5)."""
    return message(5, number(1, sid) + message(2, number(1, sid) + message(2, name)))


def event(mid: int, offset_ps: int, duration_ps: int) -> bytes:
    return message(4, number(1, mid) + number(2, offset_ps) + number(3, duration_ps))


def line(lid: int, name: bytes, events: list[bytes], timestamp_ns: int = 1_000_000) -> bytes:
    return message(
        3, number(1, lid) + message(2, name) + number(3, timestamp_ns) + b"".join(events)
    )


def plane(pid: int, name: bytes, parts: list[bytes]) -> bytes:
    return message(1, number(1, pid) + message(2, name) + b"".join(parts))


def host(steps: int) -> bytes:
    """The host plane: ``train N`` markers (grouped: the profiler's ``group_id`` stat)."""
    parts = [stat_metadata(1, b"group_id")]
    parts += [event_metadata(i + 1, f"train {i}".encode()) for i in range(steps)]
    parts.append(line(1, b"python3", [event(i + 1, i * STEP, STEP - MS) for i in range(steps)]))
    return plane(0, b"/host:CPU", parts)


def xspace(
    steps: int = 4,
    metadata: int = 0,
    stats: int = 0,
    used: int = 0,
    lines: int = 0,
    planes: int = 0,
    line_events: int = 0,
) -> bytes:
    """A training profile of ``steps`` steps (6 ms kernels in 10 ms steps) and the hostile
    part: unused event-metadata entries, unused stat-metadata entries, event-metadata
    entries each used by one 0.5 ns kernel, empty lines, empty device planes, or one line
    of many 0.5 ns kernels."""
    parts = [event_metadata(1, b"volta_sgemm_128x64_nn")]
    parts += [event_metadata(100 + i, b"unused_kernel_%d" % i) for i in range(metadata)]
    parts += [stat_metadata(100 + i, b"unused_stat_%d" % i) for i in range(stats)]
    parts += [event_metadata(10**7 + i, b"k%d" % i) for i in range(used)]
    kernels = [event(1, i * STEP + MS, 6 * MS) for i in range(steps)]
    span = steps * STEP
    kernels += [event(10**7 + i, MS + (i * 37) % span, 500) for i in range(used)]
    parts.append(line(7, b"Stream #7(Compute)", kernels))
    if line_events:
        gap = max(1, span // line_events)
        tiny = [event(1, i * gap, 500) for i in range(line_events)]
        parts.append(line(8, b"Stream #8(Compute)", tiny))
    out = host(steps) + plane(0, b"/device:GPU:0", parts)
    if lines:
        empty = [line(10 + i, b"Stream #%d(Compute)" % i, []) for i in range(lines)]
        out += plane(1, b"/device:GPU:1", [event_metadata(1, b"k"), *empty])
    out += b"".join(plane(i, b"/device:GPU:%d" % i, []) for i in range(2, 2 + planes))
    return out
