"""Background samplers: NVML, psutil and the GIL probe, turned into counter samples.

A ``Sampler`` (``record/sampler_thread.py``) is a daemon thread that calls ``read()`` every
``interval`` seconds, converts the result into samples and hands each to a sink::

    sink(name: str, source: str, ts_us: float, value: float)

``name`` is one of ``gpudiag.trace.model.timeline.COUNTER_NAMES``; ``source`` is "GPU 0", "GPU 1",
... or "host"; ``ts_us`` is wall-clock µs (``time.time() * 1e6``). A sampler never raises
into its caller: failures are counted and the first few kept in ``errors``.

Example::

    from gpudiag.record.samplers import SamplerSet

    samples = []
    with SamplerSet.default(lambda *s: samples.append(s)) as samplers:
        model.fit(...)
    print(samplers.status())  # ["GPU: not measured — No NVIDIA GPU visible: ...", ...]
    print(samplers.limitations())  # sentences for Timeline.meta.limitations

GPU utilisation comes from the driver's buffered samples, each emitted with its own driver
timestamp (wall-clock µs), so a 0.5 s read interval still resolves gaps of ~1/6 s.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from gpudiag.record.gil import GilProbe, GilWindow
from gpudiag.record.host import HostMonitor, HostSnapshot
from gpudiag.record.nvml import GpuSnapshot, NvmlSession
from gpudiag.record.sampler_thread import Sample, Sampler, Sink, drive

__all__ = [
    "Sample",
    "Sampler",
    "SamplerSet",
    "Sink",
    "gil_sampler",
    "gil_samples",
    "gpu_sampler",
    "gpu_samples",
    "host_sampler",
    "host_samples",
]

HOST = "host"

# ---- snapshot -> samples (shared by the trace path and the live monitor) -----------------


def gpu_samples(snaps: Iterable[GpuSnapshot]) -> list[Sample]:
    """Counter samples from GPU snapshots; utilisation keeps the driver's timestamps."""
    out: list[Sample] = []
    for s in snaps:
        src, ts = s.source, s.ts_us
        out.extend(("gpu_util", src, t, v) for t, v in s.util_samples)
        for name, value in (
            ("gpu_mem_used", s.mem_used_mib),
            ("gpu_mem_total", s.mem_total_mib),
            ("pcie_rx", s.pcie_rx_mbs),
            ("pcie_tx", s.pcie_tx_mbs),
            ("gpu_power", s.power_w),
            ("gpu_clock_sm", s.clock_sm_mhz),
            ("gpu_mem_process", own_mib(s, os.getpid())),
        ):
            if value is not None:
                out.append((name, src, ts, float(value)))
        out.extend((f"gpm_{name}", src, ts, value) for name, value in s.gpm.items())
    return out


def own_mib(s: GpuSnapshot, pid: int) -> float | None:
    """MiB process ``pid`` holds on the GPU; None where NVML does not list it (it holds no
    context there, or NVML sees another pid namespace) or cannot tell its memory."""
    mine = [p.used_mib for p in s.processes or () if p.pid == pid]
    return mine[0] if mine else None


def host_samples(s: HostSnapshot) -> list[Sample]:
    out: list[Sample] = []
    for name, value in (
        ("cpu_total", s.cpu_total),
        ("cpu_max_core", s.cpu_max_core),
        ("cpu_process", s.cpu_process),
        ("cpu_others", s.cpu_others),
        ("cpu_iowait", s.iowait),
        ("host_mem_used", s.mem_used_pct),
        ("host_load_1min", s.load_avg[0] if s.load_avg else None),  # runnable tasks
    ):
        if value is not None:
            out.append((name, HOST, s.ts_us, float(value)))
    return out


def gil_samples(w: GilWindow, ts_us: float | None = None) -> list[Sample]:
    """The window's p95 lateness (in-process and reference) and in-process median, stamped
    at the read (a burst: at its end). The median tells a thread running Python non-stop
    (median near the switch interval) from a descheduled GIL holder on a saturated CPU."""
    ts = ts_us if ts_us is not None else (w.end_wall_us or time.time() * 1e6)
    out: list[Sample] = []
    if w.p95_ms is not None:
        out.append(("gil_lateness", HOST, ts, w.p95_ms))
    if w.p50_ms is not None:
        out.append(("gil_lateness_p50", HOST, ts, w.p50_ms))
    if w.ref_p95_ms is not None:
        out.append(("gil_reference_lateness", HOST, ts, w.ref_p95_ms))
    return out


