"""``recompilation``: counted from a timeline's compile spans, on both sides of each
threshold; remedies by what changed and what the run already does; the headline."""

from __future__ import annotations

import numpy as np
import pytest

from gpudiag.analyze import diagnose
from gpudiag.analyze.breakdown import profiled_steps
from gpudiag.analyze.compile_time import compile_facts, varying_dims
from gpudiag.analyze.evidence import HostFacts
from gpudiag.analyze.rules import recompilation as rule
from gpudiag.record.writer import TraceWriter
from gpudiag.trace.load import load_file
from gpudiag.trace.model.compiles import CompileEvent
from gpudiag.trace.model.timeline import Kind, Metadata, Timeline
from tests.rules.kit import evidence, situation, titles

STEP_US = 10_000.0  # 10 ms steps


def compiling(
    late: int,
    compile_s: float,
    steps: int = 40,
    shapes: list[list[list[int]]] | None = None,
    what: str = "jit(train_step)",
) -> Timeline:
    """A run of ``steps`` 10 ms steps (6 ms of compute each) whose first step compiles and
    whose next ``late`` steps compile again, each first for ``compile_s``, with ``shapes``."""
    tl = Timeline()
    t = 0.0
    starts, ends, cs, ce = [], [], [], []
    for i in range(steps):
        starts.append(t)
        if i <= late:
            shp = shapes[i % len(shapes)] if shapes else None
            tl.compiles.add(CompileEvent(t, t + compile_s * 1e6, what, "compile", "test", shp))
            t += compile_s * 1e6
        cs.append(t)
        ce.append(t + 0.6 * STEP_US)
        t += STEP_US
        ends.append(t)
    tl.add_activity("GPU 0", Kind.COMPUTE, cs, ce)
    tl.add_steps(range(steps), starts, ends)
    return tl.freeze()


def lengths(n: int, batch: int = 32) -> list[list[list[int]]]:
    return [[[batch, 20 + 10 * i], [batch]] for i in range(n)]


def test_three_recompilations_are_a_pattern_two_are_not():
    many = compiling(rule.MIN_RECOMPILES, 1.0, shapes=lengths(8))
    few = compiling(rule.MIN_RECOMPILES - 1, 1.0, shapes=lengths(8))
    assert rule.detect(evidence(many)) is not None
    assert rule.detect(evidence(few)) is None


@pytest.mark.parametrize(
    ("share", "severity"),
    [
        (rule.MODERATE_SHARE * 0.8, None),
        (rule.MODERATE_SHARE * 1.3, "moderate"),
        (rule.HIGH_SHARE * 1.2, "high"),
    ],
)
def test_share_thresholds(share, severity):
    # 40 steps of 10 ms = 0.4 s steady; 4 recompilations + the first take the rest
    late = 4
    steady = 40 * STEP_US / 1e6
    # recompile_s / (steady + (late + 1) * c) = share, solved for c
    c = share * steady / (late - share * (late + 1))
    f = rule.detect(evidence(compiling(late, c, shapes=lengths(8))))
    assert (f.severity if f else None) == severity
    if f:
        assert f.evidence["recompile_share_pct"] == pytest.approx(100 * share, abs=0.5)


def test_a_fixed_shape_run_compiles_once_and_is_not_reported():
    tl = compiling(0, 2.0, shapes=[[[32, 64], [32]]])  # one long compile: most of the fit
    f = compile_facts(tl)
    assert f is not None and f.share > 0.8 and f.recompiles == 0
    assert rule.detect(evidence(tl)) is None


def test_an_evaluations_first_compilation_is_warm_up_too():
    tl = compiling(0, 0.5, shapes=[[[32, 64]]])
    for i in (10, 20, 30):  # test_step compiled at each evaluation: once, then cached
        t = float(tl.steps.start[i])
        tl.compiles.add(CompileEvent(t, t + (0.5e6 if i == 10 else 0.0), "jit(test_step)"))
    f = compile_facts(tl)
    assert f is not None and f.recompiles == 2 and f.recompile_s == 0.0


def test_what_changed_is_named():
    dims = varying_dims([[[32, 20], [32]], [[32, 90], [32]], [[4, 90], [4]]])
    assert [(d.axis, d.values) for d in dims] == [(0, [4, 32]), (1, [20, 90])]
    assert "batch size" in dims[0].describe and "dimension 1" in dims[1].describe
    open_dims = varying_dims([[[None, None], [None]]])  # TensorFlow's traced signature
    assert [d.axis for d in open_dims] == [1] and "left open" in open_dims[0].describe


