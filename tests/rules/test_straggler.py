"""``straggler`` (a run rule): one rank or device consistently slower than the others. The
arrival-order signal across ranks is pinned in tests/analyze/test_straggler.py; here the
rule itself: which signal it takes, the per-device comparison and its thresholds, and its remedy."""

from __future__ import annotations

import numpy as np
import pytest

from gpudiag.analyze import rules
from gpudiag.analyze import thresholds as T
from gpudiag.analyze.breakdown import step_breakdown
from gpudiag.analyze.diagnosis import Finding
from gpudiag.analyze.evidence import RunEvidence
from gpudiag.analyze.gain import removed
from gpudiag.analyze.rules import straggler as rule
from gpudiag.trace.model.timeline import Kind
from tests.helpers.synth import periodic
from tests.rules.kit import situation


def work(slow: float, late_in: int, steps: int = 10) -> dict[str, np.ndarray]:
    """Three devices of 10 ms work per step; "GPU 2" is ``slow`` slower in ``late_in`` steps."""
    base = np.full(steps, 10_000.0)
    late = base.copy()
    late[:late_in] *= 1 + slow
    return {"GPU 0": base, "GPU 1": base.copy(), "GPU 2": late}


def test_is_a_run_rule():
    assert rule in rules.RUN_RULES and rule not in rules.RANK_RULES
    assert not hasattr(rule, "detect")


@pytest.mark.parametrize(
    ("slow", "fires"), [(T.STRAGGLER_MARGIN + 0.01, True), (T.STRAGGLER_MARGIN - 0.01, False)]
)
def test_margin(slow, fires):
    assert (rule.find_straggler(work(slow, 10)) is not None) is fires


@pytest.mark.parametrize(
    ("late_in", "fires"),
    [(round(10 * T.STRAGGLER_CONSISTENCY), True), (round(10 * T.STRAGGLER_CONSISTENCY) - 1, False)],
)
def test_consistency(late_in, fires):
    assert (rule.find_straggler(work(0.3, late_in)) is not None) is fires


@pytest.mark.parametrize(
    ("steps", "fires"), [(T.STRAGGLER_MIN_STEPS, True), (T.STRAGGLER_MIN_STEPS - 1, False)]
)
def test_min_steps(steps, fires):
    assert (rule.find_straggler(work(0.3, steps, steps)) is not None) is fires


@pytest.mark.parametrize(("slow", "severity"), [(0.26, "high"), (0.24, "moderate")])
def test_high_from_a_quarter_slower(slow, severity):
    f = rule.find_straggler(work(slow, 10))
    assert f.severity == severity and f.evidence["straggler"] == "GPU 2"


def replicas() -> RunEvidence:
    """One process, two devices in one step clock: GPU 0 waits 30% of each step in exposed
    collectives for GPU 1, which works the whole step."""
    tl = periodic(compute_frac=0.5, sync_frac=0.3, device="GPU 0")
    tl.add_activity(
        "GPU 1",
        Kind.COMPUTE,
        [i * 1000.0 for i in range(10)],
        [i * 1000.0 + 900 for i in range(10)],
    )
    return RunEvidence(["run"], [step_breakdown(tl)])


def test_replicas_of_one_process_are_compared_by_their_work():
    f = rule.detect_run(replicas())
    assert f is not None and f.evidence["straggler"] == "GPU 1"
    assert f.evidence["median_slowdown_pct"] == pytest.approx(100 * (1000 / 700 - 1), abs=0.1)


def test_the_arrival_order_across_ranks_comes_first():
    waited = Finding(rule.ID, "high", "rank 3 arrives last", {"straggler": "rank 3"})
    run = replicas()
    run.waited_for = waited
    assert rule.detect_run(run) is waited
    assert rule.detect_run(RunEvidence(["rank 0", "rank 1"], [], None)) is None


def test_the_gain_is_the_others_wait_when_measured_else_the_slowdown():
    ev = {"straggler": "rank 3", "others_wait_share_pct": 20.0}
    waits = Finding(rule.ID, "high", "t", ev, measured=0.2)
    (sug,) = rule.advise(waits, situation())
    assert sug.title == "Investigate rank 3"
    assert sug.expected_gain == pytest.approx(removed(0.2))
    ev = {"straggler": "GPU 1", "median_slowdown_pct": 30.0}
    slower = Finding(rule.ID, "high", "t", ev, measured=0.3)
    (sug,) = rule.advise(slower, situation())
    assert sug.expected_gain == pytest.approx(1.3)