# ---- factories ----------------------------------------------------------------------------


def gpu_sampler(
    session: NvmlSession,
    sink: Sink | None,
    interval: float = 0.5,
    *,
    observer: Callable[[list[GpuSnapshot]], None] | None = None,
    close_session: bool = True,
) -> Sampler[list[GpuSnapshot]]:
    """NVML sampler. Per-field NVML failures land in ``errors`` (as "GPU 0 pcie_rx: ...")."""
    sampler: Sampler[list[GpuSnapshot]]

    def read() -> list[GpuSnapshot]:
        snaps = session.read()
        for s in snaps:
            for e in s.errors:
                sampler._error(s.source, RuntimeError(e))
        return snaps

    desc = ", ".join(f"GPU {i} {n}" for i, n in zip(session.indices, session.names, strict=True))
    sampler = Sampler(
        "gpu",
        read,
        gpu_samples,
        sink,
        interval,
        observer=observer,
        on_stop=session.close if close_session else None,
        description=f"NVML every {interval:g} s: {desc}",
    )
    return sampler


def host_sampler(
    sink: Sink | None,
    interval: float = 1.0,
    *,
    monitor: HostMonitor | None = None,
    observer: Callable[[HostSnapshot], None] | None = None,
) -> Sampler[HostSnapshot]:
    mon = monitor or HostMonitor()
    return Sampler(
        "host",
        mon.read,
        host_samples,
        sink,
        interval,
        observer=observer,
        description=f"psutil every {interval:g} s",
    )


def gil_sampler(
    probe: GilProbe,
    sink: Sink | None,
    interval: float = 1.0,
    *,
    observer: Callable[[GilWindow], None] | None = None,
) -> Sampler[Any]:
    """Emits the p95 lateness of each window (of each burst, for a probe in burst mode);
    starts and stops the probe with the sampler."""
    if probe.burst_s is not None:
        return Sampler[list[GilWindow]](
            "gil",
            probe.take,
            lambda bursts: [x for w in bursts for x in gil_samples(w)],
            sink,
            interval,
            on_start=probe.start,
            on_stop=probe.stop,
            stop_first=True,
            description=f"5 ms sleep probe in {probe.burst_s:g} s bursts every "
            f"{probe.period_s:g} s and in each profiler window, p95 per burst",
        )
    return Sampler(
        "gil",
        lambda: probe.read(interval),
        gil_samples,
        sink,
        interval,
        observer=observer,
        on_start=probe.start,
        on_stop=probe.stop,
        description=f"5 ms sleep probe, p95 per {interval:g} s window",
    )


# ---- the set ------------------------------------------------------------------------------


