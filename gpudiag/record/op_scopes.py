"""How much of a profiler window's op time one name scope took: the optimizer's update ops
(``.../adam/Mul_3:Mul``), for the rule that asks how much of the step a dense embedding
update costs (``analyze/rules/dense_embedding_updates.py``). Read only where that rule's
lint fired, from the window's own TensorFlow profile, with the trace reader's event stream.

    scope_time("/tmp/window", "adam")   # {"optimizer_us": 61000.0, "op_us": 64000.0}

The ops are TensorFlow's op events (their ``long_name`` "scope/Mul_3:Mul"): on a CPU-only
run those of the ``tf_Compute`` threads, on a GPU the device's kernels by their ``tf_op``.
Executor events around them ("ExecutorState::Process") carry no op name and are left out,
so no time counts twice.
"""

from __future__ import annotations

import contextlib
import glob
import os
from typing import Any


def scope_time(logdir: str, scope: str) -> dict[str, float]:
    """The op time in ``scope`` and all op time of the window's profile ({} when none)."""
    files = sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))
    if not files or not scope:
        return {}
    with contextlib.suppress(Exception):
        from gpudiag.trace.tf.xspace.events import open_xspace

        return _sum(open_xspace(files[-1]), f"/{scope}/")
    return {}


def _sum(events: Any, needle: str) -> dict[str, float]:
    threads: dict[tuple[Any, Any], str] = {}
    host = {"ops": 0.0, "in": 0.0}
    device = {"ops": 0.0, "in": 0.0}
    for ev in events:
        ph = ev.get("ph")
        if ph == "M" and ev.get("name") == "thread_name":
            threads[(ev.get("pid"), ev.get("tid"))] = str((ev.get("args") or {}).get("name"))
            continue
        if ph != "X":
            continue
        args = ev.get("args")
        if not isinstance(args, dict):
            continue
        dur = float(ev.get("dur") or 0.0)
        op, long_name = args.get("tf_op"), args.get("long_name")
        if isinstance(op, str):  # a device kernel of a TF op
            device["ops"] += dur
            if needle in op:
                device["in"] += dur
        elif isinstance(long_name, str):  # a TF op on a host thread ("scope/Mul_3:Mul")
            if not threads.get((ev.get("pid"), ev.get("tid")), "").startswith("tf_Compute"):
                continue
            host["ops"] += dur
            if needle in long_name:
                host["in"] += dur
    use = device if device["ops"] > 0 else host
    if use["ops"] <= 0:
        return {}
    return {"optimizer_us": round(use["in"], 1), "op_us": round(use["ops"], 1)}
