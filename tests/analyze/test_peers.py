"""Figures that must match xprof's and HTA's on traces of the shapes they were compared on
(docs/peers.md): copies are not compute, a device that only copies does not dilute the run,
TPU host-offload copies and a psum are what they are."""

from __future__ import annotations

import numpy as np
import pytest

from gpudiag.analyze import diagnose
from gpudiag.analyze import thresholds as T
from gpudiag.analyze.arrival import chance_last, wilson_low
from gpudiag.trace.load import load_file
from gpudiag.trace.model.timeline import Kind, Metadata, Timeline
from gpudiag.trace.names.comm import classify_op, is_copy
from tests.helpers import foreign, peer_shapes, synth


def _load(doc, tmp_path, name="t.json"):
    return load_file(foreign.write(doc, tmp_path / name))


def test_device_to_device_copies_and_memsets_are_not_compute(tmp_path):
    tls = _load(peer_shapes.kineto_d2d(), tmp_path)
    assert len(tls[0].device_activity("GPU 0", Kind.COPY)) == 12
    d = diagnose(tls)
    # HTA: compute = kernels that are neither communication nor memory
    assert d.breakdown["compute"] == pytest.approx(0.60, abs=0.01)
    assert d.breakdown["transfer"] == pytest.approx(0.20, abs=0.01)
    fp = d.finding("full-precision")
    assert fp is not None and fp.evidence["compute_share_pct"] == pytest.approx(60.0, abs=1)
    # no host link is involved: device-local copies are not "host<->device heavy"
    assert d.finding("host-to-device-heavy") is None


def test_a_gpu_that_only_copies_does_not_dilute_the_run(tmp_path):
    tls = _load(peer_shapes.jax_copy_only_gpu(), tmp_path)
    d = diagnose(tls)
    assert d.breakdown["compute"] == pytest.approx(0.50, abs=0.02)
    rows = {r.device: r for r in d.devices}
    assert rows["GPU 1"].compute == 0.0  # still shown, with its copies
    gaps = d.finding("gpu-idle-gaps")
    assert gaps is None or gaps.evidence["device"] == "GPU 0"


def test_tpu_host_offload_copies_are_not_compute_and_psum_is_communication(tmp_path):
    tls = _load(peer_shapes.tpu_host_offload(), tmp_path)
    tl = tls[0]
    assert tl.meta.device_type == "TPU"
    assert tl.meta.extra["communication_us"]["XLA"] > 0
    d = diagnose(tls)
    assert d.breakdown["compute"] == pytest.approx(0.02, abs=0.01)
    assert d.breakdown["transfer"] == pytest.approx(0.93, abs=0.02)
    assert d.devices[0].collective_total == pytest.approx(0.03, abs=0.01)
    assert d.verdict != "compute-bound"
    assert "copies" in d.reason


@pytest.mark.parametrize(
    ("name", "category", "copy"),
    [
        ("copy-start.3", "", True),
        ("copy-done", "", True),
        ("%copy-done.12", "", True),
        ("fusion.2", "async-copy", True),
        ("Memcpy DtoD (Device -> Device)", "", True),
        ("Memcpy PtoP (Device -> Device)", "", True),
        ("Memset (Device)", "", True),
        ("MemcpyD2D", "", True),
        ("copy.4", "data formatting", False),  # a layout change the device computes
        ("copy_fusion", "loop fusion", False),
        ("volta_sgemm_128x64_nn", "", False),
    ],
)
def test_copy_names(name, category, copy):
    assert is_copy(name, category) is copy


def test_xla_collective_from_its_category():
    assert classify_op("reduce_sum_fusion", "all-reduce").op == "all-reduce"
    assert classify_op("fusion.7", "loop fusion") is None


def test_an_eager_decode_step_is_the_iteration_not_its_layers(tmp_path):
    tl = _load(peer_shapes.eager_decode_layers(), tmp_path)[0]
    assert tl.meta.extra["steps_marker"] == "nn.Module: Qwen2ForCausalLM_0"
    assert len(tl.steps) == 1
    assert tl.steps.durations[0] / 1000.0 == pytest.approx(84.0, abs=1.0)
    assert any(
        "Qwen2DecoderLayer" in lim and "part of the iteration" in lim for lim in tl.meta.limitations
    )


