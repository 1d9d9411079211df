"""``gil-pressure``: Python threads fight for the GIL (in-process probe late, reference not)."""

from __future__ import annotations

import pytest

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.evidence import HostFacts
from gpudiag.analyze.rules import gil_pressure as rule
from tests.rules.kit import evidence, situation, titles

P95 = rule.GIL_P95_MS


def host(p95=3.0, ref=0.2, typical=0.2, cpu=50.0) -> HostFacts:
    return HostFacts(cpu_total=cpu, gil_p95=p95, gil_reference_p95=ref, gil_typical=typical)


def found(h: HostFacts, inp: float = 0.0):
    return rule.detect(evidence(host=h, input_frac=inp, compute_frac=0.5))


@pytest.mark.parametrize(("p95", "fires"), [(P95 + 0.1, True), (P95 - 0.1, False)])
def test_probe_lateness_threshold(p95, fires):
    assert (found(host(p95=p95)) is not None) is fires


@pytest.mark.parametrize(
    ("ratio", "fires"),
    [(rule.GIL_REFERENCE_RATIO + 0.1, True), (rule.GIL_REFERENCE_RATIO - 0.1, False)],
)
def test_must_be_later_than_the_out_of_process_reference(ratio, fires):
    # the reference as late: CPU contention delays both, not the GIL
    assert (found(host(p95=6.0, ref=6.0 / ratio)) is not None) is fires


@pytest.mark.parametrize(
    ("typical", "inp", "fires"),
    [
        (rule.GIL_TYPICAL_MS + 0.1, 0.0, True),  # a thread runs Python non-stop
        (rule.GIL_TYPICAL_MS - 0.1, 0.0, False),  # a tail only: the CPU is just busy
        (rule.GIL_TYPICAL_MS - 0.1, T.INPUT_MODERATE + 0.01, True),  # and the device waits
        (rule.GIL_TYPICAL_MS - 0.1, T.INPUT_MODERATE - 0.01, False),
    ],
)
def test_on_a_saturated_cpu_the_lateness_must_be_typical_or_cost_input(typical, inp, fires):
    h = host(p95=6.0, typical=typical, cpu=T.CPU_SATURATED + 1)
    assert (found(h, inp) is not None) is fires
    below = host(p95=6.0, typical=typical, cpu=T.CPU_SATURATED - 1)
    assert found(below, inp) is not None  # below saturation the tail alone counts


@pytest.mark.parametrize(("p95", "severity"), [(2 * P95, "high"), (2 * P95 - 0.1, "moderate")])
def test_high_at_twice_the_threshold(p95, severity):
    assert found(host(p95=p95)).severity == severity


def test_not_sampled_is_not_found():
    assert found(HostFacts()) is None


def test_advises_processes_not_threads_for_python_input():
    f = found(host())
    cfg = {"input_kind": "generator", "cores": 4}
    assert rule.advise(f, situation(cfg, input=0.04)) == []
    sugs = rule.advise(f, situation(cfg, findings=("gil-pressure",), input=0.4))
    assert "Run the Python input in 4 worker processes" in titles(sugs)


def test_withheld_when_processes_already_run_the_input():
    f = found(host())
    cfg = {"input_kind": "pydataset", "workers": 4, "use_multiprocessing": True, "cores": 4}
    sugs = rule.advise(f, situation(cfg, findings=("gil-pressure",), input=0.4))
    assert not any("worker processes" in t for t in titles(sugs))
