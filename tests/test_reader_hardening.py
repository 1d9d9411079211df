"""What a fuzzer found in the JSON readers (hardening round 3): a quadratic head scan,
impossible times taken at face value, long names scanned whole. Each input is generated
small; each test failed before its fix."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpudiag.record.writer import TraceWriter
from gpudiag.trace.event_lines import line_events
from gpudiag.trace.timeline import Metadata


def _kineto(events: list[dict]) -> bytes:
    return json.dumps({"schemaVersion": 1, "traceEvents": events}).encode()


def _kernels(n: int, **extra: float) -> list[dict]:
    return [
        {
            "ph": "X",
            "cat": "kernel",
            "name": "volta_sgemm_128x64_nn",
            "pid": 0,
            "tid": 7,
            "ts": 1000.0 * i,
            "dur": 600.0,
            "args": {"device": 0},
            **extra,
        }
        for i in range(n)
    ]


def test_blank_lines_before_the_document_are_read_in_linear_time(tmp_path: Path) -> None:
    # the head used to be re-joined and re-stripped per line: 200k lines took ~13 s
    p = tmp_path / "blank_head.json"
    p.write_bytes(b"\n" * 200_000 + b'{"traceEvents":[\n' + b'{"ph":"M"},\n{"ph":"X"}\n]}\n')
    t0 = time.perf_counter()
    events = list(line_events(str(p)))
    assert time.perf_counter() - t0 < 2.0
    assert events == [{"ph": "M"}, {"ph": "X"}]


# ---- impossible times: dropped, counted, never a confident 1e305 ms step ----------------


def _analyze(path: Path) -> dict:
    """``gpudiag analyze --json`` as a user runs it, numpy warnings made errors."""
    r = subprocess.run(
        [sys.executable, "-W", "error", "-m", "gpudiag", "analyze", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return json.loads(r.stdout)


def _steps(n: int, pid: int = 1) -> list[dict]:
    return [
        {"ph": "X", "cat": "cpu_op", "name": f"ProfilerStep#{i}", "pid": pid, "tid": 1,
         "ts": 10_000.0 * i, "dur": 9_000.0}
        for i in range(n)
    ]  # fmt: skip


IMPOSSIBLE = [{"dur": 1e308}, {"ts": 1e308}, {"dur": -1.0}, {"ts": -1e300}, {"dur": 40 * 86_400e6}]


def _said_dropped(d: dict, n: int) -> bool:
    said = (f"{n} event{'s' if n > 1 else ''} with impossible times dropped",)
    return any(line.startswith(said) for line in d["limitations"])


def test_kineto_events_with_impossible_times_are_dropped_and_counted(tmp_path: Path) -> None:
    bad = [{**_kernels(1)[0], **b} for b in IMPOSSIBLE]
    p = tmp_path / "k.json"
    p.write_bytes(_kineto(_kernels(30) + _steps(3) + bad))
    d = _analyze(p)
    assert d["steps"]["median_ms"] == pytest.approx(9.0)
    assert _said_dropped(d, len(IMPOSSIBLE))


def test_a_huge_kernel_is_dropped_in_a_trace_read_by_ijson(tmp_path: Path) -> None:
    # not one event per line: the general (ijson) path drops it the same way
    p = tmp_path / "k.json"
    events = _kernels(30) + _steps(3) + [{**_kernels(1)[0], "dur": 1e308}]
    p.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=1))
    d = _analyze(p)
    assert d["steps"]["median_ms"] == pytest.approx(9.0) and _said_dropped(d, 1)


def test_tf_trace_viewer_steps_with_impossible_times_are_dropped(tmp_path: Path) -> None:
    meta = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "M", "pid": 1, "tid": 2, "name": "thread_name", "args": {"name": "python"}},
    ]
    steps = [
        {"ph": "X", "pid": 1, "tid": 2, "name": f"train {i}", "ts": 10_000.0 * i,
         "dur": 9_000.0, "args": {"step_num": str(i)}}
        for i in range(4)
    ]  # fmt: skip
    bad = [{**steps[0], "name": "train 9", **b} for b in IMPOSSIBLE]
    p = tmp_path / "tf.trace.json"
    p.write_text(json.dumps({"displayTimeUnit": "ns", "traceEvents": meta + steps + bad}))
    d = _analyze(p)
    assert d["steps"]["median_ms"] == pytest.approx(9.0)
    assert _said_dropped(d, len(IMPOSSIBLE))


def test_gpudiag_stream_events_with_impossible_times_are_dropped(tmp_path: Path) -> None:
    p = tmp_path / "run.gpudiag.json"
    w = TraceWriter(str(p), Metadata(producer="gpudiag"), flush_every=0.0)
    for i in range(5):
        w.step(i, i * 10_000.0, i * 10_000.0 + 9_000.0)
    w.close()
    lines = p.read_text().rstrip().removesuffix("]").rstrip("\n").split("\n")
    for b in IMPOSSIBLE:
        ev = {"ph": "X", "cat": "step", "name": "step 9", "pid": 1, "tid": 1,
              "ts": 60_000.0, "dur": 9_000.0, "args": {"step": 9}, **b}  # fmt: skip
        lines.append("," + json.dumps(ev))
    p.write_text("\n".join([*lines, "]"]) + "\n")
    d = _analyze(p)
    assert d["steps"]["median_ms"] == pytest.approx(9.0)
    assert _said_dropped(d, len(IMPOSSIBLE))
