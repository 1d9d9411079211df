"""The live monitor: frames rendered from replayed NVML readings through the real samplers."""

from __future__ import annotations

import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time

import pytest
from rich.console import Console

from gpudiag.record.nvml import NvmlSession
from gpudiag.record.nvml_replay import ReplayNvml
from gpudiag.record.samplers import gpu_sampler, host_sampler
from gpudiag.show.live import LiveState, TrainingPanelSource, TrainingStatus, render, run_live
from gpudiag.show.live.keys import Keys
from gpudiag.show.live.widgets import strip
from tests.helpers.paths import NVML_H100_BURSTY, REPO

FIXTURE = NVML_H100_BURSTY


def _text(renderable, width: int) -> str:
    c = Console(record=True, width=width, file=io.StringIO(), color_system=None)
    c.print(renderable)
    return c.export_text()


@pytest.fixture(scope="module")
def state() -> LiveState:
    """12 s of the bursty H100 recording pushed through the GPU and host samplers."""
    fake = ReplayNvml.from_file(FIXTURE)
    st = LiveState(interval=0.5)
    gpu = gpu_sampler(NvmlSession(lib=fake), st.add_sample, 0.5, observer=st.set_gpus)
    host = host_sampler(st.add_sample, 0.5, observer=st.set_host)
    for _ in range(24):
        fake.advance(0.5)
        gpu.sample_once()
    time.sleep(0.1)
    host.sample_once()
    gpu.stop()
    return st


def _util_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "util " in line]


def test_gpu_panel_from_replay(state):
    text = _text(render(state, 100, None), 100)
    assert "GPU 0" in text and "GPU 1" in text and "NVIDIA H100 80GB HBM3" in text
    assert re.search(r"util\s+\d+%", text)
    assert "77.1 / 79.6 GiB" in text  # 78917 MiB of 81559 MiB
    assert re.search(r"PCIe RX [\d.]+ [GM]B/s\s+TX [\d.]+ [GM]B/s", text)
    assert re.search(r"W / 700 W", text) and "SM 1980 MHz" in text
    assert re.search(r"48213\s+python3\s+76\.6 GiB", text)  # process row
    lines = _util_lines(text)
    assert len(lines) == 2
    for line in lines:
        # bursts (█) alternate with idle gaps (▁) several times across the strip
        assert len(re.findall(r"[▆▇█]{2,}[^▆▇█]*▁", line)) >= 3, line
    assert "host" in text and "cpu" in text


def test_strip_levels_and_gaps():
    s = strip([None, 0.0, 12.0, 50.0, 100.0, None]).plain
    assert s == " ▁▁▄█ "
    assert strip([100.0, 0.0]).spans  # coloured


def test_narrow_terminal_fewer_columns_and_less_detail(state):
    wide = _util_lines(_text(render(state, 120, None), 120))[0]
    narrow_frame = _text(render(state, 60, 20), 60)
    narrow = _util_lines(narrow_frame)[0]
    assert len(narrow.rstrip()) <= 60 < len(wide.rstrip())
    assert len(narrow_frame.splitlines()) <= 20
    assert "48213" not in narrow_frame  # process rows dropped first
    tiny = _text(render(state, 60, 12), 60)
    assert "GPUs" in tiny and len(tiny.splitlines()) <= 12  # one line per GPU


def test_wide_terminal_puts_gpus_side_by_side(state):
    text = _text(render(state, 170, None), 170)
    assert any("GPU 0" in line and "GPU 1" in line for line in text.splitlines())


def test_training_panel(state):
    state.follow = "run.trace"
    state.training = TrainingStatus(
        steps_per_s=12.3,
        step_time_ms=81.0,
        input_share=0.34,
        sync_share=None,
        gil_p95_ms=4.8,
        verdict="data-starved",
        confidence=0.82,
        note="last 50 steps",
    )
    try:
        text = _text(render(state, 100, None), 100)
    finally:
        state.follow, state.training = None, None
    assert "Training" in text and "12.30" in text and "81 ms" in text and "34%" in text
    assert "sync —" in text  # unknown, not 0
    assert "data-starved" in text and "0.82" in text and "last 50 steps" in text


def test_no_driver_says_so_and_host_still_renders():
    console = Console(record=True, width=100, file=io.StringIO(), color_system=None)
    assert run_live(once=True, console=console, nvml_lib=ReplayNvml.unavailable()) == 0
    text = console.export_text()
    assert "No NVIDIA GPU visible: NVML could not load the driver library" in text
    assert "util" not in text and "GiB" in text and "cpu" in text and "load" in text


def test_no_driver_on_this_machine():
    if NvmlSession().available:
        pytest.skip("this machine has an NVIDIA GPU")
    console = Console(record=True, width=100, file=io.StringIO(), color_system=None)
    assert run_live(once=True, console=console) == 0
    text = console.export_text()
    assert "No NVIDIA GPU visible" in text and "host" in text


