"""``host-sync-stalls``: the host waits for the device (``cudaStreamSynchronize``,
``cudaDeviceSynchronize``, a synchronous ``cudaMemcpy``/``hipMemcpyWithStream`` behind
``loss.item()``, ``tensor.cpu()``, ``print(tensor)``...).

Why it costs time: having queued nothing, the host leaves the device idle until it launches
again; a blocking copy that waits (pageable memory, another stream) idles the device while it
blocks. Counted is the device idle during the calls and after each, not the wait itself:
waiting while the device works costs nothing. One call holding a tenth of the time is named.

Example: "Device idle 26.2% of the time after the host synchronises (1.0 syncs per step)".
Fix (per framework): read metrics every N steps, non-blocking copies from pinned memory.
"""

from __future__ import annotations

from gpudiag.analyze import host_calls as H
from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct, shown
from gpudiag.analyze.gain import Gain, removed
from gpudiag.analyze.needs import Needs, OneOf
from gpudiag.analyze.rules import host_preprocessing
from gpudiag.analyze.wording import dialect
from gpudiag.trace.model.timeline import subtract

ID = "host-sync-stalls"
NEEDS = {"avoid-host-sync": Needs(requires={"device_measured": OneOf(True)})}
# one call holding this share of the judged time is named as the cause (a blocking copy of
# hundreds of ms in an inference window), not a pattern of per-step syncs
LONG_CALL_SHARE = 0.10


def detect(ev: RankEvidence) -> Finding | None:
    found = H.blocked_idle(ev, "sync")
    if found is None:
        return None
    idle, b = found
    pre = host_preprocessing.preprocessing(ev)
    if pre is not None:  # the host was busy preparing the next step: host-preprocessing
        idle = subtract(idle, pre[0])
    share = H.total(idle) / b.span
    # device idle right after host syncs, as a share of the analysed time: judged as exposed
    # sync is (thresholds.SYNC_NOTE, SYNC_HIGH: xprof's note and bottleneck levels)
    if share < T.SYNC_NOTE:
        return None
    counts, ms = H.per_call(b.calls, b.windows)
    n = sum(counts.values())
    during = H.total(H.exposed(b.blocked, H.device_busy(ev.timeline))) / b.span
    call, longest_us = H.longest_call(b.calls, b.windows)
    evidence: dict[str, object] = {
        "idle_after_sync_pct": pct(share),
        "idle_during_calls_pct": pct(during),
        "host_in_sync_pct": pct(H.total(b.blocked) / b.span),
        "syncs_per_step": round(n / max(1, len(b.windows)), 1),
        "calls": counts,
        "time_in_calls_ms": ms,
    }
    if longest_us / b.span >= LONG_CALL_SHARE:
        evidence.update(longest_call=call, longest_call_ms=round(longest_us / 1000.0, 1))
        title = (
            f"The host blocked in {call} for {longest_us / 1000.0:.0f} ms while the device "
            f"idled: {pct(share)}% of the time"
        )
    else:
        title = (
            f"Device idle {pct(share)}% of the time after the host synchronises "
            f"({n / max(1, len(b.windows)):.1f} syncs per step)"
        )
    severity = "high" if share >= T.SYNC_HIGH else "moderate"
    return Finding(ID, severity, title, evidence, measured=share)


# serving: no loss or metrics to log, but outputs read back each request
_INFERENCE = {
    "pytorch": (
        "Stop synchronising with the GPU every request",
        "Reading outputs with .cpu()/.tolist()/.item(), torch.cuda.synchronize() and blocking "
        "copies make the host wait, then the GPU idles while it launches again: keep "
        "post-processing on the device, copy results with non_blocking=True into pinned "
        "memory and read them once per batch.",
    ),
    "jax": (
        "Stop blocking on the device every call",
        "jax.device_get, np.asarray(outputs) and .block_until_ready() after each call stop "
        "JAX's asynchronous dispatch: dispatch the next batch before reading the last one.",
    ),
    "keras": (
        "Stop reading outputs on the host every call",
        "Converting each prediction to NumPy synchronises: predict on larger batches and read "
        "the outputs once per batch.",
    ),
}

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
    share = f.measured
    if share is None:
        return []
    g = Gain.of(
        removed(share / 2),
        1.0,
        removed(share),
        f"device idle {shown(share):.0%} of the time right after host syncs; half of it "
        "recovered at the point (not measured on this run)",
    )
    who = dialect(s.config)
    title, detail = (
        _INFERENCE.get(who, _INFERENCE["keras"]) if s.config.training is False else _REMEDY[who]
    )
    call = f.evidence.get("longest_call")
    if call:
        detail = (
            f"The longest wait is one {call} of {f.evidence.get('longest_call_ms')} ms: make "
            "it asynchronous (pinned host memory, a copy on its own stream) or move it out of "
            "the step. " + detail
        )
    return [g.suggestion(title, detail, ID, "avoid-host-sync")]
