"""One frame of the monitor: panels laid out for the terminal's size.

    Console(record=True, width=100).print(render(state, 100, 40))

Detail drops until the frame fits: process rows and the time legend go first, then per-core
bars become a one-character-per-core strip, then each GPU shrinks to one line. From ``WIDE``
columns panels go two by two; narrower than ``MIN_WIDTH``, the plain lines of ``plain``.
"""

from __future__ import annotations

import time

from rich.console import Group, RenderableType
from rich.text import Text

from gpudiag.show.live.panels.gpu import gpu_panel, no_gpu_panel
from gpudiag.show.live.panels.gpu_list import gpu_list_panel
from gpudiag.show.live.panels.host import host_panel
from gpudiag.show.live.panels.training import training_panel
from gpudiag.show.live.plain import plain_frame
from gpudiag.show.live.state import LiveState
from gpudiag.show.live.widgets import Lines, beside, fit
from gpudiag.show.safe import safe_text

WIDE = 150  # two columns of panels from here
MIN_WIDTH = 40


def frame_lines(state: LiveState, width: int, detail: int) -> Lines:
    out: Lines = []
    gpus = state.gpus
    wide = width >= WIDE
    half_l = (width - 1) // 2
    half_r = width - 1 - half_l
    end_us = state.last_ts("gpu_util", [g.source for g in gpus])
    if not gpus:
        out += no_gpu_panel(state, width)
    elif detail == 0:
        out += gpu_list_panel(state, gpus, width, end_us)
    elif wide and len(gpus) > 1:
        for k in range(0, len(gpus), 2):
            pair = gpus[k : k + 2]
            left = gpu_panel(state, pair[0], half_l, detail, end_us)
            right = gpu_panel(state, pair[1], half_r, detail, end_us) if len(pair) > 1 else []
            out += beside(left, right, half_l, half_r)
    else:
        for g in gpus:
            out += gpu_panel(state, g, width, detail, end_us)
    show_training = state.follow is not None or state.training is not None
    if wide and show_training:
        out += beside(
            host_panel(state, half_l, detail), training_panel(state, half_r), half_l, half_r
        )
    else:
        out += host_panel(state, width, detail)
        if show_training:
            out += training_panel(state, width)
    return out


def render(
    state: LiveState, width: int, height: int | None = None, *, keys: bool = False
) -> RenderableType:
    """One frame for a ``width`` x ``height`` terminal (``height=None``: no limit).
    ``keys``: key presses are read, so the header says how to quit.

    Detail drops until the frame fits: process rows and the time legend go first, then
    per-core bars become a one-character-per-core strip, then each GPU shrinks to one line.
    Narrower than ``MIN_WIDTH``: a plain list of figures, verdict first (``plain_frame``).
    Text from outside (host and process names, notes, paths) is shown with control
    characters made visible.
    """
    if width < MIN_WIDTH:
        return Group(*plain_frame(state))
    header = Text.assemble(
        ("gpudiag live", "bold"),
        f"  {state.hostname}  {time.strftime('%H:%M:%S')}  every {state.interval:g} s",
        ("   q quits" if keys and width >= 70 else "", "dim"),
    )
    footer: Lines = []
    if state.errors:
        msg = f"{len(state.errors)} sampling errors; last: {state.errors[-1]}"
        footer.append(fit(Text(msg, style="dim red"), width))
    budget = None if height is None else height - 1 - len(footer)
    lines: Lines = []
    for detail in (3, 2, 1, 0):
        lines = frame_lines(state, width, detail)
        if budget is None or len(lines) <= budget:
            break
    frame = [safe_text(t) for t in (header, *lines, *footer)]
    for t in frame:
        t.no_wrap = True
        t.overflow = "crop"
    return Group(*frame)
