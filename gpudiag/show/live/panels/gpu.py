"""One GPU's panel: utilisation history, memory, PCIe, power, clock and its processes.

gpu_panel(state, snapshot, width=80, detail=3, end_us=None)   # boxed lines
no_gpu_panel(state, width=80)                                 # why nothing is measured
"""

from __future__ import annotations

from rich.text import Text

from gpudiag.record.nvml import GpuSnapshot
from gpudiag.show.live.state import LiveState
from gpudiag.show.live.widgets import (
    IDLE,
    Lines,
    bar,
    box,
    gib,
    level_style,
    pct,
    rate,
    strip,
    wrap,
)

MAX_PROC_ROWS = 4


def _info_line(g: GpuSnapshot) -> Text | None:
    parts: list[str] = []
    if g.temperature_c is not None:
        parts.append(f"{g.temperature_c:.0f}°C")
    if g.power_w is not None:
        lim = f" / {g.power_limit_w:.0f} W" if g.power_limit_w else ""
        parts.append(f"{g.power_w:.0f} W{lim}")
    if g.clock_sm_mhz is not None:
        parts.append(f"SM {g.clock_sm_mhz:.0f} MHz")
    return Text("   ".join(parts), style="dim") if parts else None


def _util_line(state: LiveState, g: GpuSnapshot, inner: int, end_us: float | None) -> Text:
    label = Text("util ", style="bold")
    value = Text(f"{pct(g.util):>5} ", style=level_style(g.util) if g.util is not None else "dim")
    cols = max(0, inner - len(label) - len(value))
    values, _ = state.history("gpu_util", g.source, cols, end_us)
    return Text.assemble(label, value, strip(values))


def _axis_line(state: LiveState, g: GpuSnapshot, inner: int, end_us: float | None) -> Text:
    cols = max(0, inner - 11)
    _, bin_s = state.history("gpu_util", g.source, cols, end_us)
    legend = f"◂ {cols * bin_s:.0f} s, {bin_s:.2g} s/col · {IDLE} idle · blank no data"
    return Text(" " * 11 + legend[:cols], style="dim")


def mem_frac(g: GpuSnapshot) -> float | None:
    if g.mem_used_mib is None or not g.mem_total_mib:
        return None
    return g.mem_used_mib / g.mem_total_mib


def _mem_line(g: GpuSnapshot, inner: int) -> Text:
    frac = mem_frac(g)
    tail = f" {gib(g.mem_used_mib)} / {gib(g.mem_total_mib)} GiB" if frac is not None else " n/a"
    head = Text("mem  ", style="bold")
    share = Text(f"{pct(None if frac is None else 100 * frac):>5} ")
    width = max(4, inner - len(head) - len(share) - len(tail))
    return Text.assemble(head, share, bar(frac, width, "magenta"), tail)


def _pcie_text(g: GpuSnapshot) -> Text | None:
    if g.pcie_rx_mbs is None and g.pcie_tx_mbs is None:
        return None
    return Text.assemble(("PCIe ", "bold"), f"RX {rate(g.pcie_rx_mbs)}  TX {rate(g.pcie_tx_mbs)}")


def _process_lines(g: GpuSnapshot, max_rows: int) -> Lines:
    if g.processes is None:
        return []
    shown = g.processes[:max_rows]
    pid_w = max([3] + [len(str(p.pid)) for p in shown])
    name_w = min(24, max([7] + [len(p.name) for p in shown]))
    out = [Text(f"{'PID':>{pid_w}}  {'PROCESS':<{name_w}}  {'GPU MEM':>9}", style="dim")]
    if not shown:
        out.append(Text(" " * (pid_w + 2) + "no processes", style="dim"))
    for p in shown:
        mem = "n/a" if p.used_mib is None else f"{p.used_mib / 1024:.1f} GiB"
        out.append(
            Text.assemble((f"{p.pid:>{pid_w}}", "cyan"), f"  {p.name[:name_w]:<{name_w}}  {mem:>9}")
        )
    if len(g.processes) > max_rows:
        out.append(Text(f"{'':>{pid_w}}  +{len(g.processes) - max_rows} more", style="dim"))
    return out


def gpu_panel(
    state: LiveState, g: GpuSnapshot, width: int, detail: int, end_us: float | None
) -> Lines:
    inner = width - 4
    rows: Lines = []
    info = _info_line(g)
    if info is not None and detail >= 2:
        rows.append(info)
    rows.append(_util_line(state, g, inner, end_us))
    if detail >= 3:
        rows.append(_axis_line(state, g, inner, end_us))
    pcie = _pcie_text(g)
    if detail >= 2:
        rows.append(_mem_line(g, inner))
        if pcie is not None:
            rows.append(pcie)
    else:  # one line for memory and PCIe
        frac = mem_frac(g)
        line = Text.assemble(("mem ", "bold"), pct(None if frac is None else 100 * frac), "  ")
        if pcie is not None:
            line.append_text(pcie)
        rows.append(line)
    if detail >= 3:
        rows.extend(_process_lines(g, MAX_PROC_ROWS))
    rows.extend(Text(e, style="dim red") for e in g.errors[:1])
    return box(Text.assemble((g.source, "bold"), " ", g.name), rows, width)


def no_gpu_panel(state: LiveState, width: int) -> Lines:
    msg = state.gpu_reason or "waiting for the first NVML read"
    return box(Text("GPU", style="bold"), wrap(msg, width - 4, "bold yellow"), width)