def test_pad_and_bucket_for_lengths_gain_bounded_by_the_compile_time_removed():
    f = rule.detect(evidence(compiling(10, 1.0, shapes=lengths(11))))
    s = rule.advise(f, situation({"framework": "jax", "input_kind": "pydataset"}))
    assert titles(s)[:2] == [
        "Bucket the sequence lengths to 4 sizes",
        "Pad every batch to one length 120",
    ]
    fit, total, n = (f.evidence[k] for k in ("fit_s", "compile_s", "compilations"))
    bound = fit / (fit - (total - total / n))  # every compilation but one goes, at most
    for sug in s[:2]:
        assert sug.expected_gain_range[-1] <= round(bound, 2) + 0.01
        assert sug.expected_gain <= sug.expected_gain_range[-1] + 0.01
    pad = s[1]
    assert pad.expected_gain == pytest.approx(bound, abs=0.01)  # launch-bound: padding free
    computing = rule.advise(f, situation({"framework": "jax"}, compute=0.8))
    assert computing[1].expected_gain < bound - 0.1  # the padded steps compute more
    assert "__getitem__" in pad.detail
    tfdata = rule.advise(f, situation({"framework": "tensorflow", "input_kind": "tf.data"}))
    assert "padded_batch" in " ".join(x.detail for x in tfdata)
    assert "bucket_by_sequence_length" in " ".join(x.detail for x in tfdata)


def test_a_short_last_batch_is_dropped_unless_it_already_is():
    shapes = [[[32, 8]], [[4, 8]], [[16, 8]], [[8, 8]], [[2, 8]]]
    f = rule.detect(evidence(compiling(4, 1.0, shapes=shapes)))
    assert f.evidence["batch_size_only"] is True
    s = rule.advise(f, situation({"framework": "jax", "input_kind": "tf.data"}))
    assert "Keep every batch the same size" in titles(s)
    assert "drop_remainder=True" in s[0].detail
    kept = rule.advise(f, situation({"framework": "jax", "drop_remainder": True}))
    assert "Keep every batch the same size" not in titles(kept)


def test_jit_compile_off_only_for_tensorflow_xla_on_a_cpu():
    f = rule.detect(evidence(compiling(10, 1.0, shapes=lengths(11))))
    on_cpu = {"framework": "tensorflow", "jit_compile": True, "device_type": "CPU"}
    assert "Compile without XLA" in titles(rule.advise(f, situation(on_cpu)))
    for cfg in (
        {**on_cpu, "jit_compile": False},  # not in place: it is what compiled
        {**on_cpu, "device_type": "GPU"},  # XLA may buy speed there
        {**on_cpu, "framework": "jax"},  # JAX has no uncompiled fast path
    ):
        assert "Compile without XLA" not in titles(rule.advise(f, situation(cfg)))


def test_persistent_cache_for_jax_when_the_shapes_are_few():
    few = rule.detect(evidence(compiling(5, 1.0, shapes=lengths(6))))
    many = rule.detect(evidence(compiling(20, 1.0, shapes=lengths(21))))
    jax = {"framework": "jax"}
    title = "Keep compiled programs across runs"
    assert title in titles(rule.advise(few, situation(jax)))
    assert title not in titles(rule.advise(many, situation(jax)))
    assert title not in titles(rule.advise(few, situation({"framework": "tensorflow"})))


def test_compiling_steps_are_not_read_as_step_overhead():
    tl = compiling(5, 1.0, shapes=lengths(6))
    tl.steps.profiled[:] = True
    analysed = profiled_steps(tl)
    assert analysed.size == 40 - 6 and not np.isin(np.arange(6), analysed).any()


def test_gil_bursts_during_compilation_are_left_out():
    tl = compiling(5, 1.0, shapes=lengths(6))
    inside = float(tl.compiles.events[2].end) - 1e5
    outside = float(tl.steps.end[-1]) + 1e6  # a burst after the last compilation
    tl.add_counter("gil_lateness", "host", [inside, outside], [300.0, 1.0])
    assert HostFacts.of(tl).gil_p95 == pytest.approx(1.0)


def test_the_headline_says_recompilation_first(tmp_path):
    tl = compiling(10, 1.0, shapes=lengths(11))
    tl.steps.profiled[:] = True
    d = diagnose([tl])
    assert d.reason.startswith("recompilation: the step compiled 11 times")
    assert "between compilations" in d.reason
    assert d.verdict in ("compute-bound", "inconclusive")


def test_compilations_survive_the_trace_file(tmp_path):
    path = str(tmp_path / "t.json")
    tl = compiling(4, 0.2, shapes=lengths(5))
    with TraceWriter(path, Metadata(producer="gpudiag", framework="jax")) as w:
        for i in range(len(tl.steps)):
            w.step(i, float(tl.steps.start[i]), float(tl.steps.end[i]))
        for ev in tl.compiles.events:
            w.compile(ev)
    (back,) = load_file(path)
    assert [(e.what, e.kind, e.shapes) for e in back.compiles.events] == [
        (e.what, e.kind, e.shapes) for e in tl.compiles.events
    ]
    assert compile_facts(back).recompiles == 4
