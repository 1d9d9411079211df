"""gpudiag live --follow: tailing a trace while it is written, and the training panel."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import time

import pytest
from rich.console import Console

from gpudiag.record.writer import TraceWriter
from gpudiag.show.follow import TraceFollower
from gpudiag.show.live import LiveState, render
from gpudiag.trace.model.timeline import Kind, Metadata
from gpudiag.trace.native.follow import NotGpudiagTrace, TraceTail
from tests.helpers.script_io import start_script
from tests.helpers.synth import periodic


def _frame(status, follow="trace.json", width=120) -> str:
    state = LiveState()
    state.follow = follow
    state.gpu_reason = "No NVIDIA GPU visible: test"
    state.training = status
    console = Console(record=True, width=width, force_terminal=False)
    console.print(render(state, width, None))
    return console.export_text()


def test_tail_reads_increments_and_waits_for_partial_lines(tmp_path):
    path = tmp_path / "t.json"
    w = TraceWriter(str(path), Metadata(producer="gpudiag"), flush_every=0.0)
    tail = TraceTail(str(path), window_s=1000)
    assert tail.poll() is True and tail.header is not None
    w.step(0, 0.0, 100.0)
    assert tail.poll() is True
    assert len(tail.timeline().steps) == 1
    # from here on, append by hand (the writer's own file position would overwrite)
    with open(path, "a") as f:  # half an event: must wait for the rest
        f.write(',{"ph":"X","cat":"step","name":"step 1","pid":1,"tid":1,"ts":200.0,')
    assert tail.poll() is False
    with open(path, "a") as f:
        f.write('"dur":100.0,"args":{"step":1,"profiled":false}}\n')
    assert tail.poll() is True
    assert tail.timeline().steps.index.tolist() == [0, 1]
    assert tail.bad_lines == 0
    with open(path, "a") as f:
        f.write("]\n")  # what TraceWriter.close() writes
    tail.poll()
    assert tail.closed


def test_tail_keeps_a_bounded_window_but_the_profile(tmp_path):
    path = tmp_path / "t.json"
    one = periodic(steps=1, input_frac=0.4, compute_frac=0.5)
    with TraceWriter(str(path), Metadata(producer="gpudiag")) as w:
        for i in range(5):  # profiled steps early in the run
            w.step(i, i * 1000.0, i * 1000.0 + 1000.0, profiled=True)
            w.timeline(one, shift_us=i * 1000.0)
        for i in range(5, 5000):  # then a long run of plain steps, 1 ms apart
            w.step(i, i * 1000.0, i * 1000.0 + 1000.0)
    tail = TraceTail(str(path), window_s=1.0)
    tail.poll()
    tl = tail.timeline()
    assert len(tl.steps) < 1100  # about one second of steps + the 5 profiled ones
    assert tl.steps.profiled.sum() == 5
    assert tl.has_device_activity()


def test_follow_rejects_a_file_that_is_not_a_gpudiag_trace(tmp_path):
    p = tmp_path / "other.json"
    p.write_text('{"traceEvents": []}\n')
    with pytest.raises(NotGpudiagTrace):
        TraceTail(str(p)).poll()
    r = subprocess.run(
        [sys.executable, "-m", "gpudiag", "live", "--once", "--follow", str(p)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert "not a gpudiag trace" in r.stderr and "Traceback" not in r.stderr


def test_follower_waits_for_a_trace_that_does_not_exist_yet(tmp_path):
    status = TraceFollower(str(tmp_path / "later.json")).poll()
    assert "waiting for" in status.note
    assert "waiting for" in _frame(status)


@pytest.mark.train
@pytest.mark.timeout(240)
def test_follow_a_real_keras_fit_and_see_the_panel_update(tmp_path):
    pytest.importorskip("tensorflow")
    trace = tmp_path / "live.json"
    proc = start_script("scenarios", "follow_run", trace)
    follower = TraceFollower(str(trace))
    statuses = []
    try:
        deadline = time.time() + 150
        while time.time() < deadline:
            statuses.append(follower.poll())
            if follower.tail.closed:
                break
            time.sleep(0.5)
    finally:
        proc.wait(timeout=60) if follower.tail.closed else proc.kill()
    running = [
        s for s in statuses if s.steps_per_s is not None and not s.note.startswith("run ended")
    ]
    assert running, [s.note for s in statuses]
    assert any(s.verdict == "inconclusive" and "not reached" in s.note for s in statuses)
    final = statuses[-1]
    assert final.verdict == "data-starved"
    assert final.input_share is not None and final.input_share > 0.3
    assert final.note.startswith("run ended")
    text = _frame(running[-1])
    assert "Training" in text and "steps/s" in text
    text = _frame(final)
    assert "data-starved" in text and "input wait" in text
    # live and offline agree: the same trace through gpudiag analyze
    r = subprocess.run(
        [sys.executable, "-m", "gpudiag", "analyze", str(trace), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert '"verdict": "data-starved"' in r.stdout


def test_live_once_with_follow_prints_the_training_panel(tmp_path):
    path = tmp_path / "done.json"
    one = periodic(steps=1, input_frac=0.4, compute_frac=0.5)
    with TraceWriter(str(path), Metadata(producer="gpudiag")) as w:
        for i in range(6):
            w.step(i, i * 1000.0, i * 1000.0 + 1000.0, profiled=True)
            w.timeline(one, shift_us=i * 1000.0)
    r = subprocess.run(
        [sys.executable, "-m", "gpudiag", "live", "--once", "--follow", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert r.returncode == 0, r.stderr
    assert "Training" in r.stdout and "data-starved" in r.stdout
    assert "No NVIDIA GPU visible" in r.stdout


def _lines(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    """The process's stdout, line by line, readable with a timeout."""
    out: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return out


