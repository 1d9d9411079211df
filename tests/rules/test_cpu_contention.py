"""``cpu-contention``: other processes take the host CPU this run needs."""

from __future__ import annotations

import pytest

from gpudiag.analyze.evidence import HostFacts
from gpudiag.analyze.rules import cpu_contention as rule
from tests.rules.kit import evidence, situation


def found(others: float, total: float = 95.0, **config):
    h = HostFacts(cpu_total=total, cpu_others=others, cpu_process=80.0)
    return rule.detect(evidence(config=config, host=h))


@pytest.mark.parametrize(
    ("others", "total", "fires"),
    [
        (rule.OTHERS_PCT, rule.BUSY_PCT, True),
        (rule.OTHERS_PCT - 0.1, 95.0, False),  # a small neighbour
        (60.0, rule.BUSY_PCT - 0.1, False),  # cores left idle: no one is harmed
    ],
)
def test_thresholds(others, total, fires):
    assert (found(others, total) is not None) is fires


@pytest.mark.parametrize(
    ("others", "severity"),
    [(rule.OTHERS_HIGH_PCT, "high"), (rule.OTHERS_HIGH_PCT - 0.1, "moderate")],
)
def test_high_from_half_the_machine(others, severity):
    assert found(others).severity == severity


def test_not_sampled_is_not_found():
    assert rule.detect(evidence()) is None


def test_evidence_in_cores_and_percent():
    f = found(40.0, cores=4)
    assert f.source == "counters"
    assert f.evidence == {
        "cpu_other_processes_p50_pct": 40.0,
        "cpu_total_p50_pct": 95.0,
        "cpu_this_run_p50_cores": 0.8,
        "cores": 4,
    }


def test_the_gain_is_bounded_by_the_cpu_the_others_hold():
    f = found(60.0)
    (sug,) = rule.advise(f, situation(host=HostFacts(cpu_others=60.0)))
    assert sug.title == "Free the CPU from other processes"
    assert sug.expected_gain == 1.0  # not estimated: the run may not be CPU-bound
    assert sug.expected_gain_range == [1.0, 2.5]  # the whole machine back: 1 / 0.4
