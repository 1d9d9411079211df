"""The pieces behind keras.distribution support, without training: the mesh facts, the
first-batch watch, fit's data adapters, the XLA host-device reader, the multi-device lints
per framework and input, the ragged batch seen in compiles, and Kineto's lines quieted."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from gpudiag.analyze.breakdown import empty_shares
from gpudiag.analyze.distribution import model_parallel_note
from gpudiag.analyze.evidence import HostFacts, Situation
from gpudiag.analyze.rules import batch_not_multiple_of_replicas as uneven
from gpudiag.analyze.rules import partial_last_batch as ragged
from gpudiag.analyze.rules import small_model_multi_gpu as small
from gpudiag.record.keras_distribution import FirstBatchWatch, mesh_facts
from gpudiag.trace.load import load_file
from gpudiag.trace.model.compiles import CompileEvent
from gpudiag.trace.model.runconfig import RunConfig
from gpudiag.trace.model.timeline import Kind, Timeline
from tests.helpers.paths import REPO


def situation(cfg: RunConfig) -> Situation:
    """No measurement yet: the remedies as the lints print them."""
    return Situation(empty_shares(), "inconclusive", cfg, HostFacts())


class _Mesh:
    def __init__(self, shape: tuple[int, ...], names: list[str]) -> None:
        self.shape, self.axis_names = shape, names
        self.devices = np.array([f"cpu:{i}" for i in range(int(np.prod(shape)))]).reshape(shape)


class ModelParallel:  # named as Keras's class: the strategy is told by the class name
    def __init__(self, shape: tuple[int, ...], names: list[str], batch: str) -> None:
        self.device_mesh, self.batch_dim_name = _Mesh(shape, names), batch
        self.asked: list[tuple[int, ...]] = []
        self.num_processes = 1

    def get_data_layout(self, shape: tuple[int, ...]) -> str:
        self.asked.append(shape)
        return "layout"


class DataParallel(ModelParallel):
    pass


def test_replicas_are_the_mesh_batch_axis():
    dp = mesh_facts(DataParallel((4,), ["batch"], "batch"))
    assert dp is not None and (dp.strategy, dp.replicas, dp.mesh) == (
        "keras-data-parallel",
        4,
        "batch=4",
    )
    mp = mesh_facts(ModelParallel((2, 2), ["data", "model"], "data"))
    assert mp is not None and (mp.strategy, mp.replicas) == ("keras-model-parallel", 2)
    assert mp.config() == {"mesh": "data=2 × model=2"}
    assert mesh_facts(None) is None
    # two processes, each feeding its own batch to 4 of the 8 devices
    multi = DataParallel((8,), ["batch"], "batch")
    multi.num_processes = 2
    facts = mesh_facts(multi)
    assert facts is not None and facts.replicas == 4


def test_model_parallel_note_says_the_mesh_and_a_layout_map_that_shards_nothing():
    cfg = RunConfig(strategy="keras-model-parallel", mesh="batch=2 × model=2", replicas=2)
    cfg.sharded = "1 of 4 variables (89% of the parameters) over 'model': d/kernel"
    note = model_parallel_note(cfg)
    assert note and "splits 2 ways" in note and "d/kernel" in note
    cfg.sharded = "none of 4 variables (all replicated)"
    assert "shards no variable" in (model_parallel_note(cfg) or "")
    assert model_parallel_note(RunConfig(strategy="keras-data-parallel", mesh="batch=2")) is None


class _Iterator:
    data_adapter = object()


def test_first_batch_watch_hears_each_fit_once_and_leaves_keras_layout_alone():
    dist = DataParallel((2,), ["batch"], "batch")
    heard: list[int] = []
    watch = FirstBatchWatch(dist, heard.append)

    def fit() -> list[str]:  # a stand-in for Keras's fit: its epoch_iterator on the stack
        epoch_iterator = _Iterator()
        assert epoch_iterator is not None
        return [dist.get_data_layout((33, 16)), dist.get_data_layout((33, 1))]

    assert fit() == ["layout", "layout"]
    assert fit() == ["layout", "layout"]
    assert heard == [33, 33]  # once per fit, from its first array
    assert dist.asked == [(33, 16), (33, 1)] * 2
    assert dist.get_data_layout((8, 1)) == "layout"  # outside fit: passed through, not heard
    assert heard == [33, 33]
    watch.remove()
    assert "get_data_layout" not in vars(dist)


def test_arrays_given_to_fit_are_described_from_keras_adapter():
    from keras.src.trainers.data_adapters.array_data_adapter import ArrayDataAdapter

    from gpudiag.record.fit_input import describe_adapter

    x = np.zeros((2000, 16), np.float32)
    y = np.zeros((2000, 1), np.float32)
    facts = describe_adapter(ArrayDataAdapter(x, y, batch_size=32))
    assert facts is not None
    assert (facts.kind, facts.batch_size, facts.samples) == ("array", 32, 2000)
    assert facts.drop_remainder is False and facts.sample_bytes == 17 * 4
    import keras

    # TensorFlow's fit makes a prefetching tf.data pipeline of arrays; JAX and torch do not
    assert facts.auto_prefetch is (True if keras.backend.backend() == "tensorflow" else None)


def test_arrays_get_a_prefetching_pipeline_only_where_fit_has_none():
    from gpudiag.analyze.input_plan import input_remedies

    shares = {**empty_shares(), "input": 0.5, "compute": 0.3, "other": 0.2}
    for fw, prefetched in (("jax", None), ("tensorflow", True)):
        cfg = _cfg(framework=fw, replicas=1, root_prefetch=prefetched)
        titles = [
            g.title for g in input_remedies(Situation(shares, "data-starved", cfg, HostFacts()))
        ]
        assert ("Feed the arrays through a prefetching pipeline" in titles) == (fw == "jax")
        assert any("bigger batch" in t for t in titles)


def _cfg(**kw: object) -> RunConfig:
    base = dict(framework="jax", replicas=2, global_batch=32, input_kind="array")
    return RunConfig(**{**base, **kw})  # type: ignore[arg-type]


def test_uneven_batch_says_what_each_framework_does():
    jax = uneven.check(_cfg(global_batch=33))
    assert jax is not None and "IndivisibleError" in jax.evidence["fix"]
    assert "fit(batch_size=...)" in jax.evidence["fix"]
    tf = uneven.check(_cfg(global_batch=33, framework="tensorflow", input_kind="tf.data"))
    assert tf is not None and "TensorFlow may fail" in tf.evidence["fix"]
    assert uneven.check(_cfg()) is None  # 32 over 2


def test_partial_last_batch_on_jax_and_its_remedy_per_input():
    cfg = _cfg(samples=2000, drop_remainder=False, batchnorm=True)
    f = ragged.check(cfg)
    assert f is not None and f.severity == "high" and f.evidence["recompiles"]
    fix = ragged.advise(f, situation(cfg))[0].detail
    assert "x[:n]" in fix and "JAX compiles the step again" in fix
    # a last batch of 17 does not split over 2 devices: JAX fails on it, BatchNorm or not
    fails = ragged.check(_cfg(samples=2001, drop_remainder=False))
    assert fails is not None and fails.severity == "high" and "fails" in fails.title
    # an uneven global batch fails first: the last batch is not spoken of on JAX
    assert ragged.check(_cfg(global_batch=33, samples=2000, drop_remainder=False)) is None
    assert ragged.check(_cfg(samples=2016, drop_remainder=False)) is None
    py = _cfg(samples=2000, drop_remainder=False, input_kind="pydataset")
    assert "__len__" in ragged.advise(ragged.check(py), situation(py))[0].detail  # type: ignore[arg-type]


def _compiled(*batches: int, what: str = "jit(train_step)") -> Timeline:
    tl = Timeline()
    for i, b in enumerate(batches):
        tl.compiles.add(CompileEvent(i * 1e6, i * 1e6 + 5e5, what, "compile", "", [[b, 16], [b]]))
    return tl


def test_short_batch_is_seen_in_compiles_of_exactly_two_batch_sizes():
    assert ragged.short_batch_compiles(_compiled(32, 16)) == (32, 16, 0.5)
    assert ragged.short_batch_compiles(_compiled(32)) is None
    assert ragged.short_batch_compiles(_compiled(32, 16, 8)) is None  # varying, not ragged
    assert ragged.short_batch_compiles(_compiled(32, 16, what="jit(test_step)")) is None


def test_small_model_remedy_speaks_keras_distribution():
    cfg = _cfg(params=609, strategy="keras-data-parallel")
    f = small.check(cfg)
    assert f is not None
    assert "keras.distribution" in small.advise(f, situation(cfg))[0].detail
    assert small.check(_cfg(params=2_000_000, global_batch=64)) is None


def _xla_op(name: str, ts: float, dur: float, device: int) -> dict:
    args = {"hlo_op": name, "hlo_module": "jit_train_step", "device_ordinal": str(device)}
    return {"ph": "X", "pid": 1, "tid": 10 + device % 2, "name": name, "ts": ts, "dur": dur,
            "args": args}  # fmt: skip


def test_xla_host_devices_get_one_lane_each_with_their_all_reduce(tmp_path):
    """JAX's XLA:CPU runs all devices' ops on one pool: the op's device_ordinal makes the
    lane, all-reduce is its sync."""
    meta = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "M", "pid": 1, "tid": 10, "name": "thread_name", "args": {"name": "tf_XLAEigen/1"}},
        {"ph": "M", "pid": 1, "tid": 11, "name": "thread_name", "args": {"name": "tf_XLAEigen/2"}},
        {"ph": "M", "pid": 1, "tid": 1, "name": "thread_name", "args": {"name": "python"}},
    ]
    events = []
    for step in range(3):
        t = step * 1000.0
        events.append({"ph": "X", "pid": 1, "tid": 1, "name": f"train {step}", "ts": t,
                       "dur": 900.0})  # fmt: skip
        for dev in (0, 1):
            events.append(_xla_op("dot.6", t + 10, 300, dev))
            events.append(_xla_op("all-reduce.7", t + 320, 500, dev))
    path = tmp_path / "jax_cpu.trace.json"
    path.write_text(json.dumps({"traceEvents": meta + events}))
    tl = load_file(str(path))[0]
    lanes = {(d, k) for d, k in tl.activity}
    assert lanes == {(f"CPU {d}", k) for d in (0, 1) for k in (Kind.COMPUTE, Kind.COLLECTIVE)}
    from gpudiag.analyze import diagnose

    d = diagnose([tl])
    assert d.verdict == "sync-bound" and "exposed-collectives" in {f.id for f in d.findings}
    assert [r.device for r in d.devices] == ["CPU 0", "CPU 1"]


def test_kineto_lines_are_quieted_and_the_users_kept():
    code = (
        "import os\n"
        "from gpudiag.trace.quiet import quiet_stderr\n"
        "with quiet_stderr():\n"
        "    os.write(2, b'USDT:2026-11-27 02:21:41 27671:27671 SyncActivityProfilerHandler"
        ".cpp:39] profiler_start\\n')\n"
        "    os.write(2, b'ERROR:2026-11-27 02:21:41 27671:27671 DeviceProperties.cpp:56] "
        "gpuGetDeviceCount failed with code 35\\n')\n"
        "    os.write(2, b'the user says hello\\n')\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    assert r.stderr == "the user says hello\n"
