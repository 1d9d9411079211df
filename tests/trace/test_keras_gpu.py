"""Keras on GPU read right (profiles of the shapes real TF 2.3-2.5 GPU profiles have, built
here): the step is the device's, every way the step waits for its batch counts as input,
training is read from optimizer ops, the GPU's compute capability picks the precision
remedy, input remedies aim at the stage holding the time, untraced time is said."""

from __future__ import annotations

import numpy as np
import pytest

from gpudiag.analyze import diagnose
from gpudiag.analyze.input_stage import input_stage
from gpudiag.analyze.tensor_cores import precision_plan
from gpudiag.trace.load import load_file
from gpudiag.trace.model.runconfig import RunConfig
from gpudiag.trace.model.sink import IntervalBudget
from gpudiag.trace.tf.viewer.steps import align_device_steps, host_spans
from tests.helpers import foreign
from tests.helpers.keras_gpu_profiles import Profile, async_tail


def _diagnose(profile: Profile, tmp_path):
    tls = load_file(profile.write(tmp_path / "host.xplane.pb"))
    return tls, diagnose(tls)


# ---- the step --------------------------------------------------------------------------------
def test_step_is_the_device_step_begun_by_the_host(tmp_path):
    tls, d = _diagnose(async_tail(), tmp_path)
    tl = tls[0]
    assert tl.meta.extra["steps_method"] == "device"
    # train_function returns at 90 ms; the device works until 200 ms: the step is 0-200 ms
    assert tl.steps.start.tolist() == [0.0] and tl.steps.end.tolist() == [200_000.0]
    assert d.steps["median_ms"] == pytest.approx(200.0, rel=0.01)
    # the 10 ms copy is 5% of the step, not 11% of the host's 90 ms
    assert d.breakdown["transfer"] == pytest.approx(0.05, abs=0.005)
    assert d.verdict == "compute-bound"


def test_trace_viewer_json_step_events_are_the_step_too(tmp_path):
    """xprof's trace-viewer JSON export of the same shape: the device "Steps" thread, a
    ``_Send`` hand-off named by its type with the full name in ``long_name``."""
    meta = [
        ("process_name", 1, None, "/device:GPU:0"),
        ("thread_name", 1, 13, "Stream #13(Compute)"),
        ("thread_name", 1, 99, "Steps"),
        ("process_name", 7, None, "/host:CPU"),
        ("thread_name", 7, 1, "python3"),
        ("thread_name", 7, 2, "tf_Compute/2"),
    ]
    ev: list[dict] = [
        {"ph": "M", "name": n, "pid": pid, **({"tid": tid} if tid else {}), "args": {"name": v}}
        for n, pid, tid, v in meta
    ]
    ev.append({"ph": "X", "name": "train_function", "pid": 7, "tid": 1, "ts": 0, "dur": 40_000})
    send = {"long_name": "IteratorGetNext/_3:_Send", "group_id": "0"}
    ev.append(
        {"ph": "X", "name": "_Send", "pid": 7, "tid": 2, "ts": 0, "dur": 30_000, "args": send}
    )
    for i in range(50):
        ev.append(
            {
                "ph": "X",
                "name": "volta_sgemm",
                "pid": 1,
                "tid": 13,
                "ts": 30_000 + 1400 * i,
                "dur": 1300,
                "args": {"annotation": "gradient_tape/dense/MatMul:MatMul"},
            }
        )
    step = {"group_id": "0", "step_name": "EagerKernelExecute 0"}
    ev.append(
        {
            "ph": "X",
            "name": "EagerKernelExecute 0",
            "pid": 1,
            "tid": 99,
            "ts": 30_000,
            "dur": 70_000,
            "args": step,
        }
    )
    tl = load_file(foreign.write({"traceEvents": ev}, tmp_path / "t.trace.json"))[0]
    assert tl.meta.extra["steps_method"] == "device"
    assert tl.steps.start.tolist() == [0.0] and tl.steps.end.tolist() == [100_000.0]
    assert tl.meta.extra["workload"] == "training"
    d = diagnose([tl])
    assert d.breakdown["input"] == pytest.approx(0.3, abs=0.01)


