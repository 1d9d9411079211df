"""``compute-bound-options``: a compute-bound run, told what would still help and what not."""

from __future__ import annotations

import numpy as np

from gpudiag.analyze import diagnose
from gpudiag.analyze.rules import compute_bound_options as rule
from gpudiag.trace.model.runconfig import RunConfig
from tests.helpers import synth
from tests.rules.kit import evidence


def _cpu_conv(cpu_process_pct: float, other_frac: float, steps_per_execution: int = 1):
    """A cached, compute-bound conv net on a 2-core CPU: 260 ms steps, compute the rest of
    the step after ``other_frac`` of host time; the process keeps cpu_process_pct% busy."""
    tl = synth.periodic(steps=8, step_us=260_000.0, compute_frac=1.0 - other_frac, device="CPU")
    tl.meta.device_type = "CPU"
    tl.meta.config = RunConfig(
        framework="tensorflow",
        api="keras",
        device_type="CPU",
        training=True,
        steps_per_execution=steps_per_execution,
        input_kind="tf.data",
        cache=True,
        prefetch=True,
        global_batch=32,
        cores=2,
    )
    ts = np.linspace(0.0, 8 * 260_000.0, 40)
    tl.add_counter("cpu_process", "host", ts, np.full(ts.size, cpu_process_pct))
    tl.add_counter("cpu_others", "host", ts, np.full(ts.size, 1.0))
    return tl


def test_compute_bound_cpu_run_says_what_would_help():
    d = diagnose([_cpu_conv(cpu_process_pct=120.0, other_frac=0.04)])
    assert d.verdict == "compute-bound"
    f = d.finding("compute-bound-options")
    assert f is not None
    assert f.evidence["bigger_batch"].startswith("offered")
    assert "host-overhead" in f.evidence["steps_per_execution"]  # 260 ms steps: not host-bound
    titles = [s.title for s in d.suggestions]
    assert "Try a 2x bigger batch" in titles and "Train on a GPU or TPU" in titles
    acc = next(s for s in d.suggestions if s.title == "Train on a GPU or TPU")
    assert "not measured" in acc.basis and acc.expected_gain_range[-1] > 10


def test_options_not_offered_say_why():
    # every core busy and almost no fixed cost: a bigger batch cannot pay; spe already on
    d = diagnose([_cpu_conv(cpu_process_pct=200.0, other_frac=0.01, steps_per_execution=4)])
    f = d.finding("compute-bound-options")
    assert f.evidence["bigger_batch"].startswith("not offered")
    assert "under 2%" in f.evidence["bigger_batch"]
    assert f.evidence["steps_per_execution"] == "not offered: already in place (4)"
    assert [s.title for s in d.suggestions] == ["Train on a GPU or TPU"]


def test_compute_bound_gpu_run_is_not_sent_to_an_accelerator():
    tl = synth.periodic(steps=8, step_us=50_000.0, compute_frac=0.95)
    tl.meta.device_type = "GPU"
    tl.meta.framework = "pytorch"
    f = diagnose([tl]).finding("compute-bound-options")
    assert f is not None and f.evidence["accelerator"].startswith("not offered: already on")
    assert "a Keras option" in f.evidence["steps_per_execution"]


def test_only_on_a_compute_bound_training_run():
    assert rule.detect(evidence(compute_frac=0.95)) is not None
    assert rule.detect(evidence(compute_frac=0.3, input_frac=0.5)) is None  # data-starved
    assert rule.detect(evidence(compute_frac=0.95, config={"training": False})) is None
