"""``host-overhead``: steps so short that per-step host work is a large share of them."""

from __future__ import annotations

import pytest

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.gain import batch_scaled
from gpudiag.analyze.rules import host_overhead as rule
from tests.rules.kit import evidence, situation

KERAS = {"framework": "tensorflow", "input_kind": "tf.data"}


def found(step_ms: float = 1.0, other: float = 0.4, inp: float = 0.0, **config):
    ev = evidence(
        config={**KERAS, **config},
        step_us=1000 * step_ms,
        input_frac=inp,
        compute_frac=1 - other - inp,
    )
    return rule.detect(ev)


@pytest.mark.parametrize(
    ("step_ms", "fires"), [(rule.SHORT_STEP_MS - 0.5, True), (rule.SHORT_STEP_MS, False)]
)
def test_short_step_threshold(step_ms, fires):
    assert (found(step_ms) is not None) is fires


@pytest.mark.parametrize(
    ("other", "fires"), [(rule.OVERHEAD_SHARE + 0.01, True), (rule.OVERHEAD_SHARE - 0.01, False)]
)
def test_overhead_share_threshold(other, fires):
    assert (found(other=other) is not None) is fires


@pytest.mark.parametrize(
    ("inp", "fires"), [(T.INPUT_DOMINANT - 0.01, True), (T.INPUT_DOMINANT + 0.01, False)]
)
def test_a_starved_step_is_not_host_overhead(inp, fires):
    assert (found(other=0.4, inp=inp) is not None) is fires


@pytest.mark.parametrize(
    "config",
    [
        {"framework": "pytorch"},  # Keras's step loop only
        {"input_kind": "generator"},  # host time there is Keras waiting on Python input
        {"python_ops": True},
    ],
)
def test_only_keras_steps_with_native_input(config):
    assert found(**config) is None


def test_advises_steps_per_execution_amortising_the_host_time():
    f = found()
    (sug,) = rule.advise(f, situation(KERAS, other=0.4, compute=0.6))
    assert sug.title == f"Run {rule.STEPS} steps per execution"
    assert sug.expected_gain == pytest.approx(
        batch_scaled(0.4 * rule.AMORTISED, rule.STEPS), abs=0.01
    )


def test_withheld_when_steps_per_execution_is_on():
    assert found(steps_per_execution=rule.STEPS) is None
    assert found(steps_per_execution=2) is None
