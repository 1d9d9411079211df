"""Plain mode: the monitor's figures as short lines, for narrow terminals, pipes and logs.

plain_frame(state)   # verdict first, lines that may wrap anywhere (< 40 columns)
plain_line(state)    # "15:25:25  |  GPU 0 util 87%, ...  |  training 12.3 steps/s, ..."
"""

from __future__ import annotations

import time

from rich.text import Text

from gpudiag.show.live.panels.gpu import mem_frac
from gpudiag.show.live.state import LiveState
from gpudiag.show.live.widgets import Lines, dash, gib, pct, share
from gpudiag.show.safe import clean


def plain_frame(state: LiveState) -> Lines:
    """The frame as short lines that wrap anywhere, for terminals too narrow for panels:
    the verdict first, so it is always visible."""
    out: Lines = []
    s = state.training
    if s is not None and s.verdict:
        conf = "" if s.confidence is None else f" ({s.confidence:.2f})"
        out.append(Text(f"verdict {s.verdict}{conf}", style="bold"))
    if s is not None:
        out.append(Text(f"steps/s {dash(s.steps_per_s, '{:.2f}')}"))
        out.append(Text(f"step {dash(s.step_time_ms, '{:.0f} ms')}"))
        out.append(Text(f"input wait {share(s.input_share)}"))
        out.append(Text(f"sync {share(s.sync_share)}"))
        if s.note:
            out.append(Text(clean(s.note), style="dim"))
    elif state.follow is not None:
        out.append(Text(clean(f"waiting for {state.follow}"), style="dim"))
    for g in state.gpus:
        frac = mem_frac(g)
        out.append(
            Text(
                clean(
                    f"{g.source} util {pct(g.util)} mem {pct(None if frac is None else 100 * frac)}"
                )
            )
        )
    if not state.gpus:
        out.append(Text(clean(f"GPU: {state.gpu_reason or 'waiting'}"), style="dim"))
    h = state.host
    if h is not None:
        out.append(Text(f"cpu {pct(h.cpu_total)} mem {pct(h.mem_used_pct)}"))
    out.append(
        Text(clean(f"gpudiag live {state.hostname} {time.strftime('%H:%M:%S')}"), style="dim")
    )
    for t in out:
        t.overflow = "fold"
    return out


def plain_line(state: LiveState, why: bool = False) -> str:
    """One self-contained line per interval for logs and pipes: every figure with its unit.
    ``why``: say why no GPU is measured (the first line only; later lines stay short)."""
    parts = [time.strftime("%H:%M:%S")]
    gpus = state.gpus
    if not gpus:
        parts.append(f"GPU: none ({state.gpu_reason or 'not measured'})" if why else "GPU: none")
    for g in gpus:
        mem = (
            f", mem {gib(g.mem_used_mib)}/{gib(g.mem_total_mib)} GiB"
            if g.mem_used_mib is not None and g.mem_total_mib
            else ""
        )
        parts.append(f"GPU {g.index} util {pct(g.util)}{mem}")
    h = state.host
    if h is not None:
        parts.append(
            f"host CPU {pct(h.cpu_total)} (busiest core {pct(h.cpu_max_core)}), "
            f"mem {pct(h.mem_used_pct)}"
        )
    t = state.training
    if t is not None and t.steps_per_s is None and not t.verdict and t.note:
        parts.append(f"training: {t.note}")  # e.g. waiting for the trace to appear
    elif t is not None:
        rate = "—" if t.steps_per_s is None else f"{t.steps_per_s:.1f} steps/s"
        step = "" if t.step_time_ms is None else f", step {t.step_time_ms:.1f} ms"
        inp = "" if t.input_share is None else f", input {100 * t.input_share:.0f}%"
        sync = "" if t.sync_share is None else f", sync {100 * t.sync_share:.0f}%"
        verdict = "" if not t.verdict else f", {t.verdict}"
        conf = "" if t.confidence is None or not t.verdict else f" ({t.confidence:.2f})"
        # after the run, its last figures stay: say they are not a running job's
        head = "training ended; last" if t.ended else "training"
        if t.silent_s is not None:
            head = f"training silent for {t.silent_s:.0f} s; last"
        parts.append(f"{head} {rate}{step}{inp}{sync}{verdict}{conf}")
    return clean("  |  ".join(parts))