def _late_starter(n: int = 8, steps: int = 8, late_in: int = 5, late_us: float = 6_000.0):
    """``n`` ranks, 100 ms steps, 80 ms of compute each, then an all-reduce that ends 1 ms
    after the last arrival. Rank n-1 starts its compute ``late_us`` late in the first
    ``late_in`` steps (its work is no longer); in the other steps another rank is 3 ms late."""
    rng = np.random.default_rng(7)
    tls = [Timeline(meta=Metadata(producer="synthetic", rank=r, world_size=n)) for r in range(n)]
    step_us = 100_000.0
    for i in range(steps):
        t = i * step_us
        delay = rng.uniform(0.0, 1_000.0, n)
        if i < late_in:
            delay[n - 1] += late_us
        else:
            delay[i % (n - 1)] += 3_000.0
        arrive = t + delay + 80_000.0
        done = float(arrive.max()) + 1_000.0
        for r in range(n):
            tls[r].add_activity("GPU 0", Kind.COMPUTE, [t + delay[r]], [arrive[r]])
            tls[r].add_activity("GPU 0", Kind.COLLECTIVE, [arrive[r]], [done])
    for tl in tls:
        tl.add_steps(range(steps), np.arange(steps) * step_us, (np.arange(steps) + 1) * step_us)
        tl.freeze()
    return tls


def test_the_rank_that_starts_late_is_named_with_what_is_known():
    d = diagnose(_late_starter())
    f = d.finding("straggler")
    assert f is not None and f.evidence["straggler"] == "rank 7"
    assert f.evidence["cause"] == "arrives late"
    assert f.severity == "info"  # the others lose ~6% of a 100 ms step
    assert f.evidence["arrives_last_in_steps_pct"] == 62.5
    assert f.evidence["confidence"] == pytest.approx(wilson_low(5, 8), abs=0.01)
    assert "starts late" in f.title


def test_a_rank_last_by_chance_in_few_steps_is_not_named():
    # last in 2 of 3 steps of 8 ranks with a small wait: chance, not a straggler
    assert diagnose(_late_starter(steps=3, late_in=2)).finding("straggler") is None


def test_confidence_grows_with_the_steps_that_show_it():
    assert wilson_low(1, 1) < wilson_low(5, 8) < wilson_low(6, 6) < wilson_low(20, 20)
    assert chance_last(5, 8, 8) <= T.STRAGGLER_CHANCE < chance_last(4, 4, 3)


def test_a_rank_whose_work_is_longer_is_said_to_work_longer():
    from tests.analyze.test_straggler import synced_ranks

    f = diagnose(synced_ranks(4, steps=6, slow_rank=3, extra_us=5000.0)).finding("straggler")
    assert f is not None and f.evidence["cause"] == "works longer"
    assert f.severity in ("moderate", "high")


def test_unprofiled_multi_worker_run_is_sync_bound_from_step_timing():
    from tests.analyze.test_straggler import synced_ranks

    # MultiWorkerMirroredStrategy with the profiler window off: callback timing only; rank 1
    # spends 20 ms per step in another callback, rank 0 waits for it
    tls = synced_ranks(2, steps=12, slow_rank=1, extra_us=20_000.0, profiled=False)
    d = diagnose(tls)
    assert d.verdict == "sync-bound"
    assert d.finding("straggler").evidence["straggler"] == "rank 1"
    rows = {r.label: r for r in d.ranks}
    share0 = rows["rank 0"].wait_ms / rows["rank 0"].step_ms
    assert share0 > 0.6
    assert d.breakdown["sync"] == pytest.approx((share0 + 0.0) / 2, abs=0.02)
    assert sum(d.breakdown.values()) == pytest.approx(1.0)
    assert "rank 0 waits" in d.reason and "rank 1" in d.reason
    assert 0.0 < d.confidence < 0.95


def test_unprofiled_ranks_that_do_not_wait_stay_inconclusive():
    from tests.analyze.test_straggler import synced_ranks

    d = diagnose(synced_ranks(2, steps=12, jitter_us=300.0, profiled=False))
    assert d.verdict == "inconclusive"


def test_tpu_offload_xspace_read_through_xprof(tmp_path):
    pytest.importorskip("xprof.convert")
    path = tmp_path / "tpu.xplane.pb"
    path.write_bytes(peer_shapes.tpu_offload_xspace())
    d = diagnose(load_file(str(path)))
    assert d.breakdown["compute"] == pytest.approx(0.02, abs=0.01)
    assert d.breakdown["transfer"] == pytest.approx(0.93, abs=0.02)
    assert d.devices[0].collective_total == pytest.approx(0.03, abs=0.01)
    assert d.verdict == "inconclusive" and "copies" in d.reason


def test_a_timeline_that_only_copies_does_not_dilute_the_run():
    # a profile split per device (each with its own step line): one device only copies
    work = synth.periodic(steps=6, step_us=10_000.0, compute_frac=0.5, device="GPU 0")
    copy = Timeline(meta=Metadata(producer="synthetic"))
    copy.add_activity(
        "GPU 1", Kind.COPY, np.arange(6) * 10_000.0 + 7_000.0, np.arange(6) * 10_000.0 + 7_500.0
    )
    copy.add_steps(range(6), np.arange(6) * 10_000.0, (np.arange(6) + 1) * 10_000.0)
    copy.freeze()
    d = diagnose([work, copy])
    assert d.breakdown["compute"] == pytest.approx(0.5, abs=0.01)
    assert "disagree" not in d.reason
