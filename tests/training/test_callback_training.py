"""DiagnoseCallback on real Keras training runs (CPU) with injected bottlenecks.

Each scenario runs in its own process (tests/helpers/scenarios.py) under a timeout.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpudiag.trace.load import load_file
from tests.helpers.reread import same_from_file
from tests.helpers.script_io import run_script, start_script

pytestmark = [pytest.mark.train, pytest.mark.timeout(240)]
pytest.importorskip("tensorflow")


def run_scenario(name: str, trace: Path) -> tuple[dict, str]:
    result, proc = run_script("scenarios", name, trace, timeout=200, what=f"scenario {name}")
    return result, proc.stderr


def ids(result: dict) -> list[str]:
    return [f["id"] for f in result["diagnosis"]["findings"]]


def test_gil_holding_generator_is_data_starved_with_gil_pressure(tmp_path):
    result, _ = run_scenario("gil_generator", tmp_path / "gil.json")
    d = result["diagnosis"]
    assert d["verdict"] == "data-starved"
    assert "gil-pressure" in ids(result)
    assert "python-generator" in ids(result)
    gil = next(f for f in d["findings"] if f["id"] == "gil-pressure")
    # GIL contention, not CPU contention: the out-of-process reference stays on time
    assert gil["evidence"]["gil_lateness_p95_ms"] >= 3 * (
        gil["evidence"]["reference_lateness_p95_ms"] or 0.1
    )
    # GIL-held Python needs processes: threads (a parallel map) cannot run it in parallel
    titles = [s["title"] for s in d["suggestions"]]
    # first, unless other processes hold the CPU: then freeing it comes first, and the gain
    # promised for workers is what the neighbour leaves
    mine = [t for t in titles if t != "Free the CPU from other processes"]
    assert mine and "worker processes" in mine[0]
    assert ("cpu-contention" in ids(result)) == (mine != titles)
    assert not any("Parallelise" in t for t in titles)
    same_from_file(result)


def test_slow_sequential_map_is_data_starved(tmp_path):
    result, _ = run_scenario("sequential_map", tmp_path / "map.json")
    d = result["diagnosis"]
    assert d["verdict"] == "data-starved"
    assert d["breakdown"]["input"] >= 0.5
    assert "sequential-map" in ids(result)
    sources = {f["id"]: f["source"] for f in d["findings"]}
    assert sources["sequential-map"] == "trace"  # seen in the profile, not only linted
    assert any("num_parallel_calls" in s["detail"] for s in d["suggestions"])
    same_from_file(result)


def test_options_already_on_are_never_suggested(tmp_path):
    result, _ = run_scenario("already_on", tmp_path / "on.json")
    d = result["diagnosis"]
    titles = " ".join(s["title"] for s in d["suggestions"])
    assert "Parallelise" not in titles and "Prefetch" not in titles and "XLA" not in titles
    assert not {"sequential-map", "no-prefetch", "xla-off"} & set(ids(result))
    # the callback recorded what the run does: compile options and the tf.data graph
    (tl,) = load_file(result["trace_path"])
    cfg = tl.meta.config
    assert cfg.jit_compile is True and cfg.steps_per_execution == 1
    assert cfg.parallel_maps == 1 and cfg.sequential_maps == 0 and cfg.prefetch is True
    assert cfg.input_kind == "tf.data" and cfg.precision == "float32" and cfg.cores
    same_from_file(result)


def test_cached_prefetched_conv_is_compute_bound(tmp_path):
    result, _ = run_scenario("cached_conv", tmp_path / "conv.json")
    d = result["diagnosis"]
    assert d["verdict"] == "compute-bound"
    assert d["breakdown"]["compute"] >= 0.6
    assert d["breakdown"]["input"] < 0.05
    assert not {"input-wait", "sequential-map", "python-generator"} & set(ids(result))
    assert "gpu-idle-gaps" not in ids(result)  # a CPU-only run has no GPU to idle
    titles = " ".join(s["title"] for s in d["suggestions"])
    assert "XLA" not in titles and "worker" not in titles and "Parallelise" not in titles
    assert any("NVIDIA" in lim or "GPU" in lim for lim in d["limitations"])


def test_mirrored_4_replicas_tiny_batch_is_sync_bound_against_1_replica(tmp_path):
    four, _ = run_scenario("mirrored4", tmp_path / "m4.json")
    one, _ = run_scenario("mirrored1", tmp_path / "m1.json")
    d4, d1 = four["diagnosis"], one["diagnosis"]
    assert d4["verdict"] == "sync-bound"
    assert "exposed-collectives" in ids(four)
    assert "small-model-multi-gpu" in ids(four)
    assert len(d4["devices"]) == 4  # one row per replica
    # Keras 3 fails with steps_per_execution > 1 under MirroredStrategy (keras#19246)
    assert d4["config"]["strategy"] == "mirrored"  # one replica: the default strategy
    assert not any("steps_per_execution" in s["detail"] for s in d4["suggestions"])
    # the same model on one replica has nothing to synchronise...
    assert d1["verdict"] != "sync-bound"
    assert d1["breakdown"]["sync"] == 0
    # ...and processes samples faster: the replicas' extra time is the synchronisation
    per_sample_4 = d4["steps"]["median_ms"] / four["samples_per_step"]
    per_sample_1 = d1["steps"]["median_ms"] / one["samples_per_step"]
    assert per_sample_4 > per_sample_1
    same_from_file(four)


def test_ragged_batch_on_two_replicas_with_batchnorm(tmp_path):
    result, stderr = run_scenario("ragged_bn", tmp_path / "ragged.json")
    assert {"batch-not-multiple-of-replicas", "partial-last-batch"} <= set(result["lint_ids"])
    # both were printed before TensorFlow got a chance to fail
    assert "batch-not-multiple-of-replicas" in stderr
    assert "partial-last-batch" in stderr and "for 2 replicas" in stderr
    assert "drop_remainder=True" in stderr


def test_exception_inside_fit_stops_every_thread_and_leaves_a_trace(tmp_path):
    result, _ = run_scenario("crash", tmp_path / "crash.json")
    assert result["raised"] is True
    assert result["threads_left"] == []
    assert result["reference_alive"] is False
    d = result["diagnosis"]
    assert d is not None
    assert any("stopped early" in lim for lim in d["limitations"])
    assert d["steps"]["count"] >= 8
    # its findings stand, but no gain is modelled from the steps before the crash
    assert d["workload"]["stopped_early"] is True
    assert all(s["expected_gain"] == 1.0 for s in d["suggestions"])


def test_run_killed_with_sigkill_leaves_an_analyzable_trace(tmp_path):
    trace = tmp_path / "killed.json"
    proc = start_script("scenarios", "long_run", trace)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "started"
        deadline = time.time() + 60
        # wait until the profiler window has been decoded into the trace
        while time.time() < deadline:
            if trace.exists() and '"device.compute"' in trace.read_text():
                break
            time.sleep(0.5)
        time.sleep(2.5)  # at least one flush period of counters and steps
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    r = subprocess.run(
        [sys.executable, "-m", "gpudiag", "analyze", str(trace), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["steps"]["count"] > 10
    assert d["steps"]["analyzed"] == 3  # the profiled window made it to disk
    assert d["breakdown"]["compute"] > 0
    assert sum(d["breakdown"].values()) == pytest.approx(1.0, abs=1e-3)
