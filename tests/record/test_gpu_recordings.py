"""What a real H100 recorded (sample_traces/h100_keras_jax/, benchmarks/gpu_truth.py): the
NVML and GPM readings replayed through gpudiag's own session, the sampler against
nvidia-smi at the same moments, and the recorded traces read back."""

from __future__ import annotations

import gzip
import json
import statistics

import pytest

from gpudiag.analyze import diagnose
from gpudiag.record.nvml import NvmlSession
from gpudiag.record.nvml_replay import ReplayNvml
from gpudiag.trace.load import load_file
from tests.helpers.paths import H100


def fixture() -> dict:
    with gzip.open(H100 / "nvml_replay.json.gz", "rt") as f:
        return dict(json.load(f))


def gpm_during(run: str) -> list[dict[str, float]]:
    """GPM readings NvmlSession takes over the replayed span of one recorded run."""
    data = fixture()
    marks = data["marks"]
    names = [m[1] for m in marks]
    i = names.index(run)
    start, end = marks[i][0], marks[i + 1][0] if i + 1 < len(marks) else data["duration_s"]
    fake = ReplayNvml(data)
    nv = NvmlSession(lib=fake, pcie=False, processes=False)
    fake.advance(start)
    nv.read()  # the baseline sample
    out = []
    t = start
    while t + 0.25 < end:
        fake.advance(0.25)
        t += 0.25
        out.extend(s.gpm for s in nv.read() if s.gpm)
    return out


def peak(readings: list[dict[str, float]], key: str) -> float:
    return max(r.get(key, 0.0) for r in readings)


def test_gpm_flows_from_replay_with_every_metric():
    readings = gpm_during("conv")
    assert readings
    assert set(readings[0]) == {
        "sm_active",
        "sm_occupancy",
        "tensor_active",
        "dram_bw",
        "fp32_active",
        "fp16_active",
    }


def test_tensor_pipes_follow_the_precision_in_use():
    """TF32 (XLA's default for float32 matmuls on Hopper) and bfloat16 run on the Tensor
    Cores; JAX's "highest" precision keeps float32 off them, on the FP32 pipes."""
    tf32, bf16, fp32 = (
        gpm_during(r)
        for r in ("conv", "conv_precision-mixedbfloat16", "conv_matmulprecision-highest_diag")
    )
    assert peak(tf32, "tensor_active") > 10
    assert peak(bf16, "tensor_active") > 10
    assert peak(fp32, "tensor_active") < 1
    assert peak(fp32, "fp32_active") > 10
    assert peak(fp32, "sm_active") > 80  # the slow float32 run keeps the SMs busy


def test_an_idle_or_starved_gpu_shows_idle_sms():
    assert peak(gpm_during("starved"), "sm_active") < 10
    assert peak(gpm_during("tiny"), "tensor_active") < 1


def test_gpu_without_gpm_says_so_once():
    data = fixture()
    for r in data["devices"][0]["reads"]:
        r.pop("gpm", None)
    nv = NvmlSession(lib=ReplayNvml(data))
    assert nv.available
    assert nv.gpm_reason and "Hopper" in nv.gpm_reason
    assert nv.read()[0].gpm == {}


def test_sampler_readings_match_nvidia_smi_at_the_same_moment():
    with gzip.open(H100 / "smi_pairs.json.gz", "rt") as f:
        pairs = json.load(f)
    assert len(pairs) > 100
    clock = [float(p["smi"]["clocks.sm"]) - p["gpudiag"]["clock_sm_mhz"] for p in pairs]
    power = [float(p["smi"]["power.draw"]) - p["gpudiag"]["power_mw"] / 1000 for p in pairs]
    temp = [float(p["smi"]["temperature.gpu"]) - p["gpudiag"]["temperature_c"] for p in pairs]
    mem = [float(p["smi"]["memory.used"]) - p["gpudiag"]["mem_used_mib"] for p in pairs]
    assert max(abs(d) for d in clock) == 0
    assert abs(statistics.median(power)) < 1.0
    assert max(abs(d) for d in temp) <= 1
    # recorded with NVML's v1 memory query: the driver's reserve (480 MiB) counted as used,
    # a constant offset; the session now reads v2, as nvidia-smi does
    assert max(mem) - min(mem) < 5 and abs(statistics.median(mem) + 480) < 5


