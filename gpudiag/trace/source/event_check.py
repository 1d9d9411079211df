"""One Chrome trace event checked: an object with finite, plausible times and an object for
``args``, as every reader takes it to be. Impossible times (a negative duration, one over 30
days, a clock beyond 2^53 µs) are dropped and counted, malformed ones are a TraceError naming
the file and the event.

    ev = check_event(raw_event, path)      # the event, None (impossible: drop it), or raises
    kept = check_slice(events, path)       # a slice at once, its common case inline
"""

from __future__ import annotations

import math
from typing import Any

from gpudiag.trace.errors import TraceError

# Plausible times (µs). A clock beyond 2**53 µs (the year 2255 on the Unix epoch clock
# Kineto and gpudiag use) no longer tells one microsecond from the next in a float, and no
# event of a training run lasts 30 days (profilers record seconds to minutes; gpudiag's
# longest events are its epoch spans). Beyond either, the writer was broken: 1e308 made a
# 1e305 ms step and numpy overflowed summing such events. Docs: formats.md, "Bounds".
MAX_TS_US = float(1 << 53)
MAX_DUR_US = 30 * 86_400e6
MAX_DUR_DAYS = 30


def check_event(ev: Any, path: str) -> dict[str, Any] | None:
    """An event must be an object whose ``ts`` and ``dur`` (when present) are finite numbers
    (an infinite kernel would make any run "compute-bound", NaN poisons every sum) and whose
    ``args`` (when present) is an object, as every reader takes it to be; else a TraceError.
    None for an event whose times are numbers but impossible (``plausible``): the caller
    drops it and counts it (``dropped_note``)."""
    if type(ev) is dict:
        # the common case, once per event: plausible floats (a comparison with NaN is False)
        ts = ev.get("ts")
        dur = ev.get("dur")
        args = ev.get("args")
        # ints too: Kineto writes its times as integers
        if (
            (ts is None or (type(ts) in _NUMBER and -MAX_TS_US <= ts <= MAX_TS_US))
            and (dur is None or (type(dur) in _NUMBER and 0.0 <= dur <= MAX_DUR_US))
            and (args is None or type(args) is dict)
        ):
            return ev
    return _check_event_slowly(ev, path)


_NUMBER = (float, int)  # not bool: type(True) is bool


def json_kind(x: Any) -> str:
    """What a JSON value is, in words ("a list", "a number")."""
    if isinstance(x, bool):
        return "a boolean"
    if isinstance(x, int | float):
        return "a number"
    kinds = {str: "a string", list: "a list", dict: "an object", type(None): "null"}
    return kinds.get(type(x), f"a {type(x).__name__}")


def plausible(ts: float, dur: float = 0.0) -> bool:
    """Whether a start and a duration (µs) can belong to a real event."""
    return -MAX_TS_US <= ts <= MAX_TS_US and 0.0 <= dur <= MAX_DUR_US


def dropped_note(n: int) -> str:
    """The limitation line for ``n`` events dropped as impossible."""
    return (
        f"{n:,} event{'s' if n > 1 else ''} with impossible times dropped (a negative "
        f"duration or one over {MAX_DUR_DAYS} days, or a timestamp beyond 2^53 µs)"
    )


def _check_event_slowly(ev: Any, path: str) -> dict[str, Any] | None:
    """``check_event`` for what its fast path does not settle: ints, numeric strings,
    impossible times and every kind of error."""
    if not isinstance(ev, dict):
        raise TraceError(path, f"trace event is {json_kind(ev)}, expected an object")
    args = ev.get("args")
    if args is not None and not isinstance(args, dict):
        name = str(ev.get("name"))[:40]
        kind = json_kind(args)
        raise TraceError(path, f"malformed event {name!r}: args is {kind}, expected an object")
    times = []
    for key in ("ts", "dur"):
        v = ev.get(key)
        if v is None:
            times.append(0.0)
            continue
        try:
            f = float(v) if not isinstance(v, bool) else math.nan
        except (TypeError, ValueError, OverflowError):
            f = math.nan
        if not math.isfinite(f):
            name = str(ev.get("name"))[:40]
            raise TraceError(
                path,
                f"malformed event {name!r}: {key} is {str(v)[:20]!r}, expected a finite number",
            )
        times.append(f)
    return ev if plausible(*times) else None


def check_slice(events: list[Any], path: str) -> list[Any]:
    """``check_event`` over a slice before any of it is given (the events to give), its
    common case inline: a call per event costs a tenth of the reading."""
    for ev in events:
        if type(ev) is dict:
            ts = ev.get("ts")
            dur = ev.get("dur")
            args = ev.get("args")
            ts_ok = ts is None or (type(ts) in _NUMBER and -MAX_TS_US <= ts <= MAX_TS_US)
            dur_ok = dur is None or (type(dur) in _NUMBER and 0.0 <= dur <= MAX_DUR_US)
            if ts_ok and dur_ok and (args is None or type(args) is dict):
                continue
        break
    else:
        return events  # the common slice: every event fine as it is
    return [c for c in (check_event(e, path) for e in events) if c is not None]
