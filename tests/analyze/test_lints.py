"""Lints (analyze/lints.py): judged once per configuration, printed once,
recorded with their fixes, and handed to ``diagnose``."""

from __future__ import annotations

import numpy as np
import pytest

from gpudiag.analyze import diagnose
from gpudiag.analyze.diagnosis import Finding
from gpudiag.analyze.lints import judge
from gpudiag.trace.model.runconfig import RunConfig
from gpudiag.trace.model.timeline import Timeline


def test_judge_names_the_fix_of_each_finding():
    pre = judge(RunConfig(replicas=2, global_batch=33, input_kind="tf.data"))
    assert [f.id for f in pre.findings] == ["batch-not-multiple-of-replicas"]
    (rec,) = pre.recorded()
    assert rec.id == "batch-not-multiple-of-replicas" and "32 or 34" in rec.fix
    assert judge(RunConfig(replicas=2, global_batch=32)).findings == []


def test_diagnose_takes_the_handed_findings_for_a_trace_without_configuration():
    pre = [Finding("sequential-map", "moderate", "1 tf.data map(s) run sequentially", {}, "lint")]
    assert "sequential-map" in [f.id for f in diagnose([Timeline()], lints=pre).findings]
    assert "sequential-map" not in [f.id for f in diagnose([Timeline()]).findings]


def _recorded(config: RunConfig, input_frac: float) -> Timeline:
    """A trace whose header records ``config``, its steps waiting ``input_frac`` on input."""
    from tests.helpers.synth import periodic

    tl = periodic(input_frac=input_frac, compute_frac=0.3)
    tl.meta.config = config
    return tl


def test_diagnose_never_judges_the_lints_again_when_handed_them(monkeypatch):
    from gpudiag.analyze import rules

    cfg = RunConfig(input_kind="tf.data", python_ops=True)
    pre = judge(cfg).findings
    monkeypatch.setattr(rules, "lint", lambda config: pytest.fail("lints judged again"))
    # the recorder judged the configuration before the first step: its verdict stands
    assert "python-generator" not in diagnose([_recorded(cfg, 0.5)], lints=[]).finding_ids
    found = {f.id: f for f in diagnose([_recorded(cfg, 0.5)], lints=pre).findings}
    # the trace still refines the lint: the measured input share sets its severity
    f = found["python-generator"]
    assert (f.severity, f.source, f.evidence["input_share_pct"]) == ("high", "trace", 50.0)
    low = {f.id: f for f in diagnose([_recorded(cfg, 0.1)], lints=pre).findings}
    assert low["python-generator"].severity == "moderate"
    assert pre[0].severity == "moderate" and pre[0].source == "lint"  # handed ones untouched


def test_without_handed_lints_diagnose_judges_them_once_per_rank(monkeypatch):
    from gpudiag.analyze import rules

    calls: list[RunConfig] = []
    real = rules.lint
    monkeypatch.setattr(rules, "lint", lambda config: calls.append(config) or real(config))
    cfg = RunConfig(input_kind="generator")
    d = diagnose([_recorded(cfg, 0.5), _recorded(cfg, 0.5)])
    assert len(calls) == 2 and all(c.input_kind == "generator" for c in calls)
    assert d.finding_ids.count("python-generator") == 1


@pytest.mark.train
@pytest.mark.timeout(240)
def test_a_fit_judges_its_configuration_once_and_prints_it_once(tmp_path, monkeypatch, capfd):
    keras = pytest.importorskip("keras")
    tf = pytest.importorskip("tensorflow")
    from gpudiag import DiagnoseCallback
    from gpudiag.analyze import lints

    calls = []
    real = lints.rules.lint
    monkeypatch.setattr(lints.rules, "lint", lambda cfg: calls.append(cfg) or real(cfg))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(160, 8)).astype("float32")
    y = rng.normal(size=(160, 1)).astype("float32")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).map(lambda a, b: (a * 2, b)).batch(16)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    cb = DiagnoseCallback(
        trace_path=str(tmp_path / "t.json"), dataset=ds, model=model, report=False, profile=False
    )
    model.fit(ds, epochs=2, verbose=0, callbacks=[cb])
    err = capfd.readouterr().err
    assert len(calls) == 1  # the same configuration before fit and when it begins
    assert err.count("checks before the first step") == 1
    assert "sequential-map" in err
    assert [f.id for f in cb.lint_findings] == [f.id for f in cb.lints.findings]
    assert "sequential-map" in cb.diagnosis.finding_ids
