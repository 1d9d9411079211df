"""Memory headroom behind every batch remedy, and memory that grows epoch over epoch: the
H100 recordings' peaks (sample_traces/h100_keras_jax/runs.json.gz), synthetic readings on
both sides of each threshold, and real Keras runs on the CPU (tests/helpers/memory_scenarios.py)."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

from gpudiag.analyze import ranking
from gpudiag.analyze.diagnosis import Finding
from gpudiag.analyze.evidence import HostFacts, Situation
from gpudiag.analyze.headroom import MemoryFacts, batch_check, memory_facts
from gpudiag.analyze.rules import memory_growth
from gpudiag.record.memory import DeviceMemory, MemoryProbe
from gpudiag.trace.model.runconfig import RunConfig
from gpudiag.trace.model.timeline import Metadata, Timeline
from tests.helpers.paths import H100, SAMPLES
from tests.helpers.script_io import run_script
from tests.rules.kit import evidence

MIB = float(1 << 20)
BATCH_REMEDIES = {"bigger-batch", "more-work-per-allreduce"}


def h100_runs() -> dict[str, dict]:
    with gzip.open(H100 / "runs.json.gz", "rt") as f:
        return {r["name"]: r for r in json.load(f)}


def device_timeline(peak: float, limit: float | None, base: float | None = None) -> Timeline:
    """Allocator readings as the callback writes them (MiB): before the first step, then at
    the epoch's end."""
    tl = Timeline(meta=Metadata(producer="gpudiag", device_type="GPU"))
    tl.add_steps([0, 1], [10.0, 20.0], [20.0, 30.0])
    if base is not None:
        tl.add_counter("mem_in_use", "GPU 0", [0.0], [base / MIB])
    tl.add_counter("mem_peak", "GPU 0", [40.0], [peak / MIB])
    if limit is not None:
        tl.add_counter("mem_limit", "GPU 0", [40.0], [limit / MIB])
    return tl.freeze()


def h100_facts(name: str) -> tuple[MemoryFacts, RunConfig]:
    run = h100_runs()[name]
    mem = run["memory"]
    precision = run["variant"].get("precision", "float32")
    cfg = RunConfig(
        device_type="GPU",
        params=run["params"],
        optimizer="Adam",
        global_batch=run["batch"],
        precision=precision,
        training=True,
    )
    tl = device_timeline(mem["peak_bytes_in_use"], mem["bytes_limit"])
    facts = memory_facts([tl], cfg)
    assert facts is not None
    return facts, cfg


def test_h100_conv_net_float32_headroom():
    """5.83 GB at batch 128 of the 63.8 GB JAX pool: 1.04M parameters with Adam hold 17 MB;
    the rest, 45 MB a sample, grows with the batch. 4x needs 23.3 GB; 9x fits, 10x not."""
    facts, cfg = h100_facts("conv")
    check = batch_check(facts, cfg, 4)
    assert check["fits"] is True
    assert check["fixed_gb"] == pytest.approx(1_038_986 * 4 * 4 / 1e9, abs=1e-3)
    assert check["needs_gb"] == pytest.approx(4 * 5.8317 - 3 * 0.0166, abs=0.02)
    assert check["usable_gb"] == pytest.approx(0.9 * 63.764, abs=0.01)
    assert int(check["max_factor"]) == 9
    assert check["text"] == "a 4× batch needs about 23.3 GB of 57.4 GB usable"
    assert "45.4 MB per sample" in check["basis"] and "at batch 128" in check["basis"]
    too_big = batch_check(facts, cfg, 16)
    assert too_big["fits"] is False and too_big["text"].startswith("does not fit: 9× at most")


def test_h100_conv_net_bfloat16_needs_a_fifth():
    """mixed_bfloat16: 1.11 GB at batch 128 (activations in 16 bits, cuDNN's bf16 kernels):
    the same 4x batch needs 4.4 GB, and 52x fits."""
    facts, cfg = h100_facts("conv_precision-mixedbfloat16")
    check = batch_check(facts, cfg, 4)
    assert check["fits"] is True and check["needs_gb"] == pytest.approx(4.40, abs=0.02)
    assert int(check["max_factor"]) == 52


def test_tiny_mlp_prediction_is_conservative():
    """The tiny MLP's peak (117.5 MB at batch 32) is workspace and data, not activations:
    the model takes it all as per-sample and predicts 470 MB for 4x; the recorded 4x run
    peaked at 117.6 MB. The check errs on the side of needing more."""
    facts, cfg = h100_facts("tiny")
    predicted = batch_check(facts, cfg, 4)["needs_gb"]
    measured = h100_runs()["tiny_batchmult-4"]["memory"]["peak_bytes_in_use"] / 1e9
    assert predicted == pytest.approx(0.47, abs=0.01)
    assert predicted >= measured


