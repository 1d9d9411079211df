"""Static pipeline and replica lints: rules fed by the run configuration (no training)."""

from __future__ import annotations

import pytest

from gpudiag.analyze import rules
from gpudiag.record.run_facts import InputFacts, describe_input, run_config


def lint(facts, replicas=1, params=None, has_batchnorm=False):
    return rules.lint(run_config(facts, replicas=replicas, params=params, batchnorm=has_batchnorm))


def ids(findings):
    return {f.id: f for f in findings}


def test_ragged_batch_on_replicas_with_batchnorm():
    facts = InputFacts(
        kind="tf.data", batch_size=33, drop_remainder=False, samples=100, prefetch=True
    )
    found = ids(lint(facts, replicas=2, params=5_000_000, has_batchnorm=True))
    assert found["batch-not-multiple-of-replicas"].evidence["remainder"] == 1
    assert "32 or 34" in found["batch-not-multiple-of-replicas"].evidence["fix"]
    ragged = found["partial-last-batch"]
    assert ragged.severity == "high" and "BatchNormalization" in ragged.title
    assert ragged.evidence["last_batch"] == 1


def test_drop_remainder_and_even_batch_are_clean():
    facts = InputFacts(
        kind="tf.data", batch_size=64, drop_remainder=True, samples=100, prefetch=True
    )
    assert lint(facts, replicas=2, params=5_000_000, has_batchnorm=True) == []


def test_small_model_on_many_replicas():
    facts = InputFacts(kind="tf.data", batch_size=8, drop_remainder=True, prefetch=True)
    f = ids(lint(facts, replicas=4, params=2_000_000))["small-model-multi-gpu"]
    assert f.evidence["per_replica_batch"] == 2.0
    assert "small-model-multi-gpu" in ids(
        lint(InputFacts(kind="tf.data", batch_size=256, prefetch=True), replicas=4, params=50_000)
    )
    assert "small-model-multi-gpu" not in ids(
        lint(
            InputFacts(kind="tf.data", batch_size=256, prefetch=True), replicas=4, params=5_000_000
        )
    )


def test_single_replica_has_no_replica_findings():
    facts = InputFacts(
        kind="tf.data", batch_size=33, drop_remainder=False, samples=100, prefetch=True
    )
    assert lint(facts, replicas=1, params=10) == []


def test_python_generator_and_pydataset_workers():
    def gen():
        yield 1

    assert "python-generator" in ids(lint(describe_input(gen())))
    one = InputFacts(kind="pydataset", python_source=True, workers=1)
    many = InputFacts(kind="pydataset", python_source=True, workers=4, use_multiprocessing=True)
    assert "python-generator" in ids(lint(one))
    assert "python-generator" not in ids(lint(many))


def test_describe_real_tf_datasets():
    tf = pytest.importorskip("tensorflow")
    ds = tf.data.Dataset.range(100).map(lambda x: x * 2).batch(32)
    facts = describe_input(ds)
    assert facts.kind == "tf.data"
    assert facts.batch_size == 32 and facts.drop_remainder is False and facts.samples == 100
    assert facts.sequential_maps == 1 and not facts.prefetch
    found = ids(lint(facts))
    # TF injects a root prefetch by itself: a missing user prefetch is not a finding
    assert facts.auto_prefetch is True
    assert "sequential-map" in found and "no-prefetch" not in found
    opts = tf.data.Options()
    opts.autotune.enabled = False
    off = describe_input(ds.with_options(opts))
    assert off.auto_prefetch is False
    assert ids(lint(off))["no-prefetch"].severity == "moderate"  # a map makes prefetch matter

    good = (
        tf.data.Dataset.range(100)
        .map(lambda x: x, num_parallel_calls=tf.data.AUTOTUNE)
        .batch(32, drop_remainder=True)
        .prefetch(tf.data.AUTOTUNE)
    )
    facts = describe_input(good)
    assert facts.parallel_maps == 1 and facts.prefetch and facts.drop_remainder is True
    assert lint(facts) == []

    gen = tf.data.Dataset.from_generator(lambda: iter(range(3)), output_types=tf.int64)
    assert describe_input(gen).python_source


@pytest.mark.parametrize(
    ("value", "expected"), [(None, None), ("0,2", [0, 2]), ("", []), ("GPU-5d3e1c2a-aaaa", None)]
)
def test_visible_gpu_indices(monkeypatch, value, expected):
    pytest.importorskip("keras")
    from gpudiag.callback import visible_gpu_indices

    if value is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    assert visible_gpu_indices() == expected