def test_the_callbacks_step_markers_number_the_device_steps(tmp_path):
    """DiagnoseCallback's own profiler windows mark steps "train N" (N = the batch): the
    device step keeps that number, which the callback matches its clock with."""
    p = Profile()
    p.host_event("python3", "train 12", 0.0, 90.0)
    p.kernels(12.0, 200.0, 100).device_step(2.0, 200.0, number=0)
    tl = load_file(p.write(tmp_path / "host.xplane.pb"))[0]
    assert tl.steps.index.tolist() == [12]
    assert tl.steps.start.tolist() == [0.0] and tl.steps.end.tolist() == [200_000.0]


def test_device_steps_are_merged_and_aligned_with_host_steps():
    budget = IntervalBudget()
    gpu0, gpu1 = budget.sink(mergeable=False, columns="q"), budget.sink(False, "q")
    for sink, shift in ((gpu0, 0.0), (gpu1, 5.0)):
        sink.add(10.0 + shift, 100.0 + shift, 0)
        sink.add(110.0 + shift, 200.0 + shift, 1)
    # the callback's "train 12" / "train 13" markers: their numbers are the steps' numbers
    host = (np.array([12, 13]), np.array([0.0, 104.0]), np.array([40.0, 150.0]))
    nums, starts, ends = align_device_steps(host, {"GPU 0": gpu0, "GPU 1": gpu1})
    assert nums.tolist() == [12, 13]
    assert starts.tolist() == [0.0, 105.0]  # never before the previous step's end
    assert ends.tolist() == [105.0, 205.0]


# ---- the input wait --------------------------------------------------------------------------
def test_send_handoffs_of_the_iterator_are_input_wait(tmp_path):
    p = Profile()
    p.host_event("python3", "train_function", 0.0, 100.0)
    # the batch is handed to the GPU for 60 ms while the GPU waits (xprof: HOST_WAIT_INPUT)
    p.host_event("tf_Compute/1", "IteratorGetNext/_3:_Send", 1.0, 60.0)
    p.kernels(61.0, 100.0, 40, name="void tensorflow::functor::ApplyAdamKernel<float>(int)")
    p.device_step(61.0, 100.0)
    tls, d = _diagnose(p, tmp_path)
    assert d.breakdown["input"] == pytest.approx(0.6, abs=0.02)
    assert "IteratorGetNext/_N:_Send" in tls[0].input_wait_names
    assert d.verdict == "data-starved"


def test_a_send_that_launches_device_work_is_not_input_wait(tmp_path):
    p = Profile()
    p.host_event("python3", "train_function", 0.0, 100.0)
    p.host_event("tf_Compute/1", "IteratorGetNext/_3:_Send", 1.0, 60.0, correlation_id=7)
    p.kernels(61.0, 100.0, 40).device_step(61.0, 100.0)
    _, d = _diagnose(p, tmp_path)
    assert d.breakdown["input"] < 0.01


# ---- training or inference -------------------------------------------------------------------
def test_apply_adam_kernels_mean_training(tmp_path):
    p = Profile()
    p.host_event("python3", "EagerExecute", 0.0, 50.0)
    for i in range(60):  # enough host ops that the absence rule would have said inference
        p.host_event("tf_Compute/1", f"op_{i}:Identity", 0.5 * i, 0.2)
    p.kernels(1.0, 90.0, 50)
    p.kernels(90.0, 100.0, 10, name="void tensorflow::functor::ApplyAdamKernel<float>(int)")
    p.device_step(1.0, 100.0)
    tls, d = _diagnose(p, tmp_path)
    assert tls[0].meta.extra["workload"] == "training"
    assert "inference-trace" not in d.finding_ids


