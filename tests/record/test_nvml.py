"""NvmlSession driven through the replay stand-in (same code path as real pynvml)."""

from __future__ import annotations

import itertools
import sys
import time

import pytest

from gpudiag.record.nvml import NvmlSession
from gpudiag.record.nvml_replay import ReplayNvml
from tests.helpers.paths import NVML_H100_BURSTY

FIXTURE = NVML_H100_BURSTY


def replay(**kw) -> ReplayNvml:
    return ReplayNvml.from_file(FIXTURE, **kw)


def test_opens_once_and_caches_handles():
    fake = replay()
    nv = NvmlSession(lib=fake)
    assert nv.available and nv.reason is None
    assert nv.count == 2 and nv.sources == ["GPU 0", "GPU 1"]
    assert nv.names == ["NVIDIA H100 80GB HBM3"] * 2
    for _ in range(10):
        fake.advance(0.5)
        assert len(nv.read()) == 2
    assert fake.calls["nvmlInit"] == 1
    assert fake.calls["nvmlDeviceGetCount"] == 1
    assert fake.calls["nvmlDeviceGetHandleByIndex"] == 2  # never re-opened per read
    assert fake.calls["nvmlDeviceGetSamples"] == 20
    nv.close()
    nv.close()
    assert fake.calls["nvmlShutdown"] == 1
    assert nv.read() == []


def test_buffered_util_samples_keep_driver_timestamps_and_last_ts():
    fake = replay()
    nv = NvmlSession(lib=fake)
    seen: list[tuple[float, float]] = []
    for _ in range(12):
        fake.advance(0.5)
        seen.extend(nv.read()[0].util_samples)
    ts = [t for t, _ in seen]
    assert ts == sorted(ts) and len(set(ts)) == len(ts)  # last_ts: nothing read twice
    # 6 s at the driver's 1/6 s period, stamped by the driver, not by the read
    assert 34 <= len(seen) <= 37
    gaps = {round((b - a) / 1000) for a, b in itertools.pairwise(ts)}
    assert gaps <= {166, 167}
    assert abs(ts[0] - time.time() * 1e6) < 60e6  # wall-clock µs
    values = [v for _, v in seen]
    assert max(values) >= 95 and values.count(0.0) >= 6  # bursts and idle gaps


def test_snapshot_fields_and_units():
    fake = replay()
    nv = NvmlSession(lib=fake)
    fake.advance(2.0)
    g = nv.read()[0]
    assert g.source == "GPU 0" and g.errors == []
    assert g.mem_total_mib == pytest.approx(81559) and g.mem_used_mib == pytest.approx(78917)
    row = fake.data["devices"][0]["reads"][4]  # t = 2.0 s
    assert g.pcie_rx_mbs == pytest.approx(row["pcie_rx_kbs"] / 1000)  # KB/s -> MB/s
    assert g.pcie_tx_mbs == pytest.approx(row["pcie_tx_kbs"] / 1000)
    assert g.power_w == pytest.approx(row["power_mw"] / 1000)
    assert g.power_limit_w == 700
    assert g.clock_sm_mhz == row["clock_sm_mhz"]
    assert g.temperature_c == row["temperature_c"]
    assert g.processes is not None and g.processes[0].pid == 48213
    assert g.processes[0].used_mib == pytest.approx(78400)
    assert g.processes[0].name  # psutil, or NVML's name where the pid is not ours to see


def test_not_supported_fields_are_none_and_not_retried():
    fake = replay(not_supported={"nvmlDeviceGetPowerUsage", "nvmlDeviceGetPcieThroughput"})
    nv = NvmlSession(lib=fake)
    for _ in range(3):
        fake.advance(0.5)
        g = nv.read()[0]
    assert g.power_w is None and g.pcie_rx_mbs is None and g.pcie_tx_mbs is None
    assert g.mem_used_mib is not None and g.util is not None and g.clock_sm_mhz is not None
    assert g.errors == []  # NotSupported is a fact, not an error
    assert fake.calls["nvmlDeviceGetPowerUsage"] == 2  # once per GPU, then remembered
    assert {"power", "pcie_rx", "pcie_tx"} <= nv.unsupported(0)


def test_samples_unsupported_falls_back_to_utilization_rates():
    fake = replay(not_supported={"nvmlDeviceGetSamples"})
    nv = NvmlSession(lib=fake)
    fake.advance(1.0)
    g = nv.read()[0]
    assert g.util is not None and len(g.util_samples) == 1
    assert g.util_samples[0][0] == pytest.approx(g.ts_us)  # averaged rate: read time
    assert fake.calls["nvmlDeviceGetUtilizationRates"] == 2


def test_one_failing_field_does_not_kill_the_others():
    fake = replay(fail={"nvmlDeviceGetPcieThroughput": 15, "nvmlDeviceGetTemperature": 999})
    nv = NvmlSession(lib=fake)
    fake.advance(1.0)
    g = nv.read()[0]
    assert g.pcie_rx_mbs is None and g.temperature_c is None
    assert any("NVML_ERROR_GPU_IS_LOST" in e for e in g.errors)
    assert g.util is not None and g.mem_used_mib is not None and g.power_w is not None
    assert g.processes


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (12, "could not load the driver library (NVML_ERROR_LIBRARY_NOT_FOUND"),
        (9, "kernel driver is not loaded (NVML_ERROR_DRIVER_NOT_LOADED"),
    ],
)
def test_init_failure_reason(code, words):
    nv = NvmlSession(lib=ReplayNvml.unavailable(code))
    assert not nv.available
    assert nv.reason.startswith("No NVIDIA GPU visible: ")
    assert words in nv.reason and "\n" not in nv.reason
    assert nv.read() == []


def test_zero_gpus_reason():
    nv = NvmlSession(lib=ReplayNvml({"devices": [], "driver_version": "550.54.15"}))
    assert not nv.available
    assert "reports 0 GPUs" in nv.reason and "550.54.15" in nv.reason


def test_pynvml_import_failure(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise
    nv = NvmlSession()
    assert not nv.available and nv.reason.startswith("No NVIDIA GPU visible: ")
    assert "nvidia-ml-py" in nv.reason


def test_non_epoch_driver_timestamps_are_mapped_to_wall_clock():
    fake = replay()
    fake._base_us = 5_000_000  # a driver counting from boot, not from the epoch
    nv = NvmlSession(lib=fake)
    fake.advance(1.0)
    samples = nv.read()[0].util_samples
    assert samples and abs(samples[-1][0] - time.time() * 1e6) < 5e6


def test_real_nvml_on_this_machine():
    nv = NvmlSession()
    if nv.available:
        pytest.skip("this machine has an NVIDIA GPU")
    assert nv.reason.startswith("No NVIDIA GPU visible: ")
    assert "NVML_ERROR_" in nv.reason or "nvidia-ml-py" in nv.reason
    assert nv.read() == []
    nv.close()


def test_backfill_off_drops_samples_from_before_the_session():
    fake = replay()
    fake.advance(3.0)  # three seconds buffered in the "driver" before we open it
    fake._base_us -= 3_000_000  # ... which happened in the past
    with_history = NvmlSession(lib=fake).read()[0].util_samples
    fresh_only = NvmlSession(lib=fake, backfill=False).read()[0].util_samples
    assert len(with_history) >= 17 and fresh_only == []
