"""``host-overhead``: steps so short that the host's per-step work (Python, Keras callbacks,
dispatch of the step function) is a large share of them.

Why it costs time: that work is paid once per dispatch whatever the step does; on a 1 ms step
1 ms of it halves the throughput.

Example: "Per-step host overhead is 40.0% of 1.0 ms steps". Fix:
``model.compile(steps_per_execution=8)`` runs several steps per dispatch and pays the cost
once; not raised when ``steps_per_execution`` > 1, nor for Python-fed input (the host time is
the input there).
"""

from __future__ import annotations

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.gain import Gain, batch_scaled
from gpudiag.analyze.needs import Breaks, Needs, OneOf

ID = "host-overhead"
# steps_per_execution is a Keras compile option, and Keras 3 under a MirroredStrategy fails
# in the first step with it (TF 2.21, Keras 3.15: "You must feed a value for placeholder
# tensor .../while/cond/Placeholder"; the issue is open)
NEEDS = {
    "steps-per-execution": Needs(
        requires={"keras": OneOf(True)},
        breaks=(
            Breaks(
                {
                    "framework": OneOf("tensorflow"),
                    "keras_major": OneOf(3),
                    "strategy": OneOf("mirrored", "multi-worker-mirrored"),
                },
                "Keras 3 fails in the first step with steps_per_execution > 1 under "
                "MirroredStrategy",
                "https://github.com/keras-team/keras/issues/19246",
            ),
        ),
        check={"keras": "that Keras's fit runs this loop (steps_per_execution is a Keras option)"},
    )
}
SHORT_STEP_MS = 10.0  # steps this short are where per-step host costs (~1 ms) start to show
OVERHEAD_SHARE = 0.30  # host 'other' time worth amortising
STEPS = 8  # the steps_per_execution the advice proposes
KERAS = ("tensorflow", "jax", "torch")
AMORTISED = 0.9  # share of host 'other' time paid per dispatch (measured: 3.0x for o = 80%)


def detect(ev: RankEvidence) -> Finding | None:
    cfg, b = ev.config, ev.breakdown
    if b is None or (cfg.steps_per_execution or 1) > 1 or cfg.framework not in KERAS:
        return None
    if cfg.python_ops or cfg.input_kind in ("generator", "pydataset"):
        return None  # host time there is mostly Keras waiting on the Python input
    if cfg.run_eagerly:
        return None  # op-by-op dispatch, which run-eagerly names: several steps per call
        # of an uncompiled step dispatch the same ops
    step_ms = b.step_time_us / 1000.0
    other = b.shares["other"]
    if step_ms >= SHORT_STEP_MS or other < OVERHEAD_SHARE:
        return None
    if b.shares["input"] >= T.INPUT_DOMINANT:
        return None  # a starved step waits for input: fewer dispatches do not feed it faster
    return Finding(
        ID,
        "moderate",
        f"Per-step host overhead is {pct(other)}% of {step_ms:.1f} ms steps",
        {
            "step_median_ms": round(step_ms, 3),
            "host_other_share_pct": pct(other),
            "steps_per_execution": cfg.steps_per_execution or 1,
        },
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    other = s.shares["other"]
    # nearly all host time between short steps is per-dispatch work (Keras's Python step
    # loop, callbacks, the iterator's get-next): the point counts AMORTISED of it, the range
    # from half to all of it (calibrated in docs/remedies.md)
    g = Gain.of(
        batch_scaled(other * AMORTISED, STEPS),
        batch_scaled(other * 0.5, STEPS),
        batch_scaled(other, STEPS),
        f"host overhead {other:.0%} of step time paid once per {STEPS} steps",
    )
    return [
        g.suggestion(
            f"Run {STEPS} steps per execution",
            f"model.compile(..., steps_per_execution={STEPS}): Keras dispatches {STEPS} steps at "
            "once and runs per-batch callbacks once per execution.",
            ID,
            "steps-per-execution",
        )
    ]
