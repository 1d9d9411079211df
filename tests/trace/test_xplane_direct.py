"""The direct XSpace reader gives the trace-viewer events xprof's ``trace_viewer`` gives, and
the same diagnosis; what xprof's grouping adds to ungrouped profiles is redone."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from gpudiag.analyze import diagnose
from gpudiag.trace.tf.xspace.events import open_xspace
from gpudiag.trace.tf.xspace.reader import read_xplane
from gpudiag.trace.tf.xspace.schema import XSpace
from tests.helpers.paths import sample
from tests.helpers.xspace_build import MS, PlaneBuilder, write

# what xprof's grouping adds as args, and gpudiag does not (docs/formats.md)
GROUPING_ARGS = {"group_id", "flow", "is_eager"}


def _plain(ev: dict[str, Any]) -> str:
    """An event as comparable text: args read through, grouping args and empty args left out."""
    ev = dict(ev)
    args = {k: v for k, v in dict(ev.pop("args", {})).items() if k not in GROUPING_ARGS}
    if args:
        ev["args"] = args
    return json.dumps(ev, sort_keys=True)


def _xprof_events(path: str) -> list[dict[str, Any]]:
    pytest.importorskip("xprof")
    from gpudiag.trace.tf.xspace.by_xprof import TraceEvents, _trace

    return list(TraceEvents(_trace(path), path))


def test_events_are_xprofs_on_the_sample():
    path = sample("tf_gpu_multi_worker.xplane.pb")
    ours = [_plain(e) for e in open_xspace(path)]
    theirs = [_plain(e) for e in _xprof_events(path)]
    assert len(ours) == len(theirs) == 20_723
    assert ours == theirs  # same events, same order


def test_same_diagnosis_as_through_xprof():
    pytest.importorskip("xprof")
    from gpudiag.trace.tf.xspace.by_xprof import read_xplane_xprof

    path = sample("tf_gpu_multi_worker.xplane.pb")
    direct = diagnose(read_xplane(path)).to_dict()
    through_xprof = diagnose(read_xplane_xprof(path)).to_dict()
    assert json.dumps(direct, sort_keys=True) == json.dumps(through_xprof, sort_keys=True)
    assert direct["verdict"] == "data-starved" and direct["steps"]["count"] == 2


def _ungrouped(tmp_path: Path) -> str:
    """A TF 2.5+ profile (no group ids): step roots, a nested root, threadpool regions."""
    space = XSpace(hostnames=["host"])
    host = PlaneBuilder(space, 0, "/host:CPU")
    python = host.line(1, "python", timestamp_ns=1_000)
    for i in range(3):
        root = host.event(python, "train", i * 10 * MS, 9 * MS, step_num=i + 5)
        root.stats.add(metadata_id=host.stat_id("_r"), int64_value=1)
        inner = host.event(python, "train", i * 10 * MS + MS, MS)  # a root inside a root
        inner.stats.add(metadata_id=host.stat_id("_r"), int64_value=1)
    host.event(python, "epoch", 40 * MS, MS).stats.add(
        metadata_id=host.stat_id("_r"), int64_value=1
    )  # no step number: named by its group
    pool = host.line(2, "tf_Compute/1", timestamp_ns=1_000)
    for i in range(2):
        host.event(pool, "ThreadpoolListener::StartRegion", i * 5 * MS, 0, _c=100 + i)
        host.event(pool, "MatMul", i * 5 * MS + 10, MS, long_name=f"dense/MatMul_{i}")
        host.event(pool, "ThreadpoolListener::StopRegion", i * 5 * MS + 2 * MS, 0)
    return write(space, tmp_path / "ungrouped.xplane.pb")


def test_ungrouped_profile_gets_xprofs_step_names_and_regions(tmp_path):
    path = _ungrouped(tmp_path)
    events = list(open_xspace(path))
    names = Counter(e["name"] for e in events if e["ph"] == "X")
    # the outer roots take their step numbers, the nested ones no name of their own, the
    # root without a step number its group (the fourth, after three of the same level)
    assert names["train 5"] == names["train 6"] == names["train 7"] == 1
    assert names["train"] == 3 and names["epoch 3"] == 1
    assert names["ThreadpoolListener::Region"] == 2
    region = next(e for e in events if e["name"] == "ThreadpoolListener::Region")
    assert region["dur"] == pytest.approx(2_000.0) and "args" not in region


def test_ungrouped_profile_matches_xprof(tmp_path):
    path = _ungrouped(tmp_path)
    theirs = Counter(_plain(e) for e in _xprof_events(path))
    ours = Counter(_plain(e) for e in open_xspace(path))
    assert ours == theirs


def test_args_are_xprofs_text_and_read_as_a_dict(tmp_path):
    space = XSpace()
    gpu = PlaneBuilder(space, 3, "/device:GPU:3")
    line = gpu.line(7, "Stream #7(Compute)")
    ev = gpu.event(line, "k", 0, MS, correlation_id=12)
    ev.stats.add(metadata_id=gpu.stat_id("occupancy"), double_value=0.123456789)
    ev.stats.add(metadata_id=gpu.stat_id("_p"), int64_value=4)  # internal: left out
    ev.stats.add(metadata_id=gpu.stat_id("kernel"), ref_value=gpu.stat_id("sgemm_nn"))
    meta = gpu.plane.event_metadata[gpu.event_id("k")]
    meta.display_name = "sgemm"
    meta.stats.add(metadata_id=gpu.stat_id("tf_op"), str_value="dense/MatMul:MatMul")
    (out,) = [e for e in open_xspace(write(space, tmp_path / "a.xplane.pb")) if e["ph"] == "X"]
    assert (out["pid"], out["tid"], out["name"], out["dur"]) == (4, 7, "sgemm", 1000.0)
    assert isinstance(out["args"], dict)
    assert dict(out["args"]) == {
        "long_name": "k",
        "tf_op": "dense/MatMul:MatMul",
        "correlation_id": "12",
        "occupancy": "0.123457",
        "kernel": "sgemm_nn",
    }
    assert out["args"].get("tf_op") == "dense/MatMul:MatMul" and "_p" not in out["args"]


def _ungrouped_gpu(tmp_path: Path, module: bool = False) -> str:
    """A TF 2.5+ GPU profile: each "train" root runs a function whose executor (linked by
    producer/consumer ids) launches kernels; a copy without a correlation id follows."""
    space = XSpace(hostnames=["host"])
    host = PlaneBuilder(space, 0, "/host:CPU")
    python = host.line(1, "python", timestamp_ns=1_000)
    executor = host.line(2, "tf_Compute/2", timestamp_ns=1_000)
    gpu = PlaneBuilder(space, 0, "/device:GPU:0")
    compute = gpu.line(7, "Stream #7(Compute)", timestamp_ns=1_000)
    copies = gpu.line(8, "Stream #8(MemcpyH2D)", timestamp_ns=1_000)
    for i in range(4):
        t = i * 10 * MS
        host.event(python, "train", t, 4 * MS, step_num=i + 3, _r=1)
        host.event(python, "EagerExecute", t + MS // 10, 3 * MS, _pt=1, _p=100 + i)
        host.event(executor, "ExecutorState::Process", t + MS // 5, 2 * MS, _ct=1, _c=100 + i)
        for k in range(3):
            host.event(
                executor,
                "cuLaunchKernel",
                t + MS // 4 + k * MS // 2,
                MS // 10,
                correlation_id=i * 10 + k,
            )
            kernel = gpu.event(
                compute, "volta_sgemm", t + MS + 2 * k * MS, 3 * MS // 2, correlation_id=i * 10 + k
            )
            if module:
                kernel.stats.add(metadata_id=gpu.stat_id("hlo_module"), str_value="jit_step")
        gpu.event(copies, "MemcpyH2D", t + MS // 2, MS // 10)  # takes the last group
    return write(space, tmp_path / "tf2_gpu.xplane.pb")


def test_ungrouped_gpu_profile_gets_xprofs_steps_line(tmp_path):
    """xprof groups the kernels by the root whose function launched them and derives a
    device "Steps" line: the same here, from each launch's time within its root."""
    path = _ungrouped_gpu(tmp_path)
    events = list(open_xspace(path))
    steps = [
        (e["name"], e["ts"], e["dur"])
        for e in events
        if e.get("tid") == 0xDEADBEEF and e["ph"] == "X"
    ]
    # each step from its first kernel to the copy of the next step that follows it
    assert steps[0] == ("train 3", 1_001.0, 9_600.0) and len(steps) == 4
    assert steps[3] == ("train 6", 31_001.0, 5_500.0)  # the last: no copy after it
    # xprof renumbers the GPU stream lines of such a profile to order its viewer's rows:
    # compared by thread name
    assert _by_thread_name(events) == _by_thread_name(_xprof_events(path))


def _by_thread_name(events: list[dict[str, Any]]) -> Counter[str]:
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    return Counter(
        _plain({**e, "tid": names.get((e["pid"], e["tid"]))}) for e in events if e["ph"] != "M"
    )


def test_ungrouped_gpu_profile_of_xla_modules_says_they_are_no_line(tmp_path):
    (tl,) = read_xplane(_ungrouped_gpu(tmp_path, module=True))
    assert any("XLA Modules" in note for note in tl.meta.limitations)
    (tl,) = read_xplane(_ungrouped_gpu(tmp_path))
    assert not any("XLA Modules" in note for note in tl.meta.limitations)
