"""The rules for the field's common causes, each on both sides of its thresholds: a GPU the
framework leaves unused, half precision where it is slow, a dense embedding update, a capped
thread pool, forced determinism, recurrent layers off cuDNN, float64 input, storage waits,
NCCL's fast paths off, per-batch callbacks; and the bigger batch withheld where one holds
the step. The same causes planted in real fits: tests/training/test_causes.py."""

from __future__ import annotations

import pytest

from gpudiag.analyze import batch_gate
from gpudiag.analyze.diagnosis import Finding
from gpudiag.analyze.evidence import HostFacts
from gpudiag.analyze.fit_gain import PART_NOTE
from gpudiag.analyze.rules import (
    batch_callbacks,
    dense_embedding_updates,
    float64_input,
    gpu_unused,
    nccl_paths_off,
    op_determinism,
    rnn_without_cudnn,
    slow_mixed_precision,
    storage_wait,
    threads_capped,
)
from tests.helpers.fit_synth import fit_timeline
from tests.rules.kit import evidence, situation

CPU = {"device_type": "CPU"}


def test_gpu_unused_needs_a_gpu_nvml_sees_and_the_framework_does_not():
    base = {"framework": "tensorflow", "gpu_build": "cpu-only"}
    f = gpu_unused.detect(evidence(config={**base, "nvml_gpus": 1, "framework_gpus": 0}))
    assert f is not None and f.evidence["cause"] == "a CPU-only build"
    assert gpu_unused.detect(evidence(config={**base, "nvml_gpus": 0, "framework_gpus": 0})) is None
    assert gpu_unused.detect(evidence(config={**base, "nvml_gpus": 1})) is None  # not read
    win = {"framework": "tensorflow", "os": "win32", "nvml_gpus": 1, "framework_gpus": 0}
    f = gpu_unused.detect(evidence(config=win))
    assert "native Windows" in f.title
    (sug,) = gpu_unused.advise(f, situation(config=win, compute=0.8))
    assert "WSL2" in sug.detail and sug.expected_gain_range[-1] == pytest.approx(5.0)


def test_gpu_unused_with_a_gpu_listed_is_silent():
    cfg = {"framework": "tensorflow", "nvml_gpus": 2, "framework_gpus": 2}
    assert gpu_unused.detect(evidence(config=cfg)) is None


@pytest.mark.parametrize(
    ("config", "fires"),
    [
        ({**CPU, "precision": "mixed_float16"}, True),
        ({**CPU, "precision": "float32"}, False),
        ({"device_type": "GPU", "precision": "mixed_float16", "compute_capability": 6.1}, True),
        ({"device_type": "GPU", "precision": "mixed_float16", "compute_capability": 7.0}, False),
        ({"device_type": "GPU", "precision": "mixed_bfloat16", "compute_capability": 7.5}, True),
        ({"device_type": "GPU", "precision": "mixed_bfloat16", "compute_capability": 8.0}, False),
        ({"device_type": "GPU", "precision": "mixed_float16"}, False),  # capability not known
    ],
)
def test_slow_mixed_precision_by_device(config, fires):
    assert (
        slow_mixed_precision.detect(evidence(config=config, compute_frac=0.9)) is not None
    ) is fires


def test_slow_mixed_precision_gain_bounded_by_the_compute():
    cfg = {**CPU, "precision": "mixed_float16"}
    f = slow_mixed_precision.detect(evidence(config=cfg, compute_frac=0.9))
    assert f.severity == "high"
    (sug,) = slow_mixed_precision.advise(f, situation(config=cfg, compute=0.9))
    c = 0.9
    assert sug.expected_gain == pytest.approx(1 / ((1 - c) + c / 2), rel=0.01)
    assert sug.expected_gain_range[-1] == pytest.approx(1 / (1 - c), rel=0.01)
    low = slow_mixed_precision.detect(evidence(config=cfg, compute_frac=0.4))
    assert low.severity == "moderate"


@pytest.mark.parametrize(
    ("process_pct", "compute", "severity"),
    [(98.0, 0.6, "moderate"), (50.0, 0.6, "info"), (98.0, 0.2, "info")],
)
def test_threads_capped_binding_only_when_the_cap_is_full_and_compute_large(
    process_pct, compute, severity
):
    cfg = {**CPU, "intra_op_threads": 1, "inter_op_threads": 1, "cores": 2}
    host = HostFacts(cpu_process=process_pct)
    f = threads_capped.detect(evidence(config=cfg, host=host, compute_frac=compute))
    assert f is not None and f.severity == severity
    (sug,) = threads_capped.advise(f, situation(config=cfg, host=host, compute=compute))
    assert sug.expected_gain_range[-1] <= 1 / ((1 - compute) + compute / 2) + 0.01
    assert (sug.expected_gain > 1.0) is (severity == "moderate")