def test_a_tf_profile_is_not_inference_for_lack_of_training_names(tmp_path):
    p = Profile()
    p.host_event("python3", "EagerExecute", 0.0, 50.0)
    for i in range(60):
        p.host_event("tf_Compute/1", f"op_{i}:Identity", 0.5 * i, 0.2)
    p.kernels(1.0, 100.0, 50).device_step(1.0, 100.0)
    tls, d = _diagnose(p, tmp_path)
    assert "workload" not in tls[0].meta.extra
    assert "inference-trace" not in d.finding_ids


def test_a_predict_function_says_inference(tmp_path):
    p = Profile()
    p.host_event("python3", "predict_function", 0.0, 100.0)
    p.kernels(1.0, 100.0, 50).device_step(1.0, 100.0)
    tls, _ = _diagnose(p, tmp_path)
    assert tls[0].meta.extra["workload"] == "inference"


# ---- the GPU and its precision ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("cc", "sms", "model", "says", "never"),
    [
        ((7, 5), 40, "Tesla T4", "float16", "mixed_bfloat16"),
        ((7, 0), 80, "Tesla V100", "float16", "mixed_bfloat16"),
        ((8, 0), 108, "A100", "bfloat16", "float8"),
        ((9, 0), 132, "H100 SXM", "float8", None),
    ],
)
def test_precision_remedy_follows_the_compute_capability(tmp_path, cc, sms, model, says, never):
    tls, d = _diagnose(async_tail(cc, sms), tmp_path)
    cfg = tls[0].meta.config
    assert cfg.compute_capability == pytest.approx(cc[0] + cc[1] / 10) and cfg.gpu_model == model
    (sug,) = [s for s in d.suggestions if s.finding == "full-precision"]
    text = f"{sug.title} {sug.detail}"
    assert says in text and f"compute capability {cc[0]}.{cc[1]}" in sug.basis
    if never:
        assert never not in text


def test_no_precision_remedy_without_tensor_cores():
    assert precision_plan(RunConfig(compute_capability=6.1)) is None
    unknown = precision_plan(RunConfig())
    assert unknown is not None and "compute capability 7.x" in unknown.detail


# ---- where the input time goes ---------------------------------------------------------------
def _starved_by(stages: list[tuple[str, float, float]], tmp_path):
    p = Profile()
    p.host_event("python3", "train_function", 0.0, 1000.0)
    p.host_event("tf_data_iterator_get_next/2", "IteratorGetNextOp::DoCompute", 1.0, 600.0)
    for name, start, dur in stages:
        p.host_event("tf_data_iterator_get_next/2", name, start, dur)
    p.kernels(601.0, 1000.0, 50).device_step(601.0, 1000.0)
    return _diagnose(p, tmp_path)


def test_input_remedy_targets_the_prefetch_producer_not_the_map(tmp_path):
    _, d = _starved_by(
        [
            ("Iterator::Model", 1.5, 599.0),
            ("Iterator::Model::Map", 2.0, 598.0),
            ("Iterator::Model::Map::Prefetch", 2.5, 597.0),
        ],
        tmp_path,
    )
    assert d.verdict == "data-starved"
    assert "sequential-map" not in d.finding_ids  # the map is not where the time goes
    (sug,) = [s for s in d.suggestions if s.finding == "input-wait"]
    assert sug.title == "Speed up the producer under the prefetch"
    assert "Iterator::Model::Map::Prefetch" in sug.detail
    assert sug.expected_gain > 1.0 and "2 assumed" in sug.basis


def test_a_sequential_map_holding_the_time_gets_the_parallel_map(tmp_path):
    _, d = _starved_by(
        [
            ("Iterator::Model", 1.5, 599.0),
            ("Iterator::Model::Map", 2.0, 598.0),
            ("Iterator::Model::Map::TensorSlice", 3.0, 1.0),
        ],
        tmp_path,
    )
    assert "sequential-map" in d.finding_ids
    titles = [s.title for s in d.suggestions]
    assert "Parallelise the tf.data map" in titles


