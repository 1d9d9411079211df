"""The host panel: total CPU history, iowait and load, per-core bars, memory.

    host_panel(state, width=80, detail=3)

Per-core bars are laid out column-major like htop; with many cores or little height they
fold into one character per core.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rich.text import Text

from gpudiag.show.live.state import LiveState
from gpudiag.show.live.widgets import Lines, bar, box, pct, strip


def _core_cells(per_core: Sequence[float], inner: int) -> Lines:
    """Per-core bars laid out in as many columns as fit, column-major like htop."""
    label_w = len(str(max(0, len(per_core) - 1)))
    cell_w = label_w + 1 + 10 + 5  # "12 ██████████  52%"
    ncols = max(1, (inner + 2) // (cell_w + 2))
    nrows = math.ceil(len(per_core) / ncols)
    out: Lines = []
    for r in range(nrows):
        line = Text()
        for c in range(ncols):
            i = c * nrows + r
            if i >= len(per_core):
                break
            v = per_core[i]
            if c:
                line.append("  ")
            line.append(f"{i:>{label_w}} ", style="dim")
            line.append_text(bar(v / 100, 10, "red" if v > 90 else "green"))
            line.append(f"{v:>4.0f}%")
        out.append(line)
    return out


def _core_heat(per_core: Sequence[float], inner: int) -> Lines:
    """One character per core, for many cores or little height."""
    per_line = max(1, inner - 6)
    out: Lines = []
    for k in range(0, len(per_core), per_line):
        head = "cores " if k == 0 else "      "
        out.append(Text.assemble((head, "bold"), strip(per_core[k : k + per_line], style="cyan")))
    return out


def host_panel(state: LiveState, width: int, detail: int) -> Lines:
    inner = width - 4
    h = state.host
    if h is None:
        return box(
            Text("host", style="bold"), [Text("waiting for the first read", style="dim")], width
        )
    rows: Lines = []
    cpu_head = Text.assemble(("cpu  ", "bold"), f"{pct(h.cpu_total):>5} ")
    values, _ = state.history("cpu_total", "host", max(0, inner - len(cpu_head)))
    rows.append(Text.assemble(cpu_head, strip(values, style="cyan")))
    facts = [f"max core {pct(h.cpu_max_core)}", f"iowait {pct(h.iowait, 1)}"]
    if h.load_avg is not None:
        facts.append("load " + " ".join(f"{x:.2f}" for x in h.load_avg))
    rows.append(Text("   ".join(facts)))
    if h.per_core:
        cells = _core_cells(h.per_core, inner) if detail >= 2 else []
        if not cells or (len(cells) > 8 and detail < 3):
            cells = _core_heat(h.per_core, inner)
        rows.extend(cells)
    frac = None if h.mem_used_pct is None else h.mem_used_pct / 100
    tail = (
        f" {h.mem_used_gib:.1f} / {h.mem_total_gib:.1f} GiB"
        if h.mem_used_gib is not None and h.mem_total_gib is not None
        else ""
    )
    head = Text.assemble(("mem  ", "bold"), f"{pct(h.mem_used_pct):>5} ")
    rows.append(
        Text.assemble(head, bar(frac, max(4, inner - len(head) - len(tail)), "magenta"), tail)
    )
    title = Text.assemble(("host", "bold"), f" {state.hostname}")
    if h.n_cores:
        title.append(f" · {h.n_cores} cores")
    return box(title, rows, width)
