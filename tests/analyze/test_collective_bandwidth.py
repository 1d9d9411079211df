"""Collective bandwidth against the link: synthetic ranks with known message sizes, link
speeds and late ranks, and the real NCCL traces in sample_traces/."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudiag.analyze import bandwidth as B
from gpudiag.analyze import diagnose
from gpudiag.analyze.links import link_of, pcie
from gpudiag.trace.load import load_file, load_timelines
from gpudiag.trace.model.collectives import operation, params_of
from tests.helpers.collective_ranks import transfer_us, write_ranks
from tests.helpers.paths import SAMPLES

MB64 = 64 * 1_000_000


def run(tmp_path: Path, n: int = 8, **kw):
    paths = write_ranks(tmp_path, n, **kw)
    return diagnose(load_timelines(paths))


def test_bus_bandwidth_follows_nccl_tests():
    assert B.bus_factor("all-reduce", 8) == pytest.approx(1.75)
    assert B.bus_factor("all-gather", 4) == pytest.approx(0.75)
    assert B.bus_factor("reduce-scatter", 2) == pytest.approx(0.5)
    assert B.bus_factor("broadcast", 8) == 1.0


def test_sizes_from_record_param_comms_args():
    p = params_of(
        {
            "Collective name": "_allgather_base",
            "In msg nelems": 100,
            "Out msg nelems": 800,
            "dtype": "BFloat16",
            "Group size": 8,
        }
    )
    assert p is not None and (p.op, p.nbytes, p.group) == ("all-gather", 1600, 8)
    assert params_of({"Collective name": "wait", "In msg nelems": 0, "dtype": "Byte"}) is None
    assert operation("barrier") is None


def test_link_table():
    assert link_of("NVIDIA A100-SXM4-80GB").gbps == 300.0
    assert link_of("NVIDIA A100-PG509-200").name.startswith("NVLink 3")
    assert link_of("NVIDIA A100 80GB PCIe").name == "PCIe 4.0 x16"
    assert link_of("NVIDIA H100 80GB HBM3").gbps == 450.0
    assert link_of("NVIDIA H100 PCIe").gbps == 63.0
    assert link_of("AMD Instinct MI300X").name.startswith("Infinity Fabric")
    assert link_of("Tesla T4").gbps == pytest.approx(15.8)
    assert link_of("Some New GPU") is None
    assert pcie(4, 16).gbps == pytest.approx(31.5)


@pytest.mark.parametrize("on_kernel", [True, False])
def test_near_peak_all_reduce_is_told_to_communicate_less(tmp_path, on_kernel):
    d = run(tmp_path, message_bytes=MB64, count=4, bw_gbps=240.0, sizes_on_kernel=on_kernel)
    f = d.finding("exposed-collectives")
    assert f is not None
    ev = f.evidence
    expected = MB64 * 1.75 / transfer_us(MB64, 8, 240.0) / 1e3
    assert ev["busbw_gbps"] == pytest.approx(expected, rel=0.01)
    assert ev["link_peak_gbps"] == 300.0 and ev["bandwidth_class"] == B.NEAR
    assert "near its peak" in f.title
    assert ev["arrival_wait_pct"] == pytest.approx(0.0, abs=0.1)
    assert ev["ranks_compared"] == 8
    keys = [s.remedy for s in d.suggestions if s.finding == "exposed-collectives"]
    assert keys[0] == "more-work-per-allreduce"
    assert "fuse-collectives" not in keys and "check-link" not in keys


def test_small_messages_far_below_the_link_are_latency_bound(tmp_path):
    d = run(tmp_path, message_bytes=256_000, count=200, bw_gbps=240.0)
    f = d.finding("exposed-collectives")
    assert f is not None and f.evidence["bandwidth_class"] == B.LATENCY
    assert f.evidence["link_peak_pct"] < 100 * B.NEAR_PEAK
    assert "latency-bound" in f.title
    fuse = next(s for s in d.suggestions if s.remedy == "fuse-collectives")
    assert "bucket_cap_mb" in fuse.detail  # a Kineto trace: PyTorch's words
    assert fuse.expected_gain_range[1] > 1.0


def test_large_messages_far_below_the_link_point_at_the_link(tmp_path):
    d = run(tmp_path, message_bytes=MB64, count=1, bw_gbps=10.0)
    f = d.finding("exposed-collectives")
    assert f is not None and f.evidence["bandwidth_class"] == B.LINK
    assert f.evidence["busbw_gbps"] == pytest.approx(10.0, rel=0.01)
    check = next(s for s in d.suggestions if s.remedy == "check-link")
    assert "NCCL_P2P_DISABLE" in check.detail and "late rank" not in check.detail
    assert check.expected_gain_range[1] > 1.5  # the link at half its peak
    assert "more-work-per-allreduce" in [x.remedy for x in d.suggestions]


def test_the_late_ranks_wait_is_apart_from_the_transfer(tmp_path):
    skew = 3_000.0
    d = run(tmp_path, message_bytes=MB64, count=4, bw_gbps=240.0, late_rank=5, skew_us=skew)
    ev = d.finding("exposed-collectives").evidence
    # the transfer is still near the link's peak: the wait is the late rank's, not the link's
    assert ev["bandwidth_class"] == B.NEAR
    assert ev["busbw_gbps"] == pytest.approx(
        MB64 * 1.75 / transfer_us(MB64, 8, 240.0) / 1e3, rel=0.01
    )
    steps = 4
    assert ev["arrival_wait_ms"] == pytest.approx(steps * skew * 7 / 8 / 1e3, rel=0.01)
    assert ev["transfer_ms"] == pytest.approx(
        steps * 4 * transfer_us(MB64, 8, 240.0) / 1e3, rel=0.01
    )


def test_one_rank_alone_cannot_tell_the_wait_from_the_link(tmp_path):
    paths = write_ranks(
        tmp_path, 8, message_bytes=MB64, count=4, bw_gbps=240.0, late_rank=5, skew_us=12_000.0
    )
    d = diagnose(load_file(paths[0]))
    f = d.finding("exposed-collectives")
    assert "arrival_wait_ms" not in f.evidence
    # the wait in the first all-reduce halves the apparent bandwidth: far below, large
    assert f.evidence["bandwidth_class"] == B.LINK
    check = next(s for s in d.suggestions if s.remedy == "check-link")
    assert "late rank" in check.detail


def test_ranks_spanning_servers_have_no_link_peak(tmp_path):
    d = run(tmp_path, n=16, message_bytes=MB64, count=4, bw_gbps=20.0)
    ev = d.finding("exposed-collectives").evidence
    assert "span servers" in ev["link"] and "link_peak_gbps" not in ev
    assert ev["bandwidth_class"] == B.UNKNOWN


def test_real_nccl_trace_with_sizes():
    """HTA's A100 trace (2 ranks, PyTorch 2.x): all-reduces of 8-31 MB run at 6.6 GB/s, 2%
    of NVLink 3; from one rank the wait for the other cannot be told apart."""
    (tl,) = load_file(str(SAMPLES / "a100_nccl_sparse.json.gz"))
    assert len(tl.collectives) == 21
    assert set(tl.collectives.op) == {"all-reduce", "broadcast"}
    d = diagnose([tl])
    ev = d.finding("exposed-collectives").evidence
    assert ev["busbw_gbps"] == pytest.approx(6.56, abs=0.05)
    assert ev["link"] == "NVLink 3 (12 links)" and ev["link_peak_gbps"] == 300.0
    assert ev["message_mb"] == pytest.approx(26.3, abs=0.1)
    assert ev["bandwidth_class"] == B.LINK


@pytest.mark.parametrize("name", ["nccl_world128_rank0.json.gz", "a100_overlapped_comm.json.gz"])
def test_real_nccl_traces_without_sizes_say_so(name):
    (tl,) = load_file(str(SAMPLES / name))
    assert len(tl.collectives) == 0
    f = diagnose([tl]).finding("exposed-collectives")
    assert f is not None and "no collective sizes" in f.evidence["bandwidth"]