def test_memory_reads_as_nvidia_smi_shows_it():
    """v2 leaves the reserve out: an idle recorded H100 reads 0 MiB, as nvidia-smi said."""
    data = fixture()
    fake = ReplayNvml(data)
    fake.advance(30.7)  # between two runs: no process holds the GPU
    snap = NvmlSession(lib=fake).read()[0]
    assert snap.mem_used_mib == 0
    v1 = NvmlSession(lib=ReplayNvml(data, not_supported=()))
    v1._memory_v1 = True
    assert v1.read()[0].mem_used_mib == 480


@pytest.mark.parametrize(
    "name",
    sorted(p.name for p in H100.iterdir() if p.name.endswith((".gpudiag.json.gz", ".xplane.pb"))),
)
def test_recordings_are_read(name):
    d = diagnose(load_file(str(H100 / name)))
    assert d.verdict in {"data-starved", "compute-bound", "sync-bound", "inconclusive"}
    assert d.steps.get("count", 0) > 0


def test_gpm_counters_are_in_the_callbacks_trace():
    (tl,) = load_file(str(H100 / "conv_bf16.gpudiag.json.gz"))
    names = {c.name for c in tl.counters}
    assert {"gpm_sm_active", "gpm_tensor_active", "gpu_util", "gpu_power"} <= names


def test_memory_read_with_the_v2_query_matches_nvidia_smi():
    """The second H100 recording, with the session reading NVML's v2 memory query."""
    with gzip.open(H100 / "r2_smi_pairs.json.gz", "rt") as f:
        pairs = json.load(f)
    diffs = [float(p["smi"]["memory.used"]) - p["gpudiag"]["mem_used_mib"] for p in pairs]
    # within a few MiB (the two reads are a few ms apart), where v1 read 480 MiB more
    assert len(diffs) > 150 and max(abs(d) for d in diffs) < 5.0


def test_the_window_no_longer_blocks_the_device_on_a_gpu():
    """Profiled without a block per step, the conv net's steps run back to back on the
    device: its first window reads compute, not the 38% input wait the blocking window
    made of Keras's slicing (sample_traces/h100_keras_jax/README.md)."""
    before = diagnose(load_file(str(H100 / "conv_tf32.xplane.pb")))
    after = diagnose(load_file(str(H100 / "r2_conv_tf32.xplane.pb")))
    assert before.breakdown["input"] > 0.3
    assert after.breakdown["input"] < before.breakdown["input"] / 2
    assert after.breakdown["compute"] > before.breakdown["compute"]
    assert after.suggestions[0].title == "Use mixed precision (bfloat16)"


def test_callback_trace_of_a_conv_net_on_the_gpu():
    """The callback's own trace of the conv net (120-step epochs, float32 on an H100):
    compute-bound, mixed precision first (2.05x measured in its round), and each batch
    remedy checked against the allocator's recorded peak."""
    d = diagnose(load_file(str(H100 / "r3_conv_long.gpudiag.json.gz")))
    assert d.verdict == "compute-bound"
    assert d.suggestions[0].title == "Use mixed precision (bfloat16)"
    batch = [s for s in d.suggestions if s.remedy == "bigger-batch"]
    assert batch and all(s.memory and s.memory["fits"] for s in batch)
    assert d.workload["gpu_model"] == "H100 SXM" and d.workload["compute_capability"] == 9.0


def test_the_worker_remedy_counts_the_pool_keras_starts_every_epoch():
    """Measured in the same round as this trace: 4 worker processes gave 1.40x samples/s
    over 150-batch epochs (the step model alone had promised 13.6x for 16)."""
    d = diagnose(load_file(str(H100 / "r4_starved_long.gpudiag.json.gz")))
    (sug,) = [s for s in d.suggestions if s.remedy == "worker-processes"]
    assert sug.title == "Run the Python input in 4 worker processes"
    low, high = sug.expected_gain_range
    assert low <= 1.40 <= high
    assert "pool Keras starts again every epoch" in sug.basis