def _wait_for(lines: queue.Queue[str], predicate, seconds: float = 30.0) -> str:
    deadline = time.monotonic() + seconds
    seen = []
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        seen.append(line)
        if predicate(line):
            return line
    raise AssertionError(f"no such line in {seen[-5:]}")


def test_piped_follow_waits_for_the_first_match_and_says_when_the_run_ended(tmp_path):
    """Was: a pattern matching nothing yet (started before training) exited 2; once the run
    had ended, the piped lines went on with "training 27.7 steps/s" as if it still ran."""
    pattern = str(tmp_path / "gpudiag-trace-*.json")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpudiag", "live", "--interval", "0.2", "--follow", pattern],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = _lines(proc)
        first = _wait_for(lines, lambda ln: "training" in ln)
        assert "training: waiting for" in first and "gpudiag-trace-*.json" in first
        one = periodic(steps=1, input_frac=0.4, compute_frac=0.5)
        w = TraceWriter(str(tmp_path / "gpudiag-trace-0001.json"), Metadata(), flush_every=0.0)
        for i in range(6):
            w.step(i, i * 1000.0, i * 1000.0 + 1000.0, profiled=True)
            w.timeline(one, shift_us=i * 1000.0)
        running = _wait_for(lines, lambda ln: "steps/s" in ln)
        assert "ended" not in running and "data-starved" in running
        w.close()
        ended = _wait_for(lines, lambda ln: "ended" in ln)
        assert re.search(r"training ended; last [\d.]+ steps/s, step [\d.]+ ms", ended), ended
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err


def test_follower_sees_the_end_when_only_the_closing_bracket_is_new(tmp_path):
    """Was: events read before the writer closed, then "]" alone: the cached "running"
    status was shown for ever."""
    path = tmp_path / "t.json"
    w = TraceWriter(str(path), Metadata(producer="gpudiag"), flush_every=0.0)
    for i in range(4):
        w.step(i, i * 1000.0, i * 1000.0 + 1000.0)
    follower = TraceFollower(str(path))
    running = follower.poll()
    assert running.steps_per_s is not None and not running.ended
    w.close()
    ended = follower.poll()
    assert ended.ended and ended.note.startswith("run ended")
    assert "Training (run ended)" in _frame(ended)


