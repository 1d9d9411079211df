"""``python-generator``: Python code produces the input under the GIL."""

from __future__ import annotations

import pytest

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.evidence import HostFacts
from gpudiag.analyze.rules import python_generator as rule
from tests.rules.kit import detect, evidence, lint, situation, titles

BUSY = HostFacts(cpu_process=100.0)  # one core kept busy: Python computing, not waiting


@pytest.mark.parametrize(
    ("config", "fires"),
    [
        ({"input_kind": "generator"}, True),
        ({"input_kind": "pydataset", "workers": 1}, True),
        ({"input_kind": "tf.data", "python_ops": True}, True),
        ({"input_kind": "tf.data"}, False),
        # as many worker processes as cores: the GIL is not shared
        ({"input_kind": "pydataset", "workers": 3, "use_multiprocessing": True, "cores": 4}, True),
        ({"input_kind": "pydataset", "workers": 4, "use_multiprocessing": True, "cores": 4}, False),
        ({"input_kind": "pydataset", "workers": 4, "use_multiprocessing": False, "cores": 4}, True),
    ],
)
def test_fires_on_python_input_sharing_the_gil(config, fires):
    assert (detect(rule, lint(**config)) is not None) is fires


@pytest.mark.parametrize(
    ("inp", "severity"), [(T.INPUT_HIGH + 0.01, "high"), (T.INPUT_HIGH - 0.01, "moderate")]
)
def test_severity_from_the_input_share(inp, severity):
    f = detect(rule, evidence(config={"input_kind": "tf.data", "python_ops": True}, input_frac=inp))
    assert f.severity == severity


def test_generator_input_counts_host_other_time_as_input_wait():
    # Keras pulls a generator's batches in Python: that wait lands in 'other'
    f = detect(rule, evidence(config={"input_kind": "generator"}, compute_frac=0.5))
    assert f.evidence["input_share_pct"] == pytest.approx(50.0)


@pytest.mark.parametrize(("inp", "advised"), [(T.INPUT_MODERATE, True), (0.04, False)])
def test_advises_worker_processes_once_input_wait_is_moderate(inp, advised):
    cfg = {"input_kind": "generator", "cores": 4}
    sugs = rule.advise(detect(rule, lint(**cfg)), situation(cfg, BUSY, input=inp))
    assert ("Run the Python input in 4 worker processes" in titles(sugs)) is advised


def test_withheld_when_the_pydataset_already_has_a_process_per_core():
    cfg = {"input_kind": "pydataset", "workers": 4, "use_multiprocessing": True, "cores": 4}
    f = detect(rule, lint(input_kind="generator"))
    assert not any(
        "worker processes" in t for t in titles(rule.advise(f, situation(cfg, BUSY, input=0.4)))
    )
    threads = {**cfg, "use_multiprocessing": False}
    assert any(
        "worker processes" in t for t in titles(rule.advise(f, situation(threads, BUSY, input=0.4)))
    )


def test_a_py_function_stage_in_the_profile_raises_it_where_the_lint_did_not():
    ev = evidence(config={"input_kind": "tf.data", "python_ops": True}, input_frac=0.5)
    assert rule.refine(None, ev) is None  # the lint's verdict on the configuration stands
    ev.timeline.pipeline["py_function"] = True
    f = rule.refine(None, ev)
    assert f is not None and f.severity == "high" and "input_share_pct" in f.evidence
