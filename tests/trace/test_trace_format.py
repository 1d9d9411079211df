"""gpudiag's own streamed trace: round trip, truncation, Perfetto-compatible JSON."""

from __future__ import annotations

import json

import pytest

from gpudiag.analyze import diagnose
from gpudiag.record.writer import TraceWriter
from gpudiag.trace.errors import TraceError
from gpudiag.trace.load import load_file
from gpudiag.trace.model.timeline import Metadata, RecordedLint
from tests.helpers.synth import periodic


def _write(path, steps=10):
    """Events in time order, as a recording run writes them: step by step."""
    tl = periodic(steps=steps, input_frac=0.3, compute_frac=0.6)
    one = periodic(steps=1, input_frac=0.3, compute_frac=0.6)
    with TraceWriter(str(path), Metadata(producer="gpudiag", replicas=2, batch_size=64)) as w:
        for i, s, e in zip(tl.steps.index, tl.steps.start, tl.steps.end, strict=True):
            w.step(int(i), float(s), float(e), profiled=True)
            w.timeline(one, shift_us=float(s))
        w.counter("gil_lateness", "host", 100.0, 0.2)
        w.finding(RecordedLint("no-prefetch", "moderate", "no prefetch", {"ops": 3}))
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


def _read_both(path, monkeypatch):
    """The file read with chunks decoded whole (the fast path), then line by line."""
    from gpudiag.trace.native import reader as native_reader

    (fast,) = load_file(str(path))
    with monkeypatch.context() as m:
        m.setattr(native_reader, "_decode_lines", lambda lines: None)
        (slow,) = load_file(str(path))
    return fast, slow


def _same(a, b):
    assert a.meta.limitations == b.meta.limitations
    assert a.steps.index.tolist() == b.steps.index.tolist()
    assert a.steps.start.tolist() == b.steps.start.tolist()
    assert sorted(a.activity) == sorted(b.activity)
    for key, iv in a.activity.items():
        assert iv.starts.tolist() == b.activity[key].starts.tolist()
    assert a.input_wait.starts.tolist() == b.input_wait.starts.tolist()


def test_chunks_decoded_whole_read_as_line_by_line(tmp_path, monkeypatch):
    """Several MB: the chunks after the first are decoded whole; blank lines, an event with
    impossible times and a truncated last line give what line-by-line reading gives."""
    p = tmp_path / "big.json"
    _write(p, steps=10_000)
    lines = p.read_bytes().split(b"\n")
    assert len(p.read_bytes()) > 3 << 20, "the file must span several chunks"
    fast, slow = _read_both(p, monkeypatch)
    _same(fast, slow)
    assert len(fast.steps) == 10_000
    middle = len(lines) // 2
    lines[middle:middle] = [b"", b"   ", b',{"ph": "X", "cat": "input", "ts": 5.0, "dur": -1.0}']
    cut = b"\n".join(lines)
    p.write_bytes(cut[: cut.rfind(b"\n", 0, len(cut) - 5000) + 20])  # cut mid-line
    fast, slow = _read_both(p, monkeypatch)
    _same(fast, slow)
    assert any("impossible times" in lim for lim in fast.meta.limitations)
    assert any("killed" in lim for lim in fast.meta.limitations)


def test_corruption_deep_in_a_big_stream_names_its_line(tmp_path, monkeypatch):
    from gpudiag.trace.native import reader as native_reader

    p = tmp_path / "bad.json"
    _write(p, steps=10_000)
    lines = p.read_text().split("\n")
    at = int(len(lines) * 0.7)
    lines[at] = ',{"ph": "X", "cat": "step", "ts": 1.0, "dur": 2.0}, {"ph": "X"}'  # two events
    p.write_text("\n".join(lines))
    with pytest.raises(TraceError, match=f"corrupt gpudiag trace at line {at + 1}$"):
        load_file(str(p))
    monkeypatch.setattr(native_reader, "_decode_lines", lambda lines: None)
    with pytest.raises(TraceError, match=f"corrupt gpudiag trace at line {at + 1}$"):
        load_file(str(p))
