"""The training panel of ``--follow``: steps/s, step time, shares, GIL lateness, verdict.

training_panel(state, width=80)   # "waiting for TRACE" until the follower has figures
"""

from __future__ import annotations

from rich.text import Text

from gpudiag.show.live.state import LiveState
from gpudiag.show.live.widgets import Lines, box, dash, share, wrap

VERDICT_STYLES = {"compute-bound": "green", "data-starved": "red", "sync-bound": "yellow"}


def training_panel(state: LiveState, width: int) -> Lines:
    title = Text("Training", style="bold")
    s = state.training
    if s is not None and s.ended:
        title.append(" (run ended)", style="bold yellow")
    elif s is not None and s.silent_s is not None:
        title.append(f" (silent for {s.silent_s:.0f} s)", style="bold yellow")
    if s is None:
        waiting = f"waiting for {state.follow or 'a training trace'}"
        return box(title, wrap(waiting, width - 4, "dim"), width)
    items = [
        ("steps/s", dash(s.steps_per_s, "{:.2f}")),
        ("step", dash(s.step_time_ms, "{:.0f} ms")),
        ("input wait", share(s.input_share)),
        ("sync", share(s.sync_share)),
        ("GIL p95", dash(s.gil_p95_ms, "{:.1f} ms")),
    ]
    rows: Lines = []
    line = Text()
    for label, value in items:  # wrap between items, never inside one
        item_len = len(label) + 1 + len(value)
        if line.cell_len and line.cell_len + 3 + item_len > width - 4:
            rows.append(line)
            line = Text()
        if line.cell_len:
            line.append("   ")
        line.append(label + " ", style="bold")
        line.append(value)
    rows.append(line)
    if s.verdict:
        verdict = Text.assemble(
            ("verdict ", "bold"), (s.verdict, "bold " + VERDICT_STYLES.get(s.verdict, "white"))
        )
        if s.confidence is not None:
            verdict.append(f"  (confidence {s.confidence:.2f})", style="dim")
        rows.append(verdict)
    if s.note:
        rows.extend(wrap(s.note, width - 4, "dim"))
    return box(title, rows, width)
