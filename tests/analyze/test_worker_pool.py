"""The worker pool Keras starts again every epoch (analyze/worker_pool.py), held against the
H100 recordings (sample_traces/h100_keras_jax): a PyDataset with 8 worker processes over
40-batch epochs ran 0.40 s an epoch against 0.19–0.34 s with none, where the step model
alone had promised 13.6× for 16 workers."""

from __future__ import annotations

import gzip
import json

import pytest

from gpudiag.analyze import diagnose
from gpudiag.analyze.fit_account import fit_account
from gpudiag.analyze.gain import Gain
from gpudiag.analyze.worker_pool import START_GPU_S, choose, pool_s
from gpudiag.trace.load import load_file
from tests.helpers.fit_synth import fit_timeline
from tests.helpers.paths import H100
from tests.rules.kit import situation


def recorded(name: str):
    (tl,) = load_file(str(H100 / f"{name}.gpudiag.json.gz"))
    return tl


def epoch_s(name: str) -> float:
    """The later epochs' wall time of an un-diagnosed run (epoch 1 holds compilation)."""
    with gzip.open(H100 / "runs.json.gz") as f:
        runs = json.load(f)
    run = next(r for r in runs if r["name"] == name)
    return sum(run["epoch_s"][1:]) / len(run["epoch_s"][1:])


def test_the_step_model_alone_promised_what_the_gpu_did_not_give():
    acc = fit_account(recorded("starved"))
    t = acc.steady_epoch_s
    step_gain = 8 * 0.85  # 8 worker processes, as the step model counts them
    predicted = t / (t / step_gain + pool_s(8, START_GPU_S[0]))
    measured = epoch_s("starved") / epoch_s("starved_workers-8")
    assert predicted < 1.0 and measured < 1.0  # slower per epoch, both


def test_no_per_epoch_worker_remedy_where_short_epochs_cannot_repay_the_pool():
    d = diagnose([recorded("starved")])
    (sug,) = [s for s in d.suggestions if s.title.startswith("Run the Python input")]
    assert sug.title.endswith("in fewer, longer epochs")
    assert "num_batches return None" in sug.detail
    assert sug.expected_gain < 3.0  # not 13.6×
    assert "once per fit of 3 epochs" in sug.basis


def test_the_epoch_start_of_a_running_pool_is_named_and_measured():
    d = diagnose([recorded("starved_workers8")])
    f = d.finding("epoch-start-wait")
    assert f is not None and f.evidence["cause"] == "worker-pool"
    assert f.evidence["per_epoch_s"] == pytest.approx(0.41, abs=0.1)
    assert "pool of 8 worker processes started and stopped every epoch" in f.title
    assert d.suggestions[0].title == "Fewer, longer epochs"
    more = [s for s in d.suggestions if s.title.startswith("Run the Python input")]
    assert all(s.expected_gain < 1.5 for s in more)  # more workers: more pool to start


def test_long_epochs_keep_the_step_gain():
    tl = fit_timeline(epochs=2, steps=2000, step_s=0.01, compile_s=0.1)
    s = situation({"input_kind": "pydataset", "workers": 1}, other=0.0, input=0.9)
    s.fit = fit_account(tl)

    def gain_for(k: int) -> Gain:
        return Gain.of(k * 0.85, k * 0.85, float(k), "step gain")

    n, g, longer = choose(s, 8, 1, gain_for)
    assert (n, longer) == (8, False)
    assert g.point == pytest.approx(20 / (20 / 6.8 + pool_s(8, START_GPU_S[0])), rel=1e-6)
    assert "again every epoch" in g.basis


def test_without_a_fit_account_the_step_gain_stands():
    s = situation({"input_kind": "pydataset"}, input=0.9)
    g = Gain.of(3.0, 2.0, 4.0, "step gain")
    assert choose(s, 8, 1, lambda k: g) == (8, g, False)
