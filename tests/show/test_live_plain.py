"""gpudiag live without a terminal (piped, logged): plain lines, one per interval."""

from __future__ import annotations

import io
import re

from rich.console import Console

from gpudiag.show.live import run_live


def test_no_tty_prints_periodic_plain_lines():
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, width=200)
    assert run_live(interval=0.3, console=console, duration=1.5) == 0
    lines = [ln for ln in buf.getvalue().splitlines() if ln.strip()]
    assert len(lines) >= 3, lines
    assert "\x1b[" not in buf.getvalue()  # no cursor movement or colour in a log
    for ln in lines:
        assert re.match(r"\d\d:\d\d:\d\d  \|  ", ln), ln
        assert "GPU" in ln and "host CPU" in ln
    # after the first interval the CPU shares are measured, with their unit
    for ln in lines[1:]:
        assert re.search(r"host CPU \d+% \(busiest core \d+%\), mem \d+%", ln), ln
    assert "(" in lines[0].split("host CPU")[0] or "util" in lines[0]  # first line says why
