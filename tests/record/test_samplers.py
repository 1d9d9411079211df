"""Sampler threads: errors caught and reported, clean stop, counter names and timestamps."""

from __future__ import annotations

import threading
import time

import psutil

from gpudiag.record.host import HostMonitor, HostSnapshot
from gpudiag.record.nvml import NvmlSession
from gpudiag.record.nvml_replay import ReplayNvml
from gpudiag.record.samplers import (
    Sampler,
    SamplerSet,
    gpu_sampler,
    host_samples,
)
from gpudiag.trace.model.timeline import COUNTER_NAMES
from tests.helpers.paths import NVML_H100_BURSTY

FIXTURE = NVML_H100_BURSTY


def _ours() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("gpudiag-")]


def _wait(cond, timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def test_read_errors_are_caught_counted_and_kept():
    calls = {"n": 0}

    def read() -> int:
        calls["n"] += 1
        if calls["n"] % 2:
            raise RuntimeError("driver hiccup")
        return calls["n"]

    got: list[tuple] = []
    s = Sampler(
        "flaky",
        read,
        lambda n: [("cpu_total", "host", 1.0, float(n))],
        lambda *a: got.append(a),
        interval=0.01,
    )
    s.start()
    assert _wait(lambda: s.error_count >= 30 and len(got) >= 30)
    s.stop()
    assert s.errors[0] == "flaky read: RuntimeError: driver hiccup"
    assert len(s.errors) <= 10  # a short list, the count keeps going
    assert s.error_count >= 30 and s.reads >= 30  # kept sampling after each failure
    assert not s.running and not _ours()


def test_sink_and_convert_errors_never_escape():
    def bad_sink(*a):
        raise ValueError("disk full")

    s = Sampler("x", lambda: 1, lambda v: [("cpu_total", "host", 0.0, 1.0)] * 3, bad_sink)
    assert s.sample_once() == 1
    assert s.error_count == 3 and "sink: ValueError: disk full" in s.errors[0]
    s2 = Sampler("y", lambda: 1, lambda v: 1 / 0, None)
    assert s2.sample_once() == 1 and "convert: ZeroDivisionError" in s2.errors[0]


def test_stop_is_idempotent_and_joins():
    stopped = []
    s = Sampler(
        "t", lambda: 0, lambda v: [], None, interval=0.05, on_stop=lambda: stopped.append(1)
    )
    s.start()
    assert _wait(lambda: s.reads >= 2)
    s.stop()
    s.stop()
    s.start()  # not restartable: a stopped sampler stays stopped
    assert stopped == [1] and not s.running and not _ours()


def test_gpu_sampler_emits_driver_timestamps():
    fake = ReplayNvml.from_file(FIXTURE)
    nv = NvmlSession(lib=fake)
    got: list[tuple[str, str, float, float]] = []
    s = gpu_sampler(nv, lambda *a: got.append(a), interval=0.5)
    for _ in range(4):
        fake.advance(0.5)
        s.sample_once()
    util = [g for g in got if g[0] == "gpu_util" and g[1] == "GPU 0"]
    driver_ts = {
        fake._base_us + int(t * 1000) for t, _ in fake.data["devices"][0]["util_samples_ms"]
    }
    assert len(util) >= 10
    assert all(int(ts) in driver_ts for _, _, ts, _ in util)  # not the read time
    names = {g[0] for g in got}
    assert names == {
        "gpu_util",
        "gpu_mem_used",
        "gpu_mem_total",
        "pcie_rx",
        "pcie_tx",
        "gpu_power",
        "gpu_clock_sm",
    }
    assert names <= COUNTER_NAMES.keys()
    assert {g[1] for g in got} == {"GPU 0", "GPU 1"}
    s.stop()
    assert fake.calls["nvmlShutdown"] == 1


def test_gpu_field_errors_reach_sampler_errors():
    fake = ReplayNvml.from_file(FIXTURE, fail={"nvmlDeviceGetPowerUsage": 15})
    s = gpu_sampler(NvmlSession(lib=fake), None)
    fake.advance(1.0)
    s.sample_once()
    assert s.error_count == 2 and "GPU 0" in s.errors[0] and "GPU_IS_LOST" in s.errors[0]


def test_host_samples_skip_unmeasured_fields():
    snap = HostSnapshot(
        ts_us=1.0,
        interval_s=1.0,
        per_core=[10.0, 90.0],
        cpu_total=50.0,
        cpu_max_core=90.0,
        cpu_process=None,
        iowait=None,
        mem_used_pct=40.0,
    )
    got = host_samples(snap)
    assert {g[0] for g in got} == {"cpu_total", "cpu_max_core", "host_mem_used"}
    assert all(g[1] == "host" for g in got)


def test_host_monitor_reads_cpu_of_a_busy_thread():
    mon = HostMonitor()
    c0 = time.process_time()
    end = time.monotonic() + 3.0
    while time.process_time() - c0 < 0.2 and time.monotonic() < end:
        pass  # 0.2 s of CPU, however busy the machine is
    s = mon.read()
    expected = 100 * (time.process_time() - c0) / s.interval_s
    assert s.n_cores == psutil.cpu_count() and s.cpu_total is not None
    assert s.cpu_process is not None and abs(s.cpu_process - expected) < 25, (s, expected)
    assert s.cpu_max_core >= s.cpu_total and s.mem_used_pct is not None


def test_sampler_set_without_gpu_reports_and_cleans_up():
    got: list[tuple] = []
    sset = SamplerSet.default(
        lambda *a: got.append(a),
        nvml_lib=ReplayNvml.unavailable(),
        host_interval=0.1,
        gil_interval=0.2,
    )
    status = sset.status()
    assert status[0].startswith("GPU: not measured — No NVIDIA GPU visible: NVML could not load")
    assert any(line.startswith("host CPU/memory: measured") for line in status)
    assert sset.limitations()[0] == status[0]
    with sset:
        assert _wait(lambda: sset.gil is not None and sset.gil.reference_pid is not None)
        child = sset.gil.reference_pid
        assert _wait(
            lambda: (
                {"gil_lateness", "gil_lateness_p50", "gil_reference_lateness", "cpu_total"}
                <= {g[0] for g in got}
            ),
            timeout=5,
        )
    assert not _ours()
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE
    assert {g[1] for g in got} == {"host"}
    assert {g[0] for g in got} <= COUNTER_NAMES.keys()
    assert sset.error_count == 0, sset.errors
    sset.stop_all()  # again: harmless


def test_stop_takes_a_final_sample_for_the_tail_of_a_run():
    got: list[tuple] = []
    s = Sampler(
        "t",
        time.time,
        lambda t: [("cpu_total", "host", t * 1e6, 1.0)],
        lambda *a: got.append(a),
        interval=10.0,
    )
    s.start()
    assert _wait(lambda: s.reads == 1)
    s.stop()
    assert s.reads == 2 and len(got) == 2
    quiet = Sampler("q", time.time, lambda t: [], None, interval=10.0, final_sample=False)
    quiet.start()
    assert _wait(lambda: quiet.reads == 1)
    quiet.stop()
    assert quiet.reads == 1


def test_an_empty_sampler_set_starts_and_stops_quietly():
    sset = SamplerSet().start_all()
    time.sleep(0.1)
    sset.stop_all()
    assert sset.errors == [] and not _ours()
