"""Times within a format's bounds that are impossible for their trace: a kernel lasting a
day in a 200 ms profile is dropped and named; kernels overlapping on one stream are named
and lower the verdict's confidence. Real profiles (small overlaps of Hopper's programmatic
dependent launch included) are left as they are."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gpudiag.analyze.verdict import DOUBTFUL_DEVICE_TIMES
from gpudiag.trace.load import load_file
from gpudiag.trace.model.stream_overlap import StreamOverlap
from gpudiag.trace.model.timeline import Kind
from tests.helpers.paths import REPO, SAMPLES
from tests.helpers.xspace_build import MS, training_profile, write

DAY_PS = 86_400 * 10**12


def analyze(path: str | Path) -> dict[str, Any]:
    r = subprocess.run(
        [sys.executable, "-m", "gpudiag", "analyze", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_a_kernel_of_a_day_in_a_200_ms_profile_is_dropped_and_named(tmp_path):
    """Was: compute-bound 0.95, no caveat (one day less a picosecond is within the XSpace
    bound of a day). 20 steps of 10 ms, kernels of 3 ms: 30% compute."""
    space, gpu, stream = training_profile(steps=20, kernel_ps=3 * MS)
    gpu.event(stream, "volta_sgemm_128x64_nn", MS // 2, DAY_PS - 1)
    d = analyze(write(space, tmp_path / "day.xplane.pb"))
    said = [x for x in d["limitations"] if "impossible time" in x]
    assert said and said[0].startswith("1 device event or input wait lasting up to 24.0 h")
    assert d["breakdown"]["compute"] == pytest.approx(3 / 9, abs=0.02)
    assert d["verdict"] != "compute-bound"


def test_a_long_kernel_in_a_long_profile_is_kept(tmp_path):
    """Two minutes of one kernel in a profile whose events start over twenty minutes: long,
    not impossible."""
    space, gpu, stream = training_profile(steps=4, kernel_ps=3 * MS, step_ps=300_000 * MS)
    gpu.event(stream, "volta_sgemm_128x64_nn", 10 * MS, 120_000 * MS)
    (tl,) = load_file(write(space, tmp_path / "long.xplane.pb"))
    assert not any("impossible time" in x for x in tl.meta.limitations)
    assert 120_010_000.0 in tl.device_activity("GPU 0", Kind.COMPUTE).ends  # µs: kept


def _kineto_overlapping(path: Path, overlap: float) -> Path:
    """Six steps of 10 ms, each with ten kernels on stream 7 starting 0.5 ms apart and
    each lasting ``overlap`` x 0.5 ms (1.0: back to back)."""
    events: list[dict[str, Any]] = []
    for s in range(6):
        t = s * 10_000.0
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}",
                       "pid": 1, "tid": 1, "ts": t, "dur": 9_000.0})  # fmt: skip
        for k in range(10):
            events.append({"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn",
                           "pid": 0, "tid": 7, "ts": t + 1_000.0 + 500.0 * k,
                           "dur": 500.0 * overlap})  # fmt: skip
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def test_kernels_overlapping_on_one_stream_lower_the_confidence(tmp_path):
    """Was: compute-bound 0.95 with no caveat. Each kernel lasting 8 slots of the stream:
    the stream's kernels add up to about 5x its busy time."""
    clean = analyze(_kineto_overlapping(tmp_path / "clean.json", 1.0))
    bad = analyze(_kineto_overlapping(tmp_path / "overlap.json", 8.0))
    assert not any("overlap each other" in x for x in clean["limitations"])
    said = [x for x in bad["limitations"] if "overlap each other" in x]
    assert said and "on 1 GPU stream" in said[0]
    assert "device times doubtful" in bad["reason"]
    assert bad["confidence"] <= 0.95 * DOUBTFUL_DEVICE_TIMES + 1e-9


@pytest.mark.parametrize("overlap", [1.0, 1.1, 1.3])
def test_small_overlaps_of_a_real_stream_say_nothing(overlap):
    """Programmatic dependent launch (Hopper) starts a kernel under the previous one's tail:
    the H100 samples add up to 1.13x their stream's busy time."""
    o = StreamOverlap()
    for k in range(1000):
        o.add("s", 100.0 * k, 100.0 * k + 100.0 * overlap)
    assert o.doubtful() == []


def test_kernels_out_of_order_are_not_taken_for_overlaps():
    o = StreamOverlap()
    for k in reversed(range(1000)):  # written last first: each starts before the previous
        o.add("s", 100.0 * k, 100.0 * k + 90.0)
    assert o.doubtful() == []


@pytest.mark.parametrize(
    "sample",
    [
        "h100_keras_jax/starved.xplane.pb",  # overlaps of 1.13x
        "h100_keras_jax/conv_bf16.xplane.pb",
        "resnet50_dataloader_workers0.pt.trace.json.gz",
        "a100_overlapped_comm.json.gz",
    ],
)
def test_the_sample_profiles_hold_no_impossible_time(sample):
    for tl in load_file(str(SAMPLES / sample)):
        assert not any("impossible time" in x for x in tl.meta.limitations)
        assert not any("overlap each other" in x for x in tl.meta.limitations)
