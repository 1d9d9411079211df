"""``op-determinism``: deterministic kernels are forced
(``tf.config.experimental.enable_op_determinism()``, ``TF_DETERMINISTIC_OPS=1``,
``torch.use_deterministic_algorithms(True)``, XLA's ``--xla_gpu_deterministic_ops``).

Why it costs time: ops whose fast GPU kernels add in any order (scatter and segment sums,
bias and convolution gradients) switch to slower ordered ones or to the CPU, cuDNN is held
to deterministic algorithms, and tf.data keeps its order: reported 80 s -> 10 min per epoch
(tensorflow/tensorflow#62100). Worth it while debugging or for a reproducible result, not
for speed. Not measured here; on a CPU-only run it is named at info severity only (most CPU
kernels are deterministic anyway).

Example: "Deterministic ops are forced (TensorFlow)". Fix: switch it off for training runs
that need speed; gain not measured, at most the compute share.
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.gain import at_most
from gpudiag.analyze.needs import Needs

ID = "op-determinism"
NEEDS = {"nondeterministic-ops": Needs()}


def detect(ev: RankEvidence) -> Finding | None:
    if ev.config.op_determinism is not True:
        return None
    evidence: dict[str, object] = {"op_determinism": True}
    if ev.breakdown is not None:
        evidence["compute_share_pct"] = pct(ev.shares["compute"])
    fw = {"tensorflow": "TensorFlow", "jax": "XLA", "torch": "PyTorch"}.get(
        ev.config.framework or "", "the framework"
    )
    return Finding(
        ID,
        "info" if ev.cpu_device else "moderate",
        f"Deterministic ops are forced ({fw}): slower kernels where order matters",
        evidence,
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    c = s.shares["compute"]
    g = at_most(
        c,
        f"not measured (reported 8x, tensorflow/tensorflow#62100): at most the compute "
        f"({c:.0%} of the step)",
    )
    if s.config.framework == "torch":
        how = "torch.use_deterministic_algorithms(False)"
    elif s.config.framework == "jax":
        how = "drop --xla_gpu_deterministic_ops from XLA_FLAGS"
    else:
        how = (
            "leave out tf.config.experimental.enable_op_determinism() and unset "
            "TF_DETERMINISTIC_OPS / TF_CUDNN_DETERMINISTIC"
        )
    return [
        g.suggestion(
            "Allow non-deterministic kernels for speed",
            f"For runs that need speed rather than bit-identical results, {how}; keep it for "
            "debugging and reproducibility checks.",
            ID,
            "nondeterministic-ops",
        )
    ]