def test_what_was_held_before_the_first_step_is_fixed():
    facts = memory_facts([device_timeline(8e9, 16e9, base=3e9)], RunConfig(device_type="GPU"))
    check = batch_check(facts, RunConfig(params=1000, global_batch=32), 2)
    assert check["fixed_gb"] == pytest.approx(3.0)
    assert check["needs_gb"] == pytest.approx(13.0)
    assert check["fits"] is True  # 13 of 14.4 usable
    assert batch_check(facts, RunConfig(params=1000), 4)["text"].startswith("does not fit: 2×")


def test_unknown_memory_says_unchecked():
    assert batch_check(None, RunConfig(), 4)["text"].startswith("unchecked for memory")
    facts = memory_facts([device_timeline(8e9, None)], RunConfig(device_type="GPU"))
    assert "no limit is known" in batch_check(facts, RunConfig(), 4)["text"]


def test_an_allocator_pool_held_is_not_taken_for_use():
    """NVML shows what JAX preallocated (61 GB of 80): that says nothing of the use."""
    tl = Timeline(meta=Metadata(device_type="GPU"))
    tl.add_counter("gpu_mem_process", "GPU 0", [1.0], [61_360.0])
    tl.add_counter("gpu_mem_total", "GPU 0", [1.0], [81_559.0])
    facts = memory_facts([tl], RunConfig(device_type="GPU"))
    assert facts is not None and facts.upper_bound
    assert "allocator's pool" in batch_check(facts, RunConfig(), 2)["text"]


def kineto_memory_doc() -> dict:
    ev = [
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#0",
            "pid": 1,
            "tid": 1,
            "ts": 0,
            "dur": 1000,
            "args": {},
        },
        {
            "ph": "X",
            "cat": "kernel",
            "name": "sgemm",
            "pid": 0,
            "tid": 7,
            "ts": 10,
            "dur": 900,
            "args": {"device": 0},
        },
    ]
    for i, total in enumerate([1e9, 3e9, 5e9, 2e9]):
        ev.append(
            {
                "ph": "i",
                "cat": "cpu_instant_event",
                "name": "[memory]",
                "pid": 1,
                "tid": 1,
                "ts": 100 + i,
                "s": "t",
                "args": {
                    "Device Type": 1,
                    "Device Id": 0,
                    "Bytes": 1,
                    "Total Allocated": total,
                    "Total Reserved": 6e9,
                },
            }
        )
    return {
        "schemaVersion": 1,
        "deviceProperties": [
            {"id": 0, "name": "NVIDIA A100-SXM4-40GB", "totalGlobalMem": 40 * 1024**3}
        ],
        "traceEvents": ev,
    }


def test_kineto_memory_events_give_peak_and_limit(tmp_path):
    from gpudiag.trace.load import load_file

    path = tmp_path / "mem.pt.trace.json"
    path.write_text(json.dumps(kineto_memory_doc()))
    (tl,) = load_file(str(path))
    assert tl.counter("mem_peak")[0].values.max() == pytest.approx(5e9 / MIB)
    facts = memory_facts([tl], tl.meta.config)
    assert facts.peak == pytest.approx(5e9) and facts.limit == pytest.approx(40 * 1024**3)
    assert "Kineto" in facts.reading


def _advice(finding: str, cfg: RunConfig, memory: MemoryFacts | None, **shares: float):
    s = {"input": 0.0, "transfer": 0.0, "compute": 0.0, "sync": 0.0, "other": 0.0} | shares
    sit = Situation(
        s,
        "compute-bound",
        cfg,
        HostFacts(),
        {finding: Finding(finding, "moderate", "", {})},
        memory=memory,
    )
    return ranking.advise_run([Finding(finding, "moderate", "", {})], sit)


CASES = [
    ("small-batch", {"global_batch": 8}, {"compute": 0.7, "other": 0.3}),
    ("compute-bound-options", {"global_batch": 64}, {"compute": 0.8, "other": 0.2}),
    ("exposed-collectives", {"global_batch": 64, "replicas": 2}, {"compute": 0.6, "sync": 0.4}),
    (
        "small-model-multi-gpu",
        {"global_batch": 16, "replicas": 2, "params": 1000},
        {"compute": 0.4, "sync": 0.3, "other": 0.3},
    ),
    (
        "input-wait",
        {"global_batch": 32, "input_kind": "array", "framework": "jax"},
        {"input": 0.6, "compute": 0.3, "other": 0.1},
    ),
]