def test_threads_not_capped_or_capped_at_the_cores_is_silent():
    for cap in (0, 2, None):
        cfg = {**CPU, "intra_op_threads": cap, "cores": 2}
        assert threads_capped.detect(evidence(config=cfg, compute_frac=0.9)) is None


def test_a_capped_pool_is_the_cores_a_bigger_batch_can_fill():
    from gpudiag.trace.model.runconfig import RunConfig

    assert RunConfig(cores=8, intra_op_threads=2).compute_cores == 2
    assert RunConfig(cores=8, intra_op_threads=0).compute_cores == 8


EMB = {
    "optimizer": "Adam",
    "optimizer_sparse": False,
    "embedding_layer": "embedding",
    "embedding_rows": 300_000,
    "embedding_values": 300_000 * 64,
    "embedding_lookups": 5,
    "global_batch": 32,
    "params": 300_000 * 64 + 65,
}


@pytest.mark.parametrize(
    ("change", "fires"),
    [
        ({}, True),
        ({"optimizer_sparse": True}, False),
        ({"embedding_values": dense_embedding_updates.MIN_VALUES - 1}, False),
        ({"embedding_values": dense_embedding_updates.MIN_VALUES}, True),
        # a batch that looks up more than a tenth of the rows: the dense update is little waste
        ({"embedding_rows": 1500, "embedding_values": 1500 * 1000}, False),
    ],
)
def test_dense_embedding_lint_thresholds(change, fires):
    assert (dense_embedding_updates.check(_cfg({**EMB, **change})) is not None) is fires


def _cfg(d):
    from gpudiag.trace.model.runconfig import RunConfig

    return RunConfig(**d)


def test_dense_embedding_withdrawn_where_the_profile_shows_the_update_small():
    f = dense_embedding_updates.check(_cfg(EMB))
    ev = evidence(config=EMB, compute_frac=0.9)
    ev.timeline.meta.extra.update(optimizer_us=900.0, op_us=1000.0)
    kept = dense_embedding_updates.refine(f, ev)
    assert kept is not None and kept.severity == "high"
    assert kept.evidence["table_update_pct"] == pytest.approx(81.0, abs=0.5)
    sugs = dense_embedding_updates.advise(kept, situation(config=EMB, compute=0.9))
    assert [s.remedy for s in sugs] == ["sparse-embedding-updates", "smaller-vocabulary"]
    assert sugs[0].expected_gain_range[-1] <= 1 / (1 - 0.81) + 1e-6
    ev.timeline.meta.extra.update(optimizer_us=40.0, op_us=1000.0)  # 3.6% of the step
    assert dense_embedding_updates.refine(f, ev) is None


def test_op_determinism_severity_by_device():
    on = {"op_determinism": True, "framework": "tensorflow"}
    assert op_determinism.detect(evidence(config={**on, **CPU})).severity == "info"
    assert op_determinism.detect(evidence(config={**on, "device_type": "GPU"})).severity == (
        "moderate"
    )
    assert op_determinism.detect(evidence(config={"op_determinism": False})) is None


def test_rnn_off_cudnn_on_a_gpu_only():
    why = {"rnn_without_cudnn": "lstm (LSTM): recurrent_dropout=0.2"}
    assert rnn_without_cudnn.detect(evidence(config={**why, "device_type": "GPU"})) is not None
    assert rnn_without_cudnn.detect(evidence(config={**why, **CPU})) is None
    assert rnn_without_cudnn.detect(evidence(config={"device_type": "GPU"})) is None


def test_rnn_layers_off_cudnn_are_read_from_keras_settings():
    keras = pytest.importorskip("keras")
    from gpudiag.record.model_facts import model_run_facts

    def facts(layer):
        m = keras.Sequential([keras.Input((10, 4)), layer, keras.layers.Dense(1)])
        m.compile("adam", "mse")
        return model_run_facts(m)

    assert "rnn_without_cudnn" not in facts(keras.layers.LSTM(4))
    assert (
        "recurrent_dropout=0.2"
        in facts(keras.layers.LSTM(4, recurrent_dropout=0.2))["rnn_without_cudnn"]
    )
    assert "activation=relu" in facts(keras.layers.GRU(4, activation="relu"))["rnn_without_cudnn"]


