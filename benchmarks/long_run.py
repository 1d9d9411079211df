"""A long run's trace size and the cost of its end-of-fit report, simulated.

Drives the real TraceWriter as DiagnoseCallback does for ``--hours`` of simulated training:
a step every ``--step-ms``, NVML read every 0.5 s from the replayed two-H100 recording
(tests/data/nvml_h100_bursty.json, its devices repeated to ``--gpus`` GPUs, looping), host
counters every 0.5 s, a GIL burst sample every 10 s, an epoch every ``--epoch-min`` minutes and
profiler windows where WindowSchedule would open them (5 steps, ``--kernels`` kernels per
step per GPU). No clock is slept: the replay's clock is advanced by hand, so a day takes a few
minutes.

Reported: the trace size; the end-of-fit report as the callback makes it now (diagnose the
writer's running summary: time and the process's peak RSS above its size before the run) and
as it was made before (read the whole trace back with ``gpudiag analyze``'s reader, in a fresh
process: time and peak RSS). Targets: < 200 MB for 24 h × 8 GPUs; report < 1 s and < 100 MB.

    python benchmarks/long_run.py --hours 24 --gpus 8
    python benchmarks/long_run.py --hours 10 --gpus 0 --step-ms 7   # a CPU run
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from gpudiag.analyze import diagnose
from gpudiag.record.nvml import NvmlSession
from gpudiag.record.nvml_replay import ReplayNvml
from gpudiag.record.profiler import WindowSchedule
from gpudiag.record.samplers import gpu_samples
from gpudiag.record.writer import TraceWriter
from gpudiag.trace.model.timeline import Kind, Metadata, Timeline

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "data" / "nvml_h100_bursty.json"


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def window_timeline(gpus: list[str], t0: float, step_us: float, kernels: int) -> Timeline:
    """5 profiled steps: ``kernels`` kernels per step per GPU, 80% busy."""
    tl = Timeline()
    k = np.arange(kernels)
    for g in gpus or ["CPU:0"]:
        starts, ends = [], []
        for s in range(5):
            base = t0 + s * step_us
            width = 0.8 * step_us / kernels
            starts.append(base + k * step_us / kernels)
            ends.append(base + k * step_us / kernels + width)
        tl.add_activity(g, Kind.COMPUTE, np.concatenate(starts), np.concatenate(ends))
    tl.add_steps(
        range(5), [t0 + s * step_us for s in range(5)], [t0 + (s + 1) * step_us for s in range(5)]
    )
    return tl


def simulate(
    path: str, hours: float, gpus: int, step_ms: float, epoch_min: float, kernels: int
) -> dict[str, float]:
    data = json.loads(FIXTURE.read_text())
    data["devices"] = [dict(d) for _ in range((gpus + 1) // 2) for d in data["devices"]][:gpus]
    replay = ReplayNvml(data)
    session = NvmlSession(lib=replay, backfill=False) if gpus else None
    sources = session.sources if session is not None else []
    w = TraceWriter(
        path,
        Metadata(producer="gpudiag", device_type="GPU" if gpus else "CPU", devices=list(sources)),
    )
    base = float(replay._base_us)
    step_us = step_ms * 1000.0
    total_us = hours * 3600e6
    schedule = WindowSchedule(5, 5)
    next_read = 0.0
    next_gil = 10e6
    epoch_us = epoch_min * 60e6
    epoch, epoch_start, epoch_step = 0, 0.0, 0
    t = 0.0
    step = 0
    window_left = 0
    window_t0 = 0.0
    while t < total_us:
        if window_left == 0 and schedule.due(step, epoch, epoch_step, 50, t / 1e6, 0.0):
            schedule.open(step, epoch, t / 1e6)
            w.detail(True)
            window_left, window_t0 = 5, t
        profiled = window_left > 0
        w.step(step, base + t, base + t + step_us, profiled=profiled)
        t += step_us
        step += 1
        epoch_step += 1
        if profiled:
            window_left -= 1
            if window_left == 0:
                w.detail(False)
                w.timeline(window_timeline(sources, base + window_t0, step_us, kernels))
                w.window(base + window_t0, base + t, "profiler window")
        while t >= next_read:  # the samplers' 0.5 s reads
            replay.advance(0.5)
            if session is not None:
                for s in gpu_samples(session.read()):
                    w.counter(*s)
            for name, v in (
                ("cpu_total", 60.0),
                ("cpu_max_core", 90.0),
                ("cpu_process", 150.0),
                ("cpu_iowait", 1.0),
                ("host_mem_used", 40.0),
            ):
                w.counter(name, "host", base + next_read, v)
            next_read += 0.5e6
        if t >= next_gil:
            for name, v in (
                ("gil_lateness", 0.3),
                ("gil_lateness_p50", 0.1),
                ("gil_reference_lateness", 0.2),
            ):
                w.counter(name, "host", base + t, v)
            next_gil += 10e6
        if t - epoch_start >= epoch_us:
            w.span("epoch", base + epoch_start, base + t, epoch=epoch)
            epoch, epoch_start, epoch_step = epoch + 1, t, 0
    w.span("epoch", base + epoch_start, base + t, epoch=epoch)
    return {"steps": step, "windows": len(schedule.opened), "writer": w}  # type: ignore[dict-item]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--step-ms", type=float, default=50.0)
    ap.add_argument("--epoch-min", type=float, default=30.0)
    ap.add_argument("--kernels", type=int, default=2000, help="kernels per step per GPU")
    ap.add_argument("--no-readback", action="store_true", help="skip the old way (slow)")
    args = ap.parse_args()

    path = os.path.join(tempfile.mkdtemp(prefix="gpudiag-longrun-"), "long.gpudiag.json")
    rss0 = rss_mib()
    t0 = time.perf_counter()
    sim = simulate(path, args.hours, args.gpus, args.step_ms, args.epoch_min, args.kernels)
    sim_s = time.perf_counter() - t0
    writer = sim["writer"]
    writer.close()  # type: ignore[attr-defined]
    size = os.path.getsize(path) / 1e6
    rss_run = rss_mib()
    t0 = time.perf_counter()
    d = diagnose([writer.summary(path)])  # type: ignore[attr-defined]
    end_s = time.perf_counter() - t0
    peak = peak_mib()
    print(
        f"simulated {args.hours:g} h, {args.gpus} GPUs, {args.step_ms:g} ms steps: "
        f"{sim['steps']:,} steps, {sim['windows']} profiler windows "
        f"({sim_s:.0f} s to simulate)"
    )
    print(f"trace: {size:.1f} MB   target < 200 MB for 24 h x 8 GPUs")
    print(
        f"end-of-fit report from the running summary: {end_s:.2f} s, process peak RSS "
        f"{peak - rss0:.0f} MB above its size before the run (summary held: "
        f"{rss_run - rss0:.0f} MB)   target < 1 s, < 100 MB"
    )
    print(f"  verdict {d.verdict}, {d.steps['count']:,} steps, median {d.steps['median_ms']} ms")
    if not args.no_readback:
        code = (
            "import sys,time,resource;from gpudiag.analyze import diagnose;"
            "from gpudiag.trace.load import load_file;"
            "r0=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss;t=time.perf_counter();"
            "d=diagnose(load_file(sys.argv[1]));"
            "print(time.perf_counter()-t, (resource.getrusage(resource.RUSAGE_SELF)"
            ".ru_maxrss-r0)/1024, d.verdict)"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, path], capture_output=True, text=True, timeout=1800
        )
        if out.returncode == 0:
            secs, mib, verdict = out.stdout.split()
            print(
                f"the same report by reading the trace back (gpudiag analyze): "
                f"{float(secs):.2f} s, {float(mib):.0f} MB peak RSS, verdict {verdict}"
            )
        else:
            print(f"reading the trace back failed: {out.stderr.strip()[-300:]}")
    os.unlink(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