@pytest.mark.parametrize(("finding", "cfg", "shares"), CASES)
@pytest.mark.parametrize("measured", [True, False])
def test_every_batch_remedy_carries_a_memory_check(finding, cfg, shares, measured):
    config = RunConfig(training=True, device_type="GPU", params=cfg.pop("params", 10**6), **cfg)
    mem = MemoryFacts("device", "GPU 0", 4e9, 80e9, None, "the framework's allocator")
    advice = _advice(finding, config, mem if measured else None, **shares)
    batch = [s for s in advice.suggestions if s.remedy in BATCH_REMEDIES]
    assert batch, [s.title for s in advice.suggestions]
    for s in batch:
        assert s.batch_factor and s.memory is not None
        assert "Memory: " in s.detail or "Unchecked for memory" in s.detail
        if measured:
            assert s.memory["fits"] is True and "needs about" in s.memory["text"]
        else:
            assert s.memory["fits"] is None and "unchecked for memory" in s.memory["text"]


def test_a_batch_that_cannot_grow_is_withheld_with_the_reason():
    full = MemoryFacts("device", "GPU 0", 75e9, 80e9, None, "the framework's allocator")
    config = RunConfig(training=True, device_type="GPU", params=10**6, global_batch=8)
    advice = _advice("small-batch", config, full, compute=0.7, other=0.3)
    assert not [s for s in advice.suggestions if s.remedy == "bigger-batch"]
    (w,) = [w for w in advice.withheld if w["remedy"] == "bigger-batch"]
    assert w["why"].startswith("no bigger batch fits in memory: does not fit: 1.0×")


def test_memory_probe_reads_devices_and_host_and_says_a_failure_once():
    probe = MemoryProbe(lambda: [DeviceMemory("GPU 0", 2 * MIB, 5 * MIB, 80 * MIB)])
    got = {(n, s): v for n, s, _, v in probe.read()}
    assert got[("mem_peak", "GPU 0")] == 5.0 and got[("mem_limit", "GPU 0")] == 80.0
    assert got[("mem_host_rss", "host")] > 0 and ("mem_host_available", "host") in got

    def broken() -> list[DeviceMemory]:
        raise RuntimeError("no allocator")

    probe = MemoryProbe(broken)
    assert all(s == "host" for _, s, _, _ in probe.read())
    assert "no allocator" in (probe.new_problem() or "")
    probe.read()
    assert probe.new_problem() is None


def growing(levels_mib: list[float], name: str = "mem_in_use", limit: float | None = 16_384):
    tl = Timeline(meta=Metadata(producer="gpudiag", device_type="GPU"))
    spans = [(i * 60e6, (i + 1) * 60e6 - 1e6) for i in range(len(levels_mib))]
    tl.spans["epoch"] = spans
    tl.add_steps(range(len(spans)), [s for s, _ in spans], [e for _, e in spans])
    tl.add_counter(name, "GPU 0", [e + 1e3 for _, e in spans], levels_mib)
    if limit is not None:
        tl.add_counter("mem_limit", "GPU 0", [spans[-1][1]], [limit])
    return tl.freeze()


def test_device_memory_that_grows_every_epoch_is_found_with_its_runway():
    f = memory_growth.detect(evidence(growing([3000, 4000, 4500, 5000, 5500])))
    assert f is not None and f.severity == "high"
    assert f.evidence["per_epoch_mib"] == pytest.approx(500.0)
    assert f.evidence["epochs_left"] == pytest.approx((16_384 - 5500) / 500, abs=0.1)
    assert f.evidence["per_hour_mib"] == pytest.approx(500 * 60, rel=0.02)  # 1-minute epochs
    assert "out of memory in about 22 epochs" in f.title


@pytest.mark.parametrize(
    "levels",
    [
        [3000, 4000, 4010, 4020, 4030],  # settled after the first epoch: 30 MiB is noise
        [3000, 4000, 4500, 4200, 4800],  # not growing at every epoch
        [3000, 4000, 4500],  # two epochs after the first: too few
    ],
)
def test_memory_that_settles_or_wanders_is_not_a_leak(levels):
    assert memory_growth.detect(evidence(growing(levels))) is None


def run_scenario(name: str, trace: Path) -> dict:
    return run_script("memory_scenarios", name, trace, timeout=300, what=name)[0]["diagnosis"]


@pytest.mark.timeout(400)
def test_keras_cpu_run_checks_its_bigger_batch_against_host_memory(tmp_path):
    d = run_scenario("small_batch", tmp_path / "small.json")
    (sug,) = [s for s in d["suggestions"] if s["remedy"] == "bigger-batch"]
    mem = sug["memory"]
    assert mem["where"] == "host" and mem["fits"] is True
    assert "at batch 8" in mem["basis"] and "per sample" in mem["basis"]
    assert d["config"]["optimizer"] == "Adam"


