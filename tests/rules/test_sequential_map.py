"""``sequential-map``: a tf.data map without num_parallel_calls."""

from __future__ import annotations

import pytest

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.rules import sequential_map as rule
from tests.rules.kit import detect, evidence, lint, situation, titles

SEQ = {"input_kind": "tf.data", "sequential_maps": 1, "parallel_maps": 0, "cores": 4}
PARALLEL = "Parallelise the tf.data map"


def test_a_lint_from_the_configuration_alone():
    f = detect(rule, lint(**SEQ))
    assert f is not None and f.source == "lint" and f.severity == "moderate"
    assert detect(rule, lint(**{**SEQ, "sequential_maps": 0, "parallel_maps": 2})) is None


@pytest.mark.parametrize(
    ("inp", "severity"), [(T.INPUT_HIGH + 0.01, "high"), (T.INPUT_HIGH - 0.01, "moderate")]
)
def test_high_from_the_input_high_share_on(inp, severity):
    f = detect(rule, evidence(config=SEQ, input_frac=inp, compute_frac=0.5))
    assert f.severity == severity and f.source == "trace"
    assert f.evidence["input_share_pct"] == pytest.approx(100 * inp, abs=0.1)


@pytest.mark.parametrize(("inp", "advised"), [(T.INPUT_MODERATE, True), (0.04, False)])
def test_advises_only_once_input_wait_is_moderate(inp, advised):
    f = detect(rule, lint(**SEQ))
    sugs = rule.advise(f, situation(SEQ, input=inp, compute=0.6))
    assert (PARALLEL in titles(sugs)) is advised


def test_the_parallel_map_is_spread_over_the_cores():
    f = detect(rule, lint(**SEQ))
    (sug,) = [s for s in rule.advise(f, situation(SEQ, input=0.5)) if s.title == PARALLEL]
    assert "this run has 4 cores" in sug.detail
    assert sug.expected_gain == pytest.approx(2.0)  # min(1 / (1 - 0.5), 4 workers)


def test_withheld_when_every_map_is_parallel():
    f = detect(rule, lint(**SEQ))
    done = {**SEQ, "sequential_maps": 0, "parallel_maps": 1}
    assert PARALLEL not in titles(rule.advise(f, situation(done, input=0.5)))


def test_not_raised_when_the_profile_shows_another_stage_holding_the_time():
    other = {**SEQ, "input_stage": "producer", "input_stage_name": "Iterator::Model::Prefetch"}
    assert detect(rule, evidence(config=other, input_frac=0.6, compute_frac=0.3)) is None
    here = {**SEQ, "input_stage": "map-sequential", "input_stage_name": "Iterator::Model::Map"}
    assert detect(rule, evidence(config=here, input_frac=0.6, compute_frac=0.3)) is not None


def test_a_map_stage_in_the_profile_raises_it_where_the_lint_did_not():
    # the lint judged the configuration the recorder knew (no dataset described); the TF
    # profile shows a sequential Map stage, which the rank's configuration then carries
    ev = evidence(config={"sequential_maps": 1}, input_frac=0.5)
    assert rule.refine(None, ev) is None  # the lint's verdict on the configuration stands
    ev.timeline.pipeline["sequential_map"] = True
    f = rule.refine(None, ev)
    assert f is not None and (f.severity, f.source) == ("high", "trace")
