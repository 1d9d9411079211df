"""``run-eagerly`` (lint): the model trains op by op from Python (``run_eagerly=True``).

Why it costs time: Keras's debugging switch skips ``tf.function`` (TensorFlow) and
``jax.jit`` (JAX): every op of the step, forward, backward and optimizer, is dispatched
from Python one at a time, and the host's dispatch, not the computation, sets the pace
(measured here: 4.1x slower on TensorFlow, 10.7x on JAX, for a small MLP).

Example: "The model runs eagerly (run_eagerly=True): 83% of the step is op-by-op dispatch".
Fix: ``model.compile(..., run_eagerly=False)`` (the default). Judged before the first step
from the model; the profile then says how much of the step the dispatch takes (the step's
time outside the ops it ran: what compiled execution removes), and a TensorFlow profile
shows it by itself (``EagerLocalExecute`` ops on the training thread, trace/tf/viewer/host_work.py).
Not raised on the torch backend: Keras runs torch eagerly whatever ``run_eagerly`` says
(only ``jit_compile=True`` compiles there).
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import PYTHON_FED, RankEvidence, Situation, pct, shown
from gpudiag.analyze.gain import Gain, at_most, removed
from gpudiag.analyze.needs import Needs, OneOf
from gpudiag.trace.model.runconfig import RunConfig

ID = "run-eagerly"
# run_eagerly is a Keras compile option
NEEDS = {"compile-step": Needs(requires={"keras": OneOf(True)})}
KIND = "lint"
FRAMEWORKS = ("tensorflow", "jax")  # where Keras's run_eagerly changes how the step runs
# Of the dispatch time, the share compiled execution removes: what is left is the one call
# of the compiled program per step and the callbacks (measured with benchmarks/fix_gains.py:
# docs/remedies.md); low / point / high
REMOVED = (0.75, 0.9, 1.0)
HIGH_DISPATCH = 0.5  # half the step or more in dispatch: high severity


def check(cfg: RunConfig) -> Finding | None:
    if cfg.run_eagerly is not True or cfg.framework not in FRAMEWORKS:
        return None
    return Finding(
        ID,
        "high",
        "The model runs eagerly (run_eagerly=True): every op is dispatched from Python",
        {"run_eagerly": True},
        "lint",
    )


def dispatch_share(shares: dict[str, float], cfg: RunConfig) -> float:
    """The part of an eager step compiled execution shrinks: all but the device's own work,
    and but waits for a Python producer (generator, PyDataset), which compiling leaves. Where
    the eager step's Python lands in the profile (host 'other', or Keras's own iterator
    frames read as input) differs by backend: on JAX on an H100 a 32→64→1 MLP's eager step
    read as 81% input and 19% other, and compiled it ran 20× faster (docs/remedies.md)."""
    device = shares["compute"] + shares["transfer"] + shares["sync"]
    producer = shares["input"] if cfg.input_kind in PYTHON_FED else 0.0
    return max(0.0, 1.0 - device - producer)


def refine(f: Finding | None, ev: RankEvidence) -> Finding | None:
    """The dispatch share the profile shows; raised from a profile that shows eager ops
    where the configuration did not say."""
    if f is None:
        f = check(ev.config)
        if f is None:
            return None
        f.source = "trace"
    b = ev.breakdown
    if b is None:
        return f
    dispatch = dispatch_share(b.shares, ev.config)
    severity = "high" if dispatch >= HIGH_DISPATCH else "moderate"
    return Finding(
        ID,
        severity,
        "The model runs eagerly (run_eagerly=True): "
        f"{pct(dispatch):.0f}% of the step is op-by-op dispatch",
        {
            **f.evidence,
            "dispatch_share_pct": pct(dispatch),
            "ops_share_pct": pct(b.shares["compute"]),
        },
        f.source,
        measured=dispatch,
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    share = f.measured
    fw = "tf.function" if s.config.framework == "tensorflow" else "jax.jit"
    detail = (
        "model.compile(..., run_eagerly=False), the default: Keras then runs the step as one "
        f"compiled program ({fw}) instead of dispatching each op from Python."
    )
    if share is None:  # before the first step: not measured yet
        g = at_most(
            1.0,
            "not measured yet: bounded by the share of the step the dispatch takes, which "
            "the profile shows",
        )
        return [
            g.suggestion("Run the step compiled (run_eagerly=False)", detail, ID, "compile-step")
        ]
    d = share
    lo, mid, hi = (removed(d * x) for x in REMOVED)
    g = Gain.of(
        mid,
        lo,
        hi,
        f"{REMOVED[1]:.0%} of the op-by-op dispatch ({shown(d):.0%} of the step) removed by "
        "compiled execution; all of it at most",
    )
    return [g.suggestion("Run the step compiled (run_eagerly=False)", detail, ID, "compile-step")]
