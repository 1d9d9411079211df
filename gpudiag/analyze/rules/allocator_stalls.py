"""``allocator-stalls``: the host blocks in device memory allocation calls (``cudaFree``,
``hipFree``, ``cudaMalloc``, ...) while the device idles.

Why it costs time: ``cudaFree``/``hipFree`` also synchronise the device, and nothing is
queued meanwhile. A caching allocator makes these calls rare; a run that makes them every step
has it turned off (``PYTORCH_NO_CUDA_MEMORY_CACHING=1`` / ``PYTORCH_NO_HIP_MEMORY_CACHING=1``,
``XLA_PYTHON_CLIENT_ALLOCATOR=platform``, ``TF_GPU_ALLOCATOR=cuda_malloc``) or empties its
cache in the loop.

Example: "Host blocked in hipFree 95.0% of the time while the device idles". Fix: turn the
framework's caching allocator back on.
"""

from __future__ import annotations

from gpudiag.analyze import host_calls as H
from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct, shown
from gpudiag.analyze.gain import Gain, removed
from gpudiag.analyze.needs import Needs, OneOf
from gpudiag.analyze.wording import dialect

ID = "allocator-stalls"
# the device idle an allocator call causes is only measured where device time is
NEEDS = {"caching-allocator": Needs(requires={"device_measured": OneOf(True)})}


def detect(ev: RankEvidence) -> Finding | None:
    b = H.blocked_in(ev, "allocator")
    if b is None:
        return None
    stalled = H.exposed(b.blocked, H.device_busy(ev.timeline))
    share = H.total(stalled) / b.span
    # share of the analysed time the host blocks in allocator calls while the device idles,
    # judged as an input wait is (thresholds.INPUT_MODERATE, INPUT_HIGH)
    if share < T.INPUT_MODERATE:
        return None
    counts, ms = H.per_call(b.calls, b.windows)
    top = next(iter(counts), "allocator calls")
    return Finding(
        ID,
        "high" if share >= T.INPUT_HIGH else "moderate",
        f"Host blocked in {top} {pct(share)}% of the time while the device idles",
        {
            "allocator_stall_pct": pct(share),
            "host_in_allocator_pct": pct(H.total(b.blocked) / b.span),
            "calls": counts,
            "time_in_calls_ms": ms,
            "steps": len(b.windows),
        },
        measured=share,
    )


_REMEDY = {
    "pytorch": (
        "Keep PyTorch's caching allocator on",
        "Unset PYTORCH_NO_CUDA_MEMORY_CACHING / PYTORCH_NO_HIP_MEMORY_CACHING and drop "
        "torch.cuda.empty_cache() from the loop: freed blocks are then reused instead of "
        "handed back with cudaFree/hipFree, which waits for the device. Against fragmentation "
        "use PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PYTORCH_HIP_ALLOC_CONF on ROCm).",
    ),
    "jax": (
        "Keep XLA's pooling allocator on",
        "Unset XLA_PYTHON_CLIENT_ALLOCATOR=platform (it allocates and frees on demand); limit "
        "memory with XLA_PYTHON_CLIENT_MEM_FRACTION instead.",
    ),
    "keras": (
        "Keep TensorFlow's pooling allocator on",
        "Unset TF_GPU_ALLOCATOR=cuda_malloc and keep the default BFC allocator; do not call "
        "keras.backend.clear_session() or rebuild models inside the training loop.",
    ),
}


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    share = f.measured
    if share is None:
        return []
    g = Gain.of(
        removed(share * 0.9),
        removed(share / 2),
        removed(share),
        f"device idle {shown(share):.0%} of the time while the host frees/allocates; a caching "
        "allocator makes those calls rare (not measured on this run)",
    )
    title, detail = _REMEDY[dialect(s.config)]
    return [g.suggestion(title, detail, ID, "caching-allocator")]