@pytest.mark.timeout(700)
def test_keras_run_that_keeps_memory_each_epoch_is_told_so(tmp_path):
    leak = run_scenario("host_leak", tmp_path / "leak.json")
    f = next(f for f in leak["findings"] if f["id"] == "memory-growth")
    assert f["evidence"]["per_epoch_mib"] == pytest.approx(48.0, abs=4.0)
    assert f["evidence"]["reading"] == "mem_host_rss"
    assert leak["suggestions"][0]["remedy"] == "find-memory-growth"
    clean = run_scenario("no_leak", tmp_path / "clean.json")
    assert "memory-growth" not in [f["id"] for f in clean["findings"]]


def test_tensorflow_memory_profile_in_an_xplane():
    """TF's BFC allocators in the 2-worker V100 profile: 6.2 GB peak of a 15.5 GB limit on
    each trained GPU (GPU_1_bfc, 4.0 GB, belongs to neither worker's devices)."""
    from gpudiag.trace.load import load_file

    tls = load_file(str(SAMPLES / "tf_gpu_multi_worker.xplane.pb"))
    by_device = {c.source: float(c.values.max()) for tl in tls for c in tl.counter("mem_peak")}
    assert by_device["GPU 4"] == pytest.approx(6_208_853_760 / MIB, rel=1e-6)
    assert by_device["GPU 6"] == pytest.approx(6_210_111_488 / MIB, rel=1e-6)
    facts = memory_facts(tls, RunConfig(device_type="GPU"))
    assert facts.source == "GPU 6" and facts.limit == pytest.approx(15_477_102_400, rel=1e-6)
    assert "memory events" in facts.reading
    check = batch_check(facts, RunConfig(params=25_000_000, optimizer="SGD"), 2)
    assert check["fits"] is True and check["max_factor"] == pytest.approx(2.28, abs=0.01)


def test_backend_readers_take_each_frameworks_own_numbers(monkeypatch):
    """The allocator APIs as each framework answers on a GPU (the JAX figures are the H100
    conv run's memory_stats()); a CPU device answers nothing."""
    from types import SimpleNamespace

    from gpudiag.record import memory

    stats = h100_runs()["conv"]["memory"]
    gpu = SimpleNamespace(platform="gpu", memory_stats=lambda: stats)
    cpu = SimpleNamespace(platform="cpu", memory_stats=lambda: None)
    monkeypatch.setitem(sys.modules, "jax", SimpleNamespace(local_devices=lambda: [cpu, gpu]))
    (d,) = memory.jax_memory()
    assert (d.source, d.peak, d.limit) == ("GPU 0", 5831741440, 63763906560)

    logical = [SimpleNamespace(name="/device:GPU:0")]
    tf = SimpleNamespace(
        config=SimpleNamespace(
            list_logical_devices=lambda kind: logical if kind == "GPU" else [],
            experimental=SimpleNamespace(get_memory_info=lambda n: {"current": 5, "peak": 9}),
        )
    )
    monkeypatch.setitem(sys.modules, "tensorflow", tf)
    assert memory.tf_memory() == [DeviceMemory("GPU 0", 5, 9, None)]

    cuda = SimpleNamespace(
        is_available=lambda: True,
        is_initialized=lambda: True,
        device_count=lambda: 2,
        memory_reserved=lambda i: 1 << 30 if i == 1 else 0,  # GPU 0 untouched: no context
        get_device_properties=lambda i: SimpleNamespace(total_memory=80 << 30),
        memory_allocated=lambda i: 1 << 29,
        max_memory_allocated=lambda i: 3 << 29,
    )
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=cuda))
    assert memory.torch_memory() == [DeviceMemory("GPU 1", 1 << 29, 3 << 29, 80 << 30)]


@pytest.mark.parametrize(
    ("profile", "run"),
    [
        ("conv_tf32", "conv_diag"),
        ("conv_fp32_highest", "conv_matmulprecision-highest_diag"),
        ("tiny", "tiny_diag"),
        ("starved", "starved_diag"),
    ],
)
def test_jax_profiles_carry_the_allocators_peak_byte_for_byte(profile, run):
    """JAX's GPU allocator writes the same memory events into its XSpace: the profiler
    window's peak is the run's memory_stats() peak, and the limit its pool."""
    from gpudiag.trace.load import load_file

    (tl,) = load_file(str(H100 / f"{profile}.xplane.pb"))
    mem = h100_runs()[run]["memory"]
    assert tl.counter("mem_peak")[0].values.max() * MIB == pytest.approx(
        mem["peak_bytes_in_use"], abs=1
    )
    assert tl.counter("mem_limit")[0].values.max() * MIB == pytest.approx(mem["bytes_limit"], abs=1)