def test_float64_lint_and_its_gain_bounded_by_the_copies():
    assert float64_input.check(_cfg({"input_float64": False})) is None
    f = float64_input.check(_cfg({"input_float64": True, "input_kind": "array"}))
    (sug,) = float64_input.advise(f, situation(config={"input_kind": "array"}, transfer=0.3))
    assert sug.expected_gain_range[-1] == pytest.approx(1 / (1 - 0.15), rel=0.01)
    (none,) = float64_input.advise(f, situation(config={"input_kind": "array"}))
    assert none.expected_gain == 1.0


@pytest.mark.parametrize(
    ("iowait", "input_frac", "fires"),
    [
        (storage_wait.IOWAIT_PCT + 1, 0.4, True),
        (storage_wait.IOWAIT_PCT - 1, 0.4, False),
        (storage_wait.IOWAIT_PCT + 1, storage_wait.INPUT_SHARE - 0.02, False),
    ],
)
def test_storage_wait_thresholds(iowait, input_frac, fires):
    ev = evidence(host=HostFacts(iowait=iowait), input_frac=input_frac, compute_frac=0.3)
    assert (storage_wait.detect(ev) is not None) is fires


@pytest.mark.parametrize(
    ("sync", "env", "fires"),
    [
        (0.2, "NCCL_P2P_DISABLE=1", True),
        (nccl_paths_off.SYNC_SHARE - 0.01, "NCCL_P2P_DISABLE=1", False),
        (0.2, None, False),
    ],
)
def test_nccl_paths_off_only_where_collectives_are_exposed(sync, env, fires):
    ev = evidence(config={"nccl_env": env}, sync_frac=sync, compute_frac=0.5)
    assert (nccl_paths_off.detect(ev) is not None) is fires


def test_nccl_settings_read_from_the_environment(monkeypatch):
    from gpudiag.record.runtime_facts import runtime_facts

    monkeypatch.setenv("NCCL_P2P_DISABLE", "1")
    monkeypatch.setenv("NCCL_IB_DISABLE", "0")
    assert runtime_facts(None)["nccl_env"] == "NCCL_P2P_DISABLE=1"


def _batch_tl(seconds: float, predict_calls: int = 0):
    tl = fit_timeline()
    row = {"s": seconds, "calls": 150}
    if predict_calls:
        row.update(predict_calls=predict_calls, predict_s=seconds * 0.95)
    tl.meta.extra["batch_callbacks"] = {"PredictEvery": row}
    return tl


def _steps_s() -> float:
    return evidence(fit_timeline()).fit.parts["steps"]


@pytest.mark.parametrize(("share", "fires"), [(PART_NOTE + 0.01, True), (PART_NOTE - 0.01, False)])
def test_batch_callbacks_share_threshold(share, fires):
    wall = evidence(fit_timeline()).fit.wall_s
    ev = evidence(_batch_tl(share * wall))
    assert (batch_callbacks.detect(ev) is not None) is fires


def test_batch_callbacks_remedies_bounded_by_their_own_time():
    wall = evidence(fit_timeline()).fit.wall_s
    seconds = min(0.4 * wall, 0.9 * _steps_s())
    ev = evidence(_batch_tl(seconds, predict_calls=75))
    f = batch_callbacks.detect(ev)
    s = situation()
    s.fit = ev.fit
    sugs = batch_callbacks.advise(f, s)
    assert [x.remedy for x in sugs] == ["predict-on-batch", "callback-less-often"]
    bound = ev.fit.wall_s / (ev.fit.wall_s - ev.fit.parts["batch_callbacks"])
    assert all(x.expected_gain_range[-1] <= bound + 0.01 for x in sugs)


def test_a_bigger_batch_is_withheld_where_a_cause_holds_the_step():
    cause = Finding("slow-mixed-precision", "high", "", {})
    s = situation(compute=0.9)
    assert batch_gate.held_by(s) is None
    s.findings["slow-mixed-precision"] = cause
    assert "slow-mixed-precision" in (batch_gate.held_by(s) or "")
    s.findings["slow-mixed-precision"] = Finding("slow-mixed-precision", "info", "", {})
    assert batch_gate.held_by(s) is None  # named for information only: not what holds it