def test_a_run_that_stopped_writing_without_closing_is_called_silent(tmp_path):
    """A killed run never writes its closing bracket: after a minute without a byte the
    figures are said to be the last ones, not a running job's."""
    from gpudiag.show.live.plain import plain_line

    path = tmp_path / "t.json"
    w = TraceWriter(str(path), Metadata(producer="gpudiag"), flush_every=0.0)
    for i in range(4):
        w.step(i, i * 1000.0, i * 1000.0 + 1000.0)
    follower = TraceFollower(str(path))
    assert follower.poll().silent_s is None  # just written: a live run
    old = time.time() - 120
    os.utime(path, (old, old))
    status = follower.poll()
    assert status.silent_s is not None and 119 <= status.silent_s < 200
    assert not status.ended and "may have stopped" in status.note
    state = LiveState()
    state.training = status
    assert re.search(r"training silent for 1\d\d s; last [\d.]+ steps/s", plain_line(state))
    assert "Training (silent for 1" in _frame(status)
    w.step(4, 4000.0, 5000.0)  # it writes again
    assert follower.poll().silent_s is None
    w.close()


def _open_window_stream(path, steps: int, findings: int = 0) -> None:
    """A run whose profiler window opens and never closes: every step profiled, with its
    kernel and input wait (what the tail must hold a bounded window of)."""
    import numpy as np

    from gpudiag.trace.model.timeline import Timeline

    w = TraceWriter(str(path), Metadata(producer="gpudiag", devices=["GPU 0"]), flush_every=0)
    w.detail(True)
    for i in range(0, steps, 500):
        chunk = Timeline(meta=Metadata(producer="gpudiag"))
        t = np.arange(i, i + 500) * 1000.0
        chunk.add_activity("GPU 0", Kind.COMPUTE, t + 300.0, t + 900.0)
        chunk.add_input_wait(t, t + 250.0)
        for j in range(500):
            w.step(i + j, t[j], t[j] + 1000.0, profiled=True)
        w.timeline(chunk)
    for k in range(findings):
        w.pipeline({"note": k})
    w.flush()


def test_a_window_that_never_closes_is_held_to_its_latest_events(tmp_path, monkeypatch):
    """Was: a 57 MB stream of one open window took the follower to 417 MB (every event of
    the window kept). Now its latest MAX_WINDOW_EVENTS, whatever the file's size."""
    from gpudiag.trace.native import follow

    monkeypatch.setattr(follow, "MAX_WINDOW_EVENTS", 3000)
    monkeypatch.setattr(follow, "MAX_META_EVENTS", 50)
    path = tmp_path / "open.json"
    _open_window_stream(path, steps=6000, findings=200)
    tail = TraceTail(str(path), window_s=1e9)
    while tail.poll():
        assert len(tail.profile) <= 3000 and len(tail.meta_events) <= 50
    assert tail.profile.maxlen == 3000
    tl = tail.timeline()
    assert tl.steps.profiled.sum() <= 3000 and tl.steps.index[-1] == 5999  # the latest
    assert tl.has_device_activity()


def test_each_poll_reads_a_bounded_slice_and_a_tail_far_behind_skips_ahead(tmp_path, monkeypatch):
    """Was: 64 MB parsed per poll, no frame drawn for 18 s with the writer at full speed."""
    from gpudiag.trace.native import follow

    monkeypatch.setattr(follow, "MAX_READ", 100_000)
    monkeypatch.setattr(follow, "MAX_BEHIND", 1_000_000)
    path = tmp_path / "fast.json"
    _open_window_stream(path, steps=20_000)
    size = path.stat().st_size
    follower = TraceFollower(str(path))
    follower.poll()  # the header and the first slice
    assert follower.tail._offset <= 100_000
    status = follower.poll()  # far behind: to the file's last slice
    assert follower.tail.skipped > size - 300_000
    assert "MB skipped to keep up" in status.note
    while follower.tail.poll():
        pass
    assert follower.tail._offset == size and follower.tail.bad_lines == 0
    busy = follower.tail.timeline().device_activity("GPU 0", Kind.COMPUTE)
    assert busy.ends.max() == 19_999 * 1000.0 + 900.0  # the writer's latest kernel
