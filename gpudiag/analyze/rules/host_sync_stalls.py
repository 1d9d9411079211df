"""``host-sync-stalls``: the host waits for the device (``cudaStreamSynchronize``,
``cudaDeviceSynchronize``, a synchronous ``cudaMemcpy``/``hipMemcpyWithStream`` behind
``loss.item()``, ``tensor.cpu()``, ``print(tensor)``...).

Why it costs time: having queued nothing, the host leaves the device idle until it launches
again. Counted is that idle time after each sync, not the wait itself: waiting while the
device works costs nothing.

Example: "Device idle 26.2% of the time after the host synchronises (1.0 syncs per step)".
Fix (per framework): read metrics every N steps, non-blocking copies from pinned memory.
"""

from __future__ import annotations

from gpudiag.analyze import host_calls as H
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.gain import Gain, removed
from gpudiag.analyze.wording import api

ID = "host-sync-stalls"
# device idle right after host syncs, as a share of the analysed time (same anchors as the
# other stalls: 5% worth a note, 15% a bottleneck, as xprof flags kernel-launch time)
SHARE_MODERATE = 0.05
SHARE_HIGH = 0.15


def detect(ev: RankEvidence) -> Finding | None:
    tl = ev.timeline
    b = H.blocked_in(ev, "sync") if tl.activity else None
    if b is None:
        return None
    idle = H.idle_after(b.blocked, H.device_busy(tl), b.windows)
    share = H.total(idle) / b.span
    if share < SHARE_MODERATE:
        return None
    counts, ms = H.per_call(b.calls, b.windows)
    n = sum(counts.values())
    return Finding(
        ID,
        "high" if share >= SHARE_HIGH else "moderate",
        f"Device idle {pct(share)}% of the time after the host synchronises "
        f"({n / max(1, len(b.windows)):.1f} syncs per step)",
        {
            "idle_after_sync_pct": pct(share),
            "host_in_sync_pct": pct(H.total(b.blocked) / b.span),
            "syncs_per_step": round(n / max(1, len(b.windows)), 1),
            "calls": counts,
            "time_in_calls_ms": ms,
        },
    )


_REMEDY = {
    "pytorch": (
        "Stop synchronising with the GPU every step",
        "loss.item(), tensor.cpu()/.tolist(), print(tensor), torch.cuda.synchronize() and "
        "blocking copies make the host wait, then the GPU idles while it launches again: log "
        "every N steps, keep metrics on the device, copy with .to(..., non_blocking=True) from "
        "pinned memory; torch.cuda.set_sync_debug_mode('warn') names each sync.",
    ),
    "jax": (
        "Stop blocking on the device every step",
        "float(loss), jax.device_get, .block_until_ready() and printing arrays each step stop "
        "JAX's asynchronous dispatch: fetch metrics every N steps.",
    ),
    "keras": (
        "Stop reading tensors on the host every step",
        "Callbacks or code that call .numpy() / float() on tensors each batch synchronise: log "
        "every N batches and use steps_per_execution to run several steps per dispatch.",
    ),
}


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    share = float(f.evidence["idle_after_sync_pct"]) / 100.0
    g = Gain.of(
        removed(share / 2),
        1.0,
        removed(share),
        f"device idle {share:.0%} of the time right after host syncs; half of it "
        "recovered at the point (not measured on this run)",
    )
    title, detail = _REMEDY[api(s.config)]
    return [g.suggestion(title, detail, ID)]
