"""GPM from the NVML replay to the findings: the H100 readings (sample_traces/h100_keras_jax/
nvml_replay.json.gz) read by gpudiag's own NvmlSession and sampler, written into a trace
beside training steps, read back and diagnosed.

The readings are the real ones of a recorded run's training seconds (offsets from the run's
mark, read off the fixture: where its SMs were busy after compiling); the steps around them
are synthetic, with the device busy as a compute-bound profile shows it, so the counters are
what decides."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gpudiag.analyze import diagnose
from gpudiag.analyze.gpm import gpm_facts
from gpudiag.analyze.rules import low_sm_activity, tensor_cores_idle
from gpudiag.record.nvml import NvmlSession
from gpudiag.record.nvml_replay import ReplayNvml
from gpudiag.record.samplers import SamplerSet, gpu_samples
from gpudiag.record.writer import TraceWriter
from gpudiag.trace.load import load_file
from gpudiag.trace.model.runconfig import RunConfig
from gpudiag.trace.model.timeline import Kind, Metadata, Timeline
from tests.helpers.paths import H100

READ_S = 0.25
STEP_US = 10_000.0

# (run, seconds after its mark where training ran after the compile): read off the fixture
HIGHEST = ("conv_matmulprecision-highest_diag", 9.3, 12.7)  # float32, no TF32: SMs 50-96%
BF16 = ("conv_precision-mixedbfloat16", 11.3, 12.8)  # tensor pipes 10-16%
TINY = ("tiny", 6.2, 7.5)  # a 32-64-1 MLP fed arrays (its fit: the last 1.3 s): SMs 0-1%


def fixture() -> dict:
    with gzip.open(H100 / "nvml_replay.json.gz", "rt") as f:
        return dict(json.load(f))


def recorded(
    tmp_path: Path, window: tuple[str, float, float], precision: str, busy: float = 0.95
) -> str:
    """A trace of steps over ``window`` of the replay, the device busy ``busy`` of each
    step, with the NVML and GPM counters the session read at the replay's pace."""
    data = fixture()
    run, lo, hi = window
    start = dict((name, t) for t, name in data["marks"])[run]
    fake = ReplayNvml(data)
    nv = NvmlSession(lib=fake, pcie=False, processes=False)
    fake.advance(start + lo - READ_S)
    nv.read()  # the first GPM sample: the baseline
    meta = Metadata(producer="gpudiag", device_type="GPU", devices=["GPU 0"], framework="jax")
    meta.config = RunConfig(
        framework="jax", api="keras", training=True, precision=precision, global_batch=128
    )
    path = tmp_path / f"{run}.json"
    tl = Timeline()
    n = int((hi - lo) * 1e6 // STEP_US)
    with TraceWriter(str(path), meta) as w:
        w.detail(True)
        for i in range(n):
            s = i * STEP_US
            w.step(i, s, s + STEP_US, profiled=True)
            tl.add_activity("GPU 0", Kind.COMPUTE, [s], [s + busy * STEP_US])
        w.timeline(tl)
        t = 0.0
        while t <= hi - lo:
            snaps = nv.read()
            for snap in snaps:
                snap.ts_us = t * 1e6  # the replay's time on the steps' clock
                snap.util_samples = [(snap.ts_us, snap.util)]
            for name, source, ts, value in gpu_samples(snaps):
                w.counter(name, source, ts, value)
            fake.advance(READ_S)
            t += READ_S
    nv.close()
    return str(path)


def test_sm_activity_separates_a_busy_gpu_from_an_occupied_one(tmp_path):
    idle = diagnose(load_file(recorded(tmp_path, TINY, "float32")))
    assert idle.verdict == "compute-bound"
    f = idle.finding(low_sm_activity.ID)
    assert f is not None and f.severity == "high"
    assert f.evidence["sm_active_pct"] < 2 and f.evidence["gpm_samples"] >= 4
    sug = next(s for s in idle.suggestions if s.finding == low_sm_activity.ID)
    assert sug.remedy == "bigger-batch" and sug.memory is not None
    assert (
        "offered by low-sm-activity"
        in idle.finding("compute-bound-options").evidence["bigger_batch"]
    )

    busy = diagnose(load_file(recorded(tmp_path, HIGHEST, "float32")))
    assert busy.verdict == "compute-bound"
    assert busy.finding(low_sm_activity.ID) is None
    facts = gpm_facts(load_file(recorded(tmp_path, HIGHEST, "float32"))[0])
    assert facts is not None and facts.median["sm_active"] >= low_sm_activity.SM_ACTIVE_LOW


def test_tensor_pipes_near_zero_under_mixed_precision(tmp_path):
    """The float32 'highest' run's readings (Tensor Cores off) under a bf16 policy: what a
    mixed-precision model whose matmuls miss the Tensor Cores shows."""
    missed = diagnose(load_file(recorded(tmp_path, HIGHEST, "mixed_bfloat16")))
    f = missed.finding(tensor_cores_idle.ID)
    assert f is not None and f.evidence["tensor_active_p90_pct"] < tensor_cores_idle.TENSOR_IDLE
    assert f.evidence["sm_active_pct"] > 50
    assert any(s.remedy == "tensor-core-shapes" for s in missed.suggestions)

    used = diagnose(load_file(recorded(tmp_path, BF16, "mixed_bfloat16")))
    assert used.finding(tensor_cores_idle.ID) is None
    assert (
        gpm_facts(load_file(recorded(tmp_path, BF16, "mixed_bfloat16"))[0]).p90["tensor_active"] > 5
    )
    # float32 runs are full-precision's to advise, not this rule's
    assert (
        diagnose(load_file(recorded(tmp_path, HIGHEST, "float32"))).finding(tensor_cores_idle.ID)
        is None
    )


def test_readings_outside_the_steps_are_left_out(tmp_path):
    """Readings while nothing trains (between the runs) do not count as idle SMs."""
    (tl,) = load_file(recorded(tmp_path, TINY, "float32"))
    n = len(tl.steps)
    cut = tl.steps.select(slice(0, n // 4))  # the steps cover a quarter of the readings
    tl.steps = cut
    facts = gpm_facts(tl)
    total = len(tl.counter("gpm_sm_active")[0].ts)
    assert facts is None or facts.samples <= total // 4 + 1


@pytest.mark.parametrize("gpm", [True, False])
def test_a_gpu_without_gpm_says_so_once(tmp_path, gpm):
    data = fixture()
    if not gpm:
        for r in data["devices"][0]["reads"]:
            r.pop("gpm", None)
    sset = SamplerSet.default(None, gpu=True, host=False, gil=False, nvml_lib=ReplayNvml(data))
    lines = [x for x in sset.limitations() if "SM and tensor-pipe" in x]
    assert len(lines) == (0 if gpm else 1)
    if not gpm:
        assert "Hopper" in lines[0]
    sset.stop_all()
