"""``xla-off``: a compute-bound accelerator run without XLA.

Why it costs time: without compilation each element-wise op is its own kernel, reading and
writing memory; XLA fuses them.

Example: "Compute-bound without XLA compilation". Fix: ``model.compile(jit_compile=True)``;
not raised when it is on or unknown, on JAX (always compiled) or on CPU-only runs (measured
here: jit_compile made a small conv net 0.74× as fast and a small MLP slower).
"""

from __future__ import annotations

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.gain import Gain, removed
from gpudiag.analyze.needs import Needs, OneOf

ID = "xla-off"
# jit_compile is a Keras compile option on TensorFlow (JAX always compiles with XLA)
NEEDS = {
    "jit-compile": Needs(
        requires={"keras": OneOf(True), "framework": OneOf("tensorflow")},
        check={"keras": "that Keras's fit runs this loop (else: tf.function(jit_compile=True))"},
    )
}
FUSION_SAVING = (0.05, 0.15, 0.30)  # share of compute XLA saves: low / point / high


def detect(ev: RankEvidence) -> Finding | None:
    cfg, b = ev.config, ev.breakdown
    if b is None or ev.cpu_device or not ev.timeline.devices:
        return None
    if cfg.jit_compile is not False or cfg.framework not in ("tensorflow", "torch"):
        return None  # on (or unknown, or JAX, which always compiles with XLA)
    if b.shares["compute"] < T.COMPUTE_DOMINANT:
        return None
    return Finding(
        ID,
        "info",
        "Compute-bound without XLA compilation",
        {"compute_share_pct": pct(b.shares["compute"]), "jit_compile": False},
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    c = s.shares["compute"]
    lo, mid, hi = (removed(c * x) for x in FUSION_SAVING)
    g = Gain.of(
        mid,
        lo,
        hi,
        f"{FUSION_SAVING[1]:.0%} of compute ({c:.0%}) saved by fusion "
        "(typical on GPUs; not measured on this run)",
    )
    return [
        g.suggestion(
            "Compile the model with XLA",
            "model.compile(..., jit_compile=True) fuses element-wise ops into fewer kernels.",
            ID,
            "jit-compile",
        )
    ]
