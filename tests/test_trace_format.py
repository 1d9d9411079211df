"""gpudiag's own streamed trace: round trip, truncation, Perfetto-compatible JSON."""

from __future__ import annotations

import json

import pytest

from gpudiag.analyze import diagnose
from gpudiag.record.writer import TraceWriter
from gpudiag.trace.errors import TraceError
from gpudiag.trace.load import load_file
from gpudiag.trace.timeline import Metadata, RecordedFinding
from tests.synth import periodic


def _write(path, steps=10):
    """Events in time order, as a recording run writes them: step by step."""
    tl = periodic(steps=steps, input_frac=0.3, compute_frac=0.6)
    one = periodic(steps=1, input_frac=0.3, compute_frac=0.6)
    with TraceWriter(str(path), Metadata(producer="gpudiag", replicas=2, batch_size=64)) as w:
        for i, s, e in zip(tl.steps.index, tl.steps.start, tl.steps.end, strict=True):
            w.step(int(i), float(s), float(e), profiled=True)
            w.timeline(one, shift_us=float(s))
        w.counter("gil_lateness", "host", 100.0, 0.2)
        w.finding(RecordedFinding("no-prefetch", "moderate", "no prefetch", {"ops": 3}))
        w.update_meta(limitations=["no GPU visible"])
    return tl


def test_round_trip_gives_the_same_diagnosis(tmp_path):
    p = tmp_path / "run.gpudiag.json"
    original = _write(p)
    json.loads(p.read_text())  # a complete file is strict JSON (Perfetto, chrome://tracing)
    (tl,) = load_file(str(p))
    assert tl.meta.producer == "gpudiag"
    assert tl.meta.replicas == 2 and tl.meta.batch_size == 64
    assert "no GPU visible" in tl.meta.limitations
    assert [f.id for f in tl.findings] == ["no-prefetch"]
    a, b = diagnose([original]), diagnose([tl])
    assert a.verdict == b.verdict == "data-starved"
    assert a.breakdown == pytest.approx(b.breakdown)
    assert "no-prefetch" in b.finding_ids


def test_truncated_mid_line_reads_up_to_last_complete_event(tmp_path):
    p = tmp_path / "killed.json"
    _write(p, steps=20)
    raw = p.read_bytes()
    cut = raw[: int(len(raw) * 0.6)]
    cut = cut[: cut.rfind(b"\n") + 15]  # stop in the middle of an event line
    p.write_bytes(cut)
    (tl,) = load_file(str(p))
    assert 8 <= len(tl.steps) < 20
    assert any("killed" in lim for lim in tl.meta.limitations)
    assert diagnose([tl]).verdict == "data-starved"


def test_corruption_before_the_end_is_an_error(tmp_path):
    p = tmp_path / "bad.json"
    _write(p)
    lines = p.read_text().split("\n")
    lines[5] = ',{"ph": "X", broken'
    p.write_text("\n".join(lines))
    with pytest.raises(TraceError, match="corrupt gpudiag trace at line 6"):
        load_file(str(p))


def test_flush_makes_events_visible_before_close(tmp_path):
    p = tmp_path / "live.json"
    w = TraceWriter(str(p), Metadata(producer="gpudiag"), flush_every=0.0)
    w.step(0, 0.0, 100.0)
    (tl,) = load_file(str(p))  # still open: no closing bracket yet
    assert len(tl.steps) == 1
    w.close()
    w.close()  # idempotent