class _Source:
    def __init__(self) -> None:
        self.closed = False

    def poll(self) -> TrainingStatus | None:
        return TrainingStatus(steps_per_s=3.0, verdict="sync-bound", confidence=0.6)

    def close(self) -> None:
        self.closed = True


def test_once_with_follow_source():
    src = _Source()
    assert isinstance(src, TrainingPanelSource)
    console = Console(record=True, width=100, file=io.StringIO(), color_system=None)
    fake = ReplayNvml.from_file(FIXTURE, realtime=True)
    assert (
        run_live(once=True, follow="t.json", console=console, nvml_lib=fake, training_source=src)
        == 0
    )
    text = console.export_text()
    assert "sync-bound" in text and "3.00" in text and "GPU 0" in text
    assert "q quits" not in text  # was: said so, though --once reads no key
    assert src.closed
    assert fake.calls["nvmlShutdown"] == 1


def test_live_loop_runs_and_stops_cleanly():
    console = Console(file=io.StringIO(), width=100, height=40, force_terminal=True)
    fake = ReplayNvml.from_file(FIXTURE, realtime=True)
    t0 = time.monotonic()
    assert run_live(interval=0.2, console=console, nvml_lib=fake, duration=0.8) == 0
    assert time.monotonic() - t0 < 5
    assert "GPU 0" in console.file.getvalue()
    assert not [t for t in threading.enumerate() if t.name.startswith("gpudiag-")]
    assert fake.calls["nvmlShutdown"] == 1


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")
def test_q_quits_and_terminal_is_restored(monkeypatch):
    import pty
    import termios

    master, slave = pty.openpty()
    tty_in = os.fdopen(slave, "r")
    before = termios.tcgetattr(slave)
    monkeypatch.setattr(sys, "stdin", tty_in)
    try:
        with Keys() as keys:
            assert termios.tcgetattr(slave)[3] != before[3]  # cbreak: lflags changed
            os.write(master, b"x")
            assert keys.wait(1.0) == "x"
            assert keys.wait(0.05) == ""
        assert termios.tcgetattr(slave) == before

        console = Console(file=io.StringIO(), width=100, height=40, force_terminal=True)
        threading.Timer(0.4, os.write, (master, b"q")).start()
        t0 = time.monotonic()
        assert (
            run_live(interval=0.2, console=console, nvml_lib=ReplayNvml.unavailable(), duration=10)
            == 0
        )
        assert time.monotonic() - t0 < 5  # quit on q, not on the duration
        assert termios.tcgetattr(slave) == before
        out = console.file.getvalue()
        assert "\x1b[?1049h" in out and "\x1b[?1049l" in out  # alternate screen left
        assert "q quits" in out
    finally:
        tty_in.close()
        os.close(master)


def _pane(sock: str) -> str:
    r = subprocess.run(
        ["tmux", "-L", sock, "capture-pane", "-p", "-t", "live"], capture_output=True, text=True
    )
    return r.stdout


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (a real terminal)")
def test_follow_in_a_real_80x24_terminal(tmp_path):
    """The monitor in tmux at 80x24: every panel line ends at the right edge (nothing
    wrapped), the verdict is on screen, and q quits with status 0."""
    from gpudiag.record.writer import TraceWriter
    from gpudiag.trace.model.timeline import Metadata
    from tests.helpers.synth import periodic

    trace = tmp_path / "run.json"
    # named as a MirroredStrategy run on CPUs names its devices
    one = periodic(steps=1, input_frac=0.4, compute_frac=0.5, device="CPU replica 0")
    with TraceWriter(str(trace), Metadata(producer="gpudiag")) as w:
        for i in range(6):
            w.step(i, i * 1000.0, i * 1000.0 + 1000.0, profiled=True)
            w.timeline(one, shift_us=i * 1000.0)
    rc = tmp_path / "rc"
    cmd = (
        f"{shlex.quote(sys.executable)} -m gpudiag live --interval 0.3 "
        f"--follow {shlex.quote(str(trace))}; echo $? > {shlex.quote(str(rc))}"
    )
    sock = f"gpudiag-test-{os.getpid()}"
    env = {**os.environ, "PYTHONPATH": str(REPO), "TERM": "xterm-256color"}
    tmux = ["tmux", "-L", sock, "-f", "/dev/null"]
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", "live", "-x", "80", "-y", "24", cmd], check=True, env=env
    )
    try:
        deadline = time.monotonic() + 60
        pane = ""
        while "data-starved" not in pane and time.monotonic() < deadline:
            time.sleep(0.3)
            pane = _pane(sock)
        assert "data-starved" in pane, pane
        lines = [ln for ln in pane.splitlines() if ln.strip()]
        assert len(lines) <= 24 and "q quits" in lines[0]
        for ln in lines[1:]:
            assert ln[0] in "╭│╰" and len(ln) == 80 and ln[-1] in "╮│╯", ln
        subprocess.run(["tmux", "-L", sock, "send-keys", "-t", "live", "q"], check=True)
        while not rc.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert rc.read_text().strip() == "0"
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)
