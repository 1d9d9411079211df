"""The one data model every producer writes and every consumer reads.

A ``Timeline`` is one rank's (one process's) view of a training run. All times are
microseconds on one clock, stored in numpy arrays so that a million-event trace costs a few
tens of megabytes, not a few gigabytes of Python objects.

Example::

    tl = Timeline(meta=Metadata(producer="kineto"))
    tl.add_steps([0, 1], starts=[0.0, 100.0], ends=[100.0, 200.0])
    tl.add_activity("GPU 0", Kind.COMPUTE, starts=[10.0, 110.0], ends=[60.0, 190.0])
    tl.add_input_wait(starts=[0.0, 100.0], ends=[10.0, 110.0], names=["next", "next"])
    tl.freeze()  # sorts and merges; readers call this once they are done

Readers (``gpudiag.trace.*``) build Timelines; analyzers (``gpudiag.analyze``) only read them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any

import numpy as np

from gpudiag.trace.model.collectives import CollectiveOps
from gpudiag.trace.model.compiles import Compiles
from gpudiag.trace.model.intervals import Intervals as Intervals  # re-exported: readers and
from gpudiag.trace.model.intervals import subtract as subtract  # analyzers import these from here
from gpudiag.trace.model.intervals import union_many as union_many
from gpudiag.trace.model.intervals import union_of as union_of
from gpudiag.trace.model.runconfig import RunConfig


class Kind(str, Enum):
    """What a device interval was doing. ``H2D``/``D2H`` are host<->device copies; ``COPY``
    moves data without computing: device-to-device and peer copies, memsets, XLA async
    copies between memory spaces (HTA counts these as "memory", not compute)."""

    COMPUTE = "compute"
    H2D = "h2d"
    D2H = "d2h"
    COLLECTIVE = "collective"
    COPY = "copy"


TRANSFER_KINDS = (Kind.H2D, Kind.D2H)  # host<->device
COPY_KINDS = (Kind.H2D, Kind.D2H, Kind.COPY)  # every copy: the breakdown's "transfer"
Floats = Sequence[float] | np.ndarray  # what readers hand in: lists or arrays


def _array(values: Iterable[Any], dtype: type) -> np.ndarray:
    """A 1-d array of ``values`` (an array, a sequence or any iterable), without copying
    an array that already has the type."""
    if not isinstance(values, np.ndarray | list | tuple):
        values = list(values)
    return np.asarray(values, dtype=dtype).ravel()


@dataclass
class Steps:
    """Training steps: index (as the producer numbered them), start and end (µs)."""

    index: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    start: np.ndarray = field(default_factory=lambda: np.zeros(0))
    end: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # True where the step lies inside a profiled window (device activity was recorded)
    profiled: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    # the framework's train-function call inside the step (NaN when not recorded): compute
    # plus collective wait, whatever other callbacks do around it
    call_start: np.ndarray = field(default_factory=lambda: np.zeros(0))
    call_end: np.ndarray = field(default_factory=lambda: np.zeros(0))
    # batches per step: > 1 when Keras runs several per call (steps_per_execution)
    batches: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __post_init__(self) -> None:
        n = self.index.size
        if self.call_start.size != n:
            self.call_start = np.full(n, np.nan)
        if self.call_end.size != n:
            self.call_end = np.full(n, np.nan)
        if self.batches.size != n:
            self.batches = np.ones(n, dtype=np.int64)

    def __len__(self) -> int:
        return int(self.index.size)

    @property
    def durations(self) -> np.ndarray:
        return self.end - self.start

    def columns(self) -> tuple[np.ndarray, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))

    def select(self, which: np.ndarray) -> Steps:
        """The steps at ``which`` (indices or a mask), every column alike."""
        return Steps(*(col[which] for col in self.columns()))


@dataclass
class StepBuckets:
    """Steps outside profiler windows, aggregated (a long run's trace stays bounded): per
    group of consecutive steps, its span, batch count, summed step time and per-batch
    median, p90 and max (µs)."""

    start: np.ndarray = field(default_factory=lambda: np.zeros(0))
    end: np.ndarray = field(default_factory=lambda: np.zeros(0))
    batches: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    busy: np.ndarray = field(default_factory=lambda: np.zeros(0))
    p50: np.ndarray = field(default_factory=lambda: np.zeros(0))
    p90: np.ndarray = field(default_factory=lambda: np.zeros(0))
    max: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __len__(self) -> int:
        return int(self.start.size)


@dataclass
class Counter:
    """A sampled signal: GPU utilisation (%), PCIe (MB/s), CPU (%), GIL lateness (ms), ...

    ``name`` is one of the names in ``COUNTER_NAMES`` (or a producer-specific one);
    ``source`` says which device or host it belongs to ("GPU 0", "host").
    """

    name: str
    source: str
    unit: str
    ts: np.ndarray
    values: np.ndarray


# What a trace says when its run did not end normally: the callback saw fit left by an
# exception or interrupt, or the stream has no closing bracket (killed, or still running)
STOPPED_EARLY = "training stopped early (exception or interrupt): partial run"
CUT_SHORT = (
    "trace cut short: the run was killed or is still running (no closing bracket); "
    "read up to its last complete event"
)


# Metadata.extra key: host time in framework ops that launch nothing on the device
# (Intervals; Kineto traces): CPU preprocessing the device may wait for
HOST_COMPUTE = "host ops without launches"
# Metadata.extra key: the union of every traced host event, as Intervals (TensorFlow / JAX
# profiles; what is not traced is said: analyze/rules/untraced_time.py)
HOST_ACTIVITY = "traced host activity"


def stopped_early(limitations: list[str]) -> bool:
    return STOPPED_EARLY in limitations or CUT_SHORT in limitations


COUNTER_NAMES = {
    "gpu_util": "%",
    "gpu_mem_used": "MiB",
    "gpu_mem_total": "MiB",
    "gpu_mem_process": "MiB",  # held by the recording process (NVML per-process memory)
    "pcie_rx": "MB/s",
    "pcie_tx": "MB/s",
    "gpu_power": "W",
    "gpu_clock_sm": "MHz",
    # GPU Performance Monitoring (record/gpm.py), averages since the previous read
    "gpm_sm_active": "%",
    "gpm_sm_occupancy": "%",
    "gpm_tensor_active": "%",
    "gpm_dram_bw": "%",
    "gpm_fp32_active": "%",
    "gpm_fp16_active": "%",
    "cpu_total": "%",
    "cpu_max_core": "%",
    "cpu_process": "%",
    "cpu_others": "%",
    "cpu_iowait": "%",
    "host_mem_used": "%",
    "host_load_1min": "tasks",  # 1-min load average: runnable tasks, every process
    # what the framework's allocator reports (record/memory.py; Kineto's [memory] events)
    "mem_in_use": "MiB",  # held for tensors now
    "mem_peak": "MiB",  # the most held at once so far
    "mem_limit": "MiB",  # the most the allocator may hold (its pool, else the device)
    "mem_reserved": "MiB",  # held by a caching allocator, used or not (Kineto)
    # the training process on the host (CPU training: the same part)
    "mem_host_rss": "MiB",
    "mem_host_peak": "MiB",  # the process's high-water mark (getrusage)
    "mem_host_available": "MiB",  # what the host could still give it
    "gil_lateness": "ms",
    "gil_reference_lateness": "ms",
    "gil_lateness_p50": "ms",
}


@dataclass
class RecordedLint:
    """A lint as a trace records it: judged by the producer from the run's configuration
    before any step (the callback's pipeline and fit lints). Analysis reads it back as a
    ``Finding`` with ``source="lint"``; it stays its own type because the trace's data model
    imports nothing from analysis, and it keeps the producer's own ``fix`` text."""

    id: str
    severity: str
    title: str
    evidence: dict[str, Any]
    fix: str = ""


@dataclass
class Metadata:
    """Facts about the run that are not events. Unknown facts stay ``None``."""

    producer: str = "unknown"  # gpudiag | kineto | tf-trace-viewer | xplane
    source: str = ""  # file the timeline came from
    devices: list[str] = field(default_factory=list)
    device_type: str = ""  # "GPU", "CPU", "ROCm GPU", ...
    replicas: int | None = None
    rank: int | None = None
    world_size: int | None = None
    batch_size: int | None = None
    framework: str = ""  # "tensorflow", "jax", "torch", "pytorch"
    hostname: str = ""
    # the same on every rank of one multi-worker run (see gpudiag/record/ranks.py)
    run_id: str = ""
    # plain sentences: what could not be measured and why ("no NVIDIA driver: ...")
    limitations: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    # what the run already does (compile options, input pipeline, cores): see runconfig.py
    config: RunConfig = field(default_factory=RunConfig)


@dataclass
class Timeline:
    """One rank's run: steps, device busy intervals by kind, input waits, counters, facts."""

    meta: Metadata = field(default_factory=Metadata)
    steps: Steps = field(default_factory=Steps)
    # (device, kind) -> intervals
    activity: dict[tuple[str, Kind], Intervals] = field(default_factory=dict)
    # host intervals that mean "the step is waiting for its next batch"
    input_wait: Intervals = field(default_factory=Intervals)
    # total time per input-wait event name, to point at the culprit (DataLoader, IteratorGetNext)
    input_wait_names: dict[str, float] = field(default_factory=dict)
    # tf.data / DataLoader facts seen in the trace: {"sequential_map": ..., "generator": ...}
    pipeline: dict[str, Any] = field(default_factory=dict)
    counters: list[Counter] = field(default_factory=list)
    findings: list[RecordedLint] = field(default_factory=list)
    # number of device kernels seen (for kernel-launch-bound), per device
    kernel_counts: dict[str, int] = field(default_factory=dict)
    # host events that may mark iterations when the producer wrote no step markers
    # (DataLoader fetch, optimizer step, ...): name -> intervals; see trace/model/steps_infer.py
    markers: dict[str, Intervals] = field(default_factory=dict)
    # blocking host API calls (cudaFree, hipFree, cudaStreamSynchronize, ...): name -> intervals
    host_calls: dict[str, Intervals] = field(default_factory=dict)
    # named host spans (µs): "epoch", "evaluation", "profile window"
    spans: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    step_buckets: StepBuckets = field(default_factory=StepBuckets)
    # traces and compilations of the step (compiles.py): when, of what, for which shapes
    compiles: Compiles = field(default_factory=Compiles)
    # collectives whose message size the trace records (trace/model/collectives.py)
    collectives: CollectiveOps = field(default_factory=CollectiveOps)

    # ---- building (readers) -------------------------------------------------------------
    def add_steps(
        self,
        index: Iterable[int],
        starts: Iterable[float],
        ends: Iterable[float],
        profiled: Iterable[bool] | bool = True,
        calls: Sequence[tuple[float, float] | None] | None = None,
        batches: Iterable[int] | None = None,
        call_bounds: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        """Steps, with the train-function call inside each as ``calls`` (one pair or None
        per step) or as ``call_bounds`` (two arrays, NaN where unknown)."""
        idx = _array(index, np.int64)
        b = np.ones(idx.size, dtype=np.int64) if batches is None else _array(batches, np.int64)
        p = (
            np.full(idx.size, bool(profiled))
            if isinstance(profiled, bool)
            else _array(profiled, np.bool_)
        )
        if call_bounds is not None:
            cs, ce = (np.asarray(x, dtype=np.float64) for x in call_bounds)
        else:
            cs = np.full(idx.size, np.nan)
            ce = np.full(idx.size, np.nan)
            for i, call in enumerate(calls or ()):
                if call is not None:
                    cs[i], ce[i] = call
        parts = (idx, _array(starts, np.float64), _array(ends, np.float64), p, cs, ce, b)
        self.steps = Steps(
            *(
                np.concatenate([a, x]) if a.size else x
                for a, x in zip(self.steps.columns(), parts, strict=True)
            )
        )

    def add_activity(
        self, device: str, kind: Kind, starts: Iterable[float], ends: Iterable[float]
    ) -> None:
        key = (device, Kind(kind))
        if key in self.activity:
            self.activity[key].extend(starts, ends)
        else:
            self.activity[key] = Intervals(starts, ends)
        if device not in self.meta.devices:
            self.meta.devices.append(device)

    def add_input_wait(
        self,
        starts: Floats,
        ends: Floats,
        names: Sequence[str] = (),
        name_totals: dict[str, float] | None = None,
    ) -> None:
        """Input waits; what they wait in as one name per wait, or already summed by name
        (``name_totals``: readers sum as they stream)."""
        self.input_wait.extend(starts, ends)
        for n, s, e in zip(names, starts, ends, strict=False):
            self.input_wait_names[n] = self.input_wait_names.get(n, 0.0) + (e - s)
        for n, total in (name_totals or {}).items():
            self.input_wait_names[n] = self.input_wait_names.get(n, 0.0) + total

    def add_marker(self, name: str, starts: Floats, ends: Floats) -> None:
        if name in self.markers:
            self.markers[name].extend(starts, ends)
        else:
            self.markers[name] = Intervals(starts, ends)

    def add_host_call(self, name: str, starts: Floats, ends: Floats) -> None:
        if name in self.host_calls:
            self.host_calls[name].extend(starts, ends)
        else:
            self.host_calls[name] = Intervals(starts, ends)

    def add_counter(
        self,
        name: str,
        source: str,
        ts: Iterable[float],
        values: Iterable[float],
        unit: str | None = None,
    ) -> None:
        self.counters.append(
            Counter(
                name,
                source,
                unit if unit is not None else COUNTER_NAMES.get(name, ""),
                _array(ts, np.float64),
                _array(values, np.float64),
            )
        )

    def freeze(self) -> Timeline:
        """Sort steps by start; drop empty and zero-length entries. Returns self."""
        order = np.argsort(self.steps.start, kind="stable")
        keep = self.steps.end[order] > self.steps.start[order]
        self.steps = self.steps.select(order[keep])
        for spans in self.spans.values():
            spans.sort()
        self.activity = {k: v for k, v in self.activity.items() if len(v)}
        for c in self.counters:
            co = np.argsort(c.ts, kind="stable")
            c.ts, c.values = c.ts[co], c.values[co]
        return self

    # ---- reading (analyzers) ------------------------------------------------------------
    @property
    def devices(self) -> list[str]:
        """Devices that have recorded activity, in first-seen order."""
        seen = {d for d, _ in self.activity}
        return [d for d in self.meta.devices if d in seen]

    def device_activity(self, device: str, kind: Kind) -> Intervals:
        return self.activity.get((device, kind), Intervals())

    def has_device_activity(self) -> bool:
        return any(len(v) for v in self.activity.values())

    def counter(self, name: str, source: str | None = None) -> list[Counter]:
        return [
            c for c in self.counters if c.name == name and (source is None or c.source == source)
        ]

    @property
    def label(self) -> str:
        if self.meta.rank is not None:
            return f"rank {self.meta.rank}"
        return self.meta.source or self.meta.producer
