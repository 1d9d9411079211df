"""``cpu-saturated``: the host's cores are busy nearly all the time."""

from __future__ import annotations

import pytest

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.evidence import HostFacts
from gpudiag.analyze.rules import cpu_saturated as rule
from tests.rules.kit import evidence, situation, text, titles

LESS_WORK = "Do less CPU work per sample"


def found(cpu: float, inp: float = 0.0, device: str = "GPU 0", **host: float):
    cfg = {"device_type": "CPU" if device.startswith("CPU") else "GPU"}
    return rule.detect(
        evidence(config=cfg, host=HostFacts(cpu_total=cpu, **host), input_frac=inp, device=device)
    )


@pytest.mark.parametrize(
    ("cpu", "fires"), [(T.CPU_SATURATED, True), (T.CPU_SATURATED - 0.1, False)]
)
def test_threshold(cpu, fires):
    assert (found(cpu) is not None) is fires


def test_on_a_cpu_only_run_busy_is_expected_unless_the_input_waits():
    assert found(95.0, device="CPU:0").severity == "info"
    assert found(95.0, inp=T.INPUT_MODERATE + 0.01, device="CPU:0").severity == "high"
    assert found(95.0, inp=T.INPUT_MODERATE - 0.01, device="CPU:0").severity == "info"
    assert found(95.0).severity == "high"  # an accelerator's host should not be saturated


def test_evidence_names_this_run_and_the_others():
    f = found(95.0, cpu_process=150.0, cpu_others=20.0)
    assert f.evidence["cpu_this_run_p50_cores"] == 1.5
    assert f.evidence["cpu_other_processes_p50_pct"] == 20.0


CPU_RUN = {"device_type": "CPU", "cores": 2, "input_kind": "tf.data", "sequential_maps": 1}
NO_HEADROOM = HostFacts(cpu_total=99.0, cpu_process=195.0)  # 1.95 of 2 cores


@pytest.mark.parametrize(("inp", "advised"), [(T.INPUT_MODERATE, True), (0.04, False)])
def test_no_headroom_advises_less_work_once_input_waits(inp, advised):
    f = found(99.0, device="CPU:0")
    sugs = rule.advise(f, situation(CPU_RUN, NO_HEADROOM, input=inp))
    assert (titles(sugs) == [LESS_WORK]) is advised
    assert "Parallelise the tf.data map" not in titles(sugs)  # no core left to spread over


def test_cache_is_not_advised_when_the_pipeline_caches():
    f = found(99.0, device="CPU:0")
    assert "ds.cache()" in text(rule.advise(f, situation(CPU_RUN, NO_HEADROOM, input=0.3)))
    cached = {**CPU_RUN, "cache": True}
    sugs = rule.advise(f, situation(cached, NO_HEADROOM, input=0.3))
    assert titles(sugs) == [LESS_WORK] and "ds.cache()" not in text(sugs)
