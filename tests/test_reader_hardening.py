"""What a fuzzer found in the JSON readers (hardening round 3): a quadratic head scan,
impossible times taken at face value, long names scanned whole. Each input is generated
small; each test failed before its fix."""

from __future__ import annotations

import json
import time
from pathlib import Path

from gpudiag.trace.event_lines import line_events


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
