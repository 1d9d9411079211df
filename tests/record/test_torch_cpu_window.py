"""A CPU-only torch.profiler window: the training thread's ATen ops are the device."""

from __future__ import annotations

import json

import pytest

from gpudiag.analyze import diagnose
from gpudiag.record.backends.torch import CPU_ONLY, add_cpu_ops
from gpudiag.trace.load import load_file


def _window(path, steps: int = 5) -> None:
    """Steps of 10 ms on the training thread (tid 1): 6 ms of ops (a nested pair), and a
    DataLoader op on another thread (tid 2) that is input work, not the step's."""
    events = []
    for n in range(steps):
        t = 1_000_000.0 + n * 10_000
        events += [
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{n}",
                "pid": 7,
                "tid": 1,
                "ts": t,
                "dur": 10_000,
            },
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::linear",
                "pid": 7,
                "tid": 1,
                "ts": t + 1_000,
                "dur": 4_000,
            },
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::addmm",
                "pid": 7,
                "tid": 1,
                "ts": t + 1_500,
                "dur": 3_000,
            },
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::mse_loss",
                "pid": 7,
                "tid": 1,
                "ts": t + 6_000,
                "dur": 2_000,
            },
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::stack",
                "pid": 7,
                "tid": 2,
                "ts": t,
                "dur": 9_000,
            },
        ]
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))


def test_cpu_ops_of_the_step_thread_become_the_cpu_device(tmp_path):
    path = tmp_path / "torch.pt.trace.json"
    _window(path)
    (tl,) = load_file(str(path))
    assert not tl.has_device_activity()
    assert diagnose([tl]).verdict == "inconclusive"  # what the reader alone can say
    add_cpu_ops(tl, str(path))
    assert tl.devices == ["CPU"]
    d = diagnose([tl])
    assert d.verdict == "compute-bound"
    # 6 of each 10 ms step: nested ops merged, the other thread's op left out
    assert d.breakdown["compute"] == pytest.approx(0.6, abs=0.01)
    assert CPU_ONLY in d.limitations
    assert not any(lim.startswith("no GPU events") for lim in d.limitations)


def test_a_window_without_step_markers_adds_nothing(tmp_path):
    path = tmp_path / "torch.pt.trace.json"
    path.write_text(
        json.dumps(
            {
                "traceEvents": [
                    {
                        "ph": "X",
                        "cat": "cpu_op",
                        "name": "aten::add",
                        "pid": 1,
                        "tid": 1,
                        "ts": 0.0,
                        "dur": 5.0,
                    }
                ]
            }
        )
    )
    (tl,) = load_file(str(path))
    add_cpu_ops(tl, str(path))
    assert not tl.has_device_activity()
