"""The headline verdict (analyze/verdict.py): ``judge`` decides on the shares as judged and
takes one factor off the confidence per doubt, saying why in the reason."""

from __future__ import annotations

import pytest

from gpudiag.analyze.diagnosis import Finding
from gpudiag.analyze.verdict import (
    CONTENDED,
    RANKS_DISAGREE,
    UNREPRESENTATIVE,
    WINDOWS_DISAGREE,
    Doubts,
    Verdict,
    decide,
    judge,
)
from gpudiag.trace.model.runconfig import RunConfig

STARVED = {"input": 0.3, "transfer": 0.0, "compute": 0.6, "sync": 0.0, "other": 0.1}
CONTENTION = Finding("cpu-contention", "high", "t", {"cpu_other_processes_p50_pct": 42.0})


def test_no_doubt_is_decide_itself():
    v = judge(STARVED, RunConfig(), Doubts())
    verdict, confidence, reason = decide(STARVED)
    assert (v.verdict, v.confidence, v.reason) == (verdict, round(confidence, 3), reason)
    assert v.judged is STARVED


@pytest.mark.parametrize(
    ("doubts", "factor", "words"),
    [
        (
            Doubts(window_note="windows disagree: x", windows_disagree=True),
            WINDOWS_DISAGREE,
            "(windows disagree: x)",
        ),
        (
            Doubts(rank_verdicts={"compute-bound", "data-starved"}),
            RANKS_DISAGREE,
            "(ranks disagree: compute-bound, data-starved)",
        ),
        (Doubts(contention=CONTENTION), CONTENDED, "other processes took 42.0% of the host CPU"),
        (
            Doubts("the only profiler window fell in epoch 1", unrepresentative=True),
            UNREPRESENTATIVE,
            "(the only profiler window fell in epoch 1)",
        ),
    ],
)
def test_each_doubt_lowers_confidence_by_its_factor_and_says_so(doubts, factor, words):
    plain = judge(STARVED, RunConfig(), Doubts())
    v = judge(STARVED, RunConfig(), doubts)
    assert v.verdict == plain.verdict
    assert v.confidence == pytest.approx(plain.confidence * factor, abs=1e-3)
    assert words in v.reason


def test_doubts_multiply():
    plain = judge(STARVED, RunConfig(), Doubts())
    v = judge(
        STARVED,
        RunConfig(),
        Doubts("windows disagree: x", True, {"a", "b"}, CONTENTION),
    )
    factor = WINDOWS_DISAGREE * RANKS_DISAGREE * CONTENDED
    assert v.confidence == pytest.approx(plain.confidence * factor, abs=1e-3)


def test_one_rank_verdict_and_a_note_alone_cost_nothing():
    # windows outside the steady state are named, not counted against the verdict
    plain = judge(STARVED, RunConfig(), Doubts())
    v = judge(STARVED, RunConfig(), Doubts("the warm-up window was x", False, {"data-starved"}))
    assert v.confidence == plain.confidence
    assert v.reason.endswith("(the warm-up window was x)")


def test_python_fed_input_counts_other_as_input_wait():
    shares = {"input": 0.05, "transfer": 0.0, "compute": 0.6, "sync": 0.0, "other": 0.35}
    assert judge(shares, RunConfig(), Doubts()).verdict == "compute-bound"
    v = judge(shares, RunConfig(input_kind="generator"), Doubts())
    assert v.verdict == "data-starved"
    assert v.judged["input"] == pytest.approx(0.4)
    assert "35% of step time, counted as input wait" in v.reason


def test_inconclusive_keeps_the_reason():
    v = Verdict.inconclusive("no steps", STARVED)
    assert (v.verdict, v.confidence, v.reason) == ("inconclusive", 0.0, "no steps")
