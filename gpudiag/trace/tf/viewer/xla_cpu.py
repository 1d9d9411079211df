"""XLA's CPU runtime with several host devices: one device lane per device, its collectives
as sync.

JAX on host devices (``XLA_FLAGS=--xla_force_host_platform_device_count=N``, the way a
``keras.distribution.DataParallel`` run is tried without GPUs) runs every device's program
on one shared thread pool (``tf_XLAEigen/…``). Each HLO op is one event there, named by the
op (``dot.6``, ``copy_subtract_fusion``, ``all-reduce.7``) with the stats ``hlo_op`` and
``device_ordinal`` (measured on JAX 0.10, XLA's thunk runtime). Threads say nothing about
devices, so the op's ordinal makes the lane; its collectives (``all-reduce``,
``all-gather``, ``reduce-scatter``, ``all-to-all``, ``collective-permute``: ``names/comm.py``)
are the device's sync, and their span includes the rendezvous where a device waits for the
others — the time a slower peer costs it, as a GPU's all-reduce kernel does.

    ops = XlaCpuDevices(budget)
    ops.add(name, ts, end, args)          # False: not an XLA op of a device (wrappers, waits)
    if ops.into(timeline): ...            # True: two or more devices, one lane each
"""

from __future__ import annotations

from typing import Any

from gpudiag.trace.model.sink import IntervalBudget, SinkTable
from gpudiag.trace.model.timeline import Kind, Timeline
from gpudiag.trace.names.comm import classify

HLO_OP = "hlo_op"
DEVICE_ORDINAL = "device_ordinal"
MAX_DEVICES = 256  # host devices told apart (a forced device count is a handful)


class XlaCpuDevices:
    """The XLA ops of a CPU-only profile, by device ordinal and kind."""

    def __init__(self, budget: IntervalBudget) -> None:
        self.ops: SinkTable[tuple[int, Kind]] = SinkTable(budget)
        self.ordinals: set[int] = set()
        self.collectives = 0

    def add(self, name: str, ts: float, end: float, args: Any) -> bool:
        """Take one event of the runtime's threads if it is a device's HLO op."""
        if not isinstance(args, dict) or HLO_OP not in args:
            return False
        try:
            ordinal = int(args.get(DEVICE_ORDINAL) or 0)
        except (TypeError, ValueError):
            return False
        if not 0 <= ordinal < MAX_DEVICES:
            return False
        kind = Kind.COLLECTIVE if classify(name) is not None else Kind.COMPUTE
        self.collectives += kind is Kind.COLLECTIVE
        self.ordinals.add(ordinal)
        self.ops.add((ordinal, kind), ts, end)
        return True

    def into(self, tl: Timeline) -> bool:
        """One lane per device (``CPU 0``, ``CPU 1``, ...) where the profile holds two or
        more; False (nothing added) for one device, whose ops are the CPU's busy time."""
        if len(self.ordinals) < 2:
            return False
        for (ordinal, kind), sink in sorted(self.ops.sinks.items(), key=lambda kv: kv[0][0]):
            if len(sink):
                tl.add_activity(f"CPU {ordinal}", kind, *sink.arrays())
        n = len(self.ordinals)
        tl.meta.replicas = tl.meta.replicas or n
        tl.meta.limitations.append(
            f"CPU-only profile with {n} XLA host devices on shared cores: each device's time "
            "is the span of its own ops; its collectives include the wait for the other devices"
        )
        return True