@pytest.mark.parametrize(
    ("times", "kind"),
    [
        (
            {
                "Iterator::Model::ParallelMapV2": 5.0,
                "Iterator::Model::ParallelMapV2::TFRecord": 90.0,
            },
            "source",
        ),
        ({"Iterator::Model::BatchV2": 80.0, "Iterator::Model::BatchV2::TensorSlice": 1.0}, "batch"),
        # TF fuses a parallel map with its batch: parallel, not a sequential map
        ({"Iterator::Root::Prefetch::MapAndBatch": 90.0, "Iterator::Root::Prefetch": 5.0}, "map"),
        ({"Iterator::Model::Prefetch": 80.0}, "producer"),
        # the prefetch waits for its traced producer: the producer is where the time goes
        # Dataset.from_generator builds its Generator inside a FlatMap (TF 2.x)
        (
            {
                "Iterator::Model::Prefetch": 80.0,
                "Iterator::Model::Prefetch::FlatMap::Generator": 20.0,
            },
            "python",
        ),
        ({"Iterator::Model::Prefetch::FlatMap::Generator": 80.0}, "python"),
        # MirroredStrategy's multi-device iterator: a Generator of TF's own, no user Python
        ({"Iterator::Root::Prefetch::Generator": 80.0}, "device-iterator"),
    ],
)
def test_input_stage_kinds(times, kind):
    found = input_stage({"stage_self_us": times})
    assert found is not None and found[0] == kind


def test_a_parallel_map_in_the_config_gets_no_parallel_map_remedy():
    """RunConfig says the run's maps are parallel: the map stage gets the cheaper-map
    remedy, never "Parallelise the tf.data map" (a remedy already in place)."""
    from gpudiag.analyze.evidence import HostFacts, Situation
    from gpudiag.analyze.input_plan import input_remedies

    cfg = RunConfig(
        input_kind="tf.data",
        sequential_maps=0,
        parallel_maps=1,
        input_stage="map-sequential",
        input_stage_name="Iterator::Root::Prefetch::MapAndBatch",
        device_type="GPU",
    )
    shares = {"input": 0.4, "transfer": 0.0, "compute": 0.5, "sync": 0.0, "other": 0.1}
    titles = [
        s.title for s in input_remedies(Situation(shares, "data-starved", cfg, HostFacts(), {}))
    ]
    assert "Parallelise the tf.data map" not in titles
    assert "Make the parallel map cheaper" in titles


def test_no_stage_when_the_time_is_spread():
    assert (
        input_stage(
            {"stage_self_us": {"Iterator::A": 40.0, "Iterator::B": 35.0, "Iterator::C": 30.0}}
        )
        is None
    )


# ---- untraced time ---------------------------------------------------------------------------
def test_a_mostly_untraced_step_is_said_and_not_diagnosed_from_its_sliver(tmp_path):
    p = Profile()
    p.host_event("python3", "train_function", 0.0, 22.0)
    p.host_event("tf_data_iterator_get_next/2", "IteratorGetNextOp::DoCompute", 1.0, 4.0)
    p.kernels(5.0, 30.0, 200, name="void tensorflow::functor::ApplyAdamKernel<float>(int)")
    p.kernels(5990.0, 5990.1, 1)
    p.device_step(5.0, 5990.1)
    _, d = _diagnose(p, tmp_path)
    f = d.finding("untraced-time")
    assert f is not None and f.severity == "high"
    assert f.evidence["untraced_per_step_s"] == pytest.approx(5.96, abs=0.01)
    assert d.verdict == "inconclusive"  # not data-starved from 4 ms of 26
    assert "kernel-launch-bound" not in d.finding_ids


def test_host_activity_bridges_only_short_gaps():
    spans = host_spans(np.array([0.0, 150.0, 1001.0]), np.array([100.0, 900.0, 1200.0]))
    # a 50 µs gap bridged, 101 µs kept
    assert spans.starts.tolist() == [0.0, 1001.0] and spans.ends.tolist() == [900.0, 1200.0]


def test_a_fully_traced_step_has_no_untraced_finding(tmp_path):
    _, d = _diagnose(async_tail(), tmp_path)
    assert "untraced-time" not in d.finding_ids