class SamplerSet:
    """Starts and stops a group of samplers together and says what is and is not measured.

    ``notes``: "what: not measured — why" lines for things that were never set up.
    """

    def __init__(self, samplers: Sequence[Sampler[Any]] = (), notes: Sequence[str] = ()) -> None:
        self.samplers: list[Sampler[Any]] = list(samplers)
        self.notes: list[str] = list(notes)
        self.gpu: NvmlSession | None = None
        self.gil: GilProbe | None = None
        self.host: HostMonitor | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = False

    @classmethod
    def default(
        cls,
        sink: Sink | None,
        *,
        gpu: bool = True,
        host: bool = True,
        gil: bool = True,
        gpu_interval: float = 0.5,
        host_interval: float = 1.0,
        gil_interval: float = 1.0,
        nvml_lib: Any = None,
        gil_reference: bool = True,
        gpu_indices: Sequence[int] | None = None,
        gil_bursts: tuple[float, float] | None = None,
    ) -> SamplerSet:
        """NVML (if a GPU is visible), psutil and GIL samplers feeding one sink. Setting up
        never raises: whatever fails becomes a "not measured" line in ``status()``.
        ``gil_bursts``: (burst_s, period_s) to probe the GIL in bursts (None: continuously)."""
        out = cls()
        if gpu:
            try:
                session = NvmlSession(lib=nvml_lib, backfill=False)  # only this run
            except Exception as exc:  # defensive: NvmlSession itself catches NVML errors
                out.notes.append(f"GPU: not measured — {type(exc).__name__}: {exc}")
            else:
                out.gpu = session
                if session.available:
                    out.samplers.append(gpu_sampler(session, sink, gpu_interval))
                else:
                    out.notes.append(f"GPU: not measured — {session.reason}")
        if host:
            try:
                out.host = HostMonitor()
                out.samplers.append(host_sampler(sink, host_interval, monitor=out.host))
            except Exception as exc:
                out.notes.append(f"host CPU/memory: not measured — {type(exc).__name__}: {exc}")
        if gil:
            burst_s, period_s = gil_bursts or (None, 10.0)
            out.gil = GilProbe(reference=gil_reference, burst_s=burst_s, period_s=period_s)
            out.samplers.append(gil_sampler(out.gil, sink, gil_interval))
        return out

    def start_all(self) -> SamplerSet:
        """Start every sampler on one shared thread (coalesced wake-ups). Idempotent."""
        if self._started:
            return self
        self._started = True
        for s in self.samplers:
            s.open()
        self._thread = threading.Thread(
            target=drive, args=(self.samplers, self._stop), name="gpudiag-samplers", daemon=True
        )
        self._thread.start()
        return self

    def stop_all(self, timeout: float = 2.0) -> None:
        """Stop the thread (bounded by ``timeout``), take each sampler's last sample, close
        them; idempotent, never raises."""
        thread, self._thread = self._thread, None
        self._stop.set()
        alive = False
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            alive = thread.is_alive()
        for s in self.samplers:
            if alive:
                s._error("stop", TimeoutError(f"thread still running after {timeout:.1f} s"))
            s.close(final=thread is not None and not alive)
        if self.gpu is not None:
            self.gpu.close()

    def __enter__(self) -> SamplerSet:
        return self.start_all()

    def __exit__(self, *exc: object) -> None:
        self.stop_all()

    def get(self, name: str) -> Sampler[Any] | None:
        return next((s for s in self.samplers if s.name == name), None)

    @property
    def errors(self) -> list[str]:
        return [e for s in self.samplers for e in s.errors]

    @property
    def error_count(self) -> int:
        return sum(s.error_count for s in self.samplers)

    def status(self) -> list[str]:
        """One line per signal: "X: measured (...)" or "X: not measured — why"."""
        lines: list[str] = []
        for s in self.samplers:
            lines.append(f"{_LABELS.get(s.name, s.name)}: measured ({s.description})")
            if s.name == "gpu" and self.gpu is not None:
                for pos, src in enumerate(self.gpu.sources):
                    missing = sorted(self.gpu.unsupported(pos))
                    if missing:
                        lines.append(
                            f"{src} {', '.join(missing)}: not measured — NVML says "
                            "not supported on this GPU/driver"
                        )
                if self.gpu.gpm_reason:  # once for all GPUs: SM activity, tensor pipes
                    lines.append(
                        f"GPU SM and tensor-pipe activity: not measured — {self.gpu.gpm_reason}"
                    )
            if s.name == "host" and self.host is not None:
                if not self.host.has_iowait:
                    lines.append("CPU iowait: not measured — this platform does not report it")
                if not self.host.has_loadavg:
                    lines.append("load average: not measured — this platform has none")
            if s.name == "gil" and self.gil is not None and self.gil.reference_reason:
                lines.append(
                    f"GIL reference heartbeat: not measured — {self.gil.reference_reason}"
                    " (GIL and CPU contention cannot be told apart)"
                )
            if s.error_count:
                lines.append(
                    f"{_LABELS.get(s.name, s.name)}: {s.error_count} sampling errors,"
                    f" first: {s.errors[0] if s.errors else '?'}"
                )
        return self.notes + lines

    def limitations(self) -> list[str]:
        """The "not measured" lines only, for ``Timeline.meta.limitations``."""
        return [line for line in self.status() if "not measured" in line]


_LABELS = {"gpu": "GPU", "host": "host CPU/memory", "gil": "GIL pressure"}
