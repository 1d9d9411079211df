"""All GPUs one line each, for terminals too short for a panel per GPU.

gpu_list_panel(state, state.gpus, width=80, end_us=None)
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from gpudiag.record.nvml import GpuSnapshot
from gpudiag.show.live.panels.gpu import mem_frac
from gpudiag.show.live.state import LiveState
from gpudiag.show.live.widgets import Lines, box, pct, rate, strip


def gpu_list_panel(
    state: LiveState, gpus: Sequence[GpuSnapshot], width: int, end_us: float | None
) -> Lines:
    """All GPUs one line each, for short terminals."""
    inner = width - 4
    rows: Lines = []
    for g in gpus:
        frac = mem_frac(g)
        head = Text.assemble((f"{g.index:>2} ", "bold"), f"{pct(g.util):>5} ")
        tail = Text(f" mem {pct(None if frac is None else 100 * frac):>4} RX {rate(g.pcie_rx_mbs)}")
        cols = max(0, inner - len(head) - len(tail))
        values, _ = state.history("gpu_util", g.source, cols, end_us)
        rows.append(Text.assemble(head, strip(values), tail))
    return box(Text("GPUs", style="bold"), rows, width)
