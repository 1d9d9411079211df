"""The TensorFlow trace-viewer JSON reader: one pass over the file when the names come first,
the same diagnosis wherever the file puts them."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from gpudiag.analyze import diagnose
from gpudiag.trace.load import load_file
from gpudiag.trace.model.sink import LIMIT_ENV, MAX_KEYS
from gpudiag.trace.source import chrome, event_check
from gpudiag.trace.tf.viewer.reader import MAX_REPLICAS
from tests.helpers import foreign
from tests.helpers.foreign import tf_event as _x
from tests.helpers.foreign import tf_meta as _m

STEP_US = 1000.0


def gpu_run(steps: int = 12) -> list[dict[str, Any]]:
    """A GPU training run as TensorFlow's profiler writes it: step markers and input waits on
    the host, kernels, copies and an all-reduce on the device streams, a derived op line."""
    ev = [
        _m(1, "process_name", "/host:CPU"),
        _m(1, "thread_name", "python", 1),
        _m(1, "thread_name", "tf_data_iterator_get_next", 3),
        _m(7, "process_name", "/device:GPU:0"),
        _m(7, "thread_name", "Stream #14(Compute)", 1),
        _m(7, "thread_name", "Stream #15(MemcpyH2D)", 2),
        _m(7, "thread_name", "TensorFlow Ops", 3),
    ]
    for i in range(steps):
        t = i * STEP_US
        ev += [
            _x(1, 1, f"train {i}", t, STEP_US),
            _x(1, 3, "IteratorGetNextOp::DoCompute", t, 300.0),
            _x(1, 3, "Iterator::Model::Map", t, 250.0, long_name="Iterator::Model::Map"),
            _x(7, 2, "MemcpyH2D", t + 300, 50.0),
            _x(7, 1, "volta_sgemm_128x64_nn", t + 350, 400.0, tf_op="gradient_tape/dense/MatMul"),
            _x(7, 1, "ncclDevKernel_AllReduce_Sum_f32", t + 750, 150.0),
            _x(7, 3, "MatMul", t + 350, 400.0),
        ]
    return ev


def worker_devices(steps: int = 12) -> list[dict[str, Any]]:
    """Two devices, each with its own step line: one Timeline per device."""
    ev = [_m(1, "process_name", "/host:CPU"), _m(1, "thread_name", "tf_data", 2)]
    for d, pid in enumerate((10, 11)):
        ev += [
            _m(pid, "process_name", f"/device:GPU:{d}"),
            _m(pid, "thread_name", "Stream #1(Compute)", 1),
            _m(pid, "thread_name", "Steps", 2),
        ]
    for i in range(steps):
        t = i * STEP_US
        ev.append(_x(1, 2, "IteratorGetNextOp::DoCompute", t, 100.0))
        for d, pid in enumerate((10, 11)):
            busy = 500.0 + 300.0 * d  # the second device computes longer
            ev += [_x(pid, 2, str(i), t, STEP_US), _x(pid, 1, "conv2d_kernel", t + 100, busy)]
    return ev


def cpu_replicas(steps: int = 12) -> list[dict[str, Any]]:
    """A CPU-only run of two replicas: ops on tf_Compute threads, Eigen shards, all-reduces."""
    ev = [
        _m(1, "process_name", "/host:CPU"),
        _m(1, "thread_name", "python", 1),
        _m(1, "thread_name", "tf_Compute/0", 2),
        _m(1, "thread_name", "tf_Compute/1", 3),
        _m(1, "thread_name", "Eigen::NonBlockingThreadPool", 4),
        _m(1, "thread_name", "collective_ops/0", 5),
    ]
    for i in range(steps):
        t = i * STEP_US
        ev += [
            _x(1, 1, "one_step_on_iterator", t, STEP_US),
            _x(1, 2, "MatMul", t + 50, 400.0, long_name="sequential/dense/MatMul"),
            _x(1, 3, "MatMul", t + 50, 600.0, long_name="replica_1/sequential/dense/MatMul"),
            _x(1, 4, "Eigen::ParallelFor", t + 60, 100.0),
            _x(1, 5, "CollectiveReduceV2", t + 450, 400.0),
            _x(1, 5, "CollectiveReduceV2", t + 650, 200.0),
        ]
    return ev


RUNS = {
    "gpu": gpu_run,
    "workers": worker_devices,
    "cpu-replicas": cpu_replicas,
    "tpu": lambda steps=12: foreign.xla_tpu(steps)["traceEvents"],
}


def names_first(ev: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in ev if e["ph"] == "M"] + [e for e in ev if e["ph"] != "M"]


def names_last(ev: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in ev if e["ph"] != "M"] + [e for e in ev if e["ph"] == "M"]


def threads_late(ev: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Process names first (the file looks like TF at once), thread names after the events
    that need them: the one pass reads them unnamed and must not be kept."""
    procs = [e for e in ev if e.get("name") == "process_name"]
    threads = [e for e in ev if e.get("name") == "thread_name"]
    rest = [e for e in ev if e["ph"] != "M"]
    return procs + rest[: len(rest) // 2] + threads + rest[len(rest) // 2 :]


def reversed_order(ev: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return ev[::-1]


ORDERS = (names_first, names_last, threads_late, reversed_order)


def _write(path: Path, events: list[dict[str, Any]]) -> str:
    path.write_text(json.dumps({"displayTimeUnit": "ns", "traceEvents": events}))
    return str(path)


class _Counting:
    """Counts the events streamed out of trace files (every pass, every reader)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.n = 0
        inner = chrome.EventStream.__iter__

        def counted(stream: chrome.EventStream) -> Any:
            for ev in inner(stream):
                self.n += 1
                yield ev

        monkeypatch.setattr(chrome.EventStream, "__iter__", counted)


@pytest.mark.parametrize("run", sorted(RUNS))
def test_where_the_names_are_never_changes_the_diagnosis(tmp_path, run):
    path = tmp_path / "host.trace.json"
    seen = []
    for order in ORDERS:
        tls = load_file(_write(path, order(RUNS[run]())))
        seen.append(json.dumps(diagnose(tls).to_dict(), sort_keys=True))
    assert seen[0] == seen[1] == seen[2] == seen[3]
    assert '"verdict": "inconclusive"' not in seen[0]


def test_names_first_is_read_in_one_pass(tmp_path, monkeypatch):
    events = names_first(gpu_run(steps=50))
    path = _write(tmp_path / "host.trace.json", events)
    count = _Counting(monkeypatch)
    (one,) = load_file(path)
    # the leading names, the first event after them, then every event once
    assert count.n == len(events) + sum(e["ph"] == "M" for e in events) + 1
    count.n = 0
    (late,) = load_file(_write(tmp_path / "late.trace.json", threads_late(events)))
    assert len(events) * 2 <= count.n <= len(events) * 3  # the one pass gave up, then two
    assert one.meta.producer == late.meta.producer == "tf-trace-viewer"
    assert len(one.steps) == len(late.steps) == 50


def test_a_name_replaced_later_is_the_name_used(tmp_path):
    """Names are last-wins, as in a full index: renaming a thread that events already used
    sends the one pass back to the full index."""
    events = gpu_run(steps=20)
    renamed = [*events[:30], _m(7, "thread_name", "Stream #16(Compute)", 3), *events[30:]]
    path = tmp_path / "host.trace.json"
    (late,) = load_file(_write(path, renamed))
    assert late.kernel_counts["GPU 0"] == 40  # the MatMuls before the rename count too
    (moved,) = load_file(_write(path, names_last(renamed)))
    assert diagnose([late]).to_dict() == diagnose([moved]).to_dict()


def test_check_event_fast_path_keeps_the_error_messages():
    ok = {"ph": "X", "name": "k", "ts": 1.5, "dur": 2}
    assert event_check.check_event(ok, "f") is ok
    assert event_check.check_event({"ph": "X", "ts": "12.5"}, "f")["ts"] == "12.5"
    for bad, what in ((float("inf"), "inf"), (float("nan"), "nan"), (True, "True")):
        with pytest.raises(chrome.TraceError, match=f"dur is '{what}', expected a finite"):
            event_check.check_event({"name": "k", "ts": 0.0, "dur": bad}, "f")
    with pytest.raises(chrome.TraceError, match="trace event is a list"):
        event_check.check_event([], "f")


@pytest.mark.parametrize("run", sorted(RUNS))
def test_past_the_interval_bound_a_prefix_is_diagnosed(tmp_path, monkeypatch, run):
    """400 steps of 5 to 7 intervals each under a bound of 1000: the first part of the run
    is analyzed, with the same verdict, and the report says so."""
    path = _write(tmp_path / "host.trace.json", RUNS[run](400))
    whole = diagnose(load_file(path))
    monkeypatch.setenv(LIMIT_ENV, "1000")
    tls = load_file(path)
    part = diagnose(tls)
    assert part.verdict == whole.verdict != "inconclusive"
    for tl in tls:
        assert 10 < len(tl.steps) < 200
        assert any("more intervals than the memory bound (1,000)" in x for x in tl.meta.limitations)


def test_distinct_names_do_not_grow_the_tables(tmp_path):
    """A file with more distinct threads, devices, markers, input-wait names and iterator
    chains than any real one: every table stays within its cap."""
    n = MAX_KEYS + 500
    ev = [_m(1, "process_name", "/host:CPU")]
    for i in range(n):
        ev += [
            _m(1, "thread_name", f"tf_data_{i}", i),
            _m(100 + i, "process_name", f"/device:GPU:{i}"),
        ]
        ev += [_m(100 + i, "thread_name", "Stream #1(Compute)", 1)]
    for i in range(n):
        t = i * 10.0
        ev += [
            _x(1, i, f"MultiDeviceIteratorGetNextFromShard/{i}", t, 5.0),
            _x(1, i, f"PjitFunction(f{i})", t, 5.0),
            _x(1, i, "Iterator::Prefetch", t, 1.0, long_name=f"Iterator::Model::Map{i}"),
            _x(100 + i, 1, f"kernel_{i}", t, 5.0),
        ]
    path = _write(tmp_path / "host.trace.json", ev)
    doc = chrome.open_chrome(path)
    assert len(doc.thread_names) == MAX_KEYS and len(doc.process_names) == MAX_KEYS
    (tl,) = load_file(path)
    assert len(tl.markers) <= MAX_KEYS
    assert len(tl.input_wait_names) <= MAX_KEYS + 1  # and "other"
    assert len(tl.meta.devices) <= MAX_KEYS and len(tl.kernel_counts) <= MAX_KEYS
    assert len(tl.pipeline["iterator_chains"]) == 20


def test_replica_numbers_are_capped(tmp_path):
    """A replica number in an op's long name cannot make the reader build a table that big."""
    ev = [
        _m(1, "process_name", "/host:CPU"),
        _m(1, "thread_name", "tf_Compute/0", 2),
        _m(1, "thread_name", "python", 1),
    ]
    for i in range(10):
        t = i * STEP_US
        ev += [
            _x(1, 1, "one_step_on_iterator", t, STEP_US),
            _x(1, 2, "MatMul", t + 10, 400.0, long_name="dense/MatMul"),
            _x(1, 2, "MatMul", t + 10, 400.0, long_name="replica_1/dense/MatMul"),
            _x(1, 2, "MatMul", t + 10, 400.0, long_name="replica_99999999999/dense/MatMul"),
        ]
    (tl,) = load_file(_write(tmp_path / "host.trace.json", ev))
    assert tl.meta.replicas == 2 < MAX_REPLICAS
    assert tl.devices == ["CPU replica 0", "CPU replica 1"]


def test_xplane_events_are_streamed_not_decoded_from_one_json(monkeypatch):
    """xprof's JSON of a profile is one string of every event (then decoded whole): its
    reading (the cross-check) takes the events one at a time from xprof's converter."""
    pytest.importorskip("xprof")
    from xprof.convert import raw_to_tool_data

    from gpudiag.trace.tf.xspace.by_xprof import read_xplane_xprof
    from tests.helpers.paths import sample

    def refuse(raw: bytes) -> str:
        raise AssertionError("the whole trace was made into one JSON string")

    monkeypatch.setattr(raw_to_tool_data, "process_raw_trace", refuse)
    tls = read_xplane_xprof(sample("tf_gpu_multi_worker.xplane.pb"))
    assert [tl.meta.producer for tl in tls] == ["xplane", "xplane"]  # two workers
    assert all(len(tl.steps) and tl.has_device_activity() for tl in tls)


def test_xplane_without_xprofs_event_stream_reads_its_public_json_the_same(monkeypatch):
    """The event stream is not public xprof API: without it, xprof's JSON output is
    streamed from a private file, giving the same timelines."""
    pytest.importorskip("xprof")
    from gpudiag.analyze import diagnose
    from gpudiag.trace.tf.xspace import by_xprof
    from tests.helpers.paths import sample

    path = sample("tf_gpu_multi_worker.xplane.pb")
    streamed = diagnose(by_xprof.read_xplane_xprof(path)).to_dict()
    monkeypatch.setattr(by_xprof, "_event_stream_available", lambda: False)
    tls = by_xprof.read_xplane_xprof(path)
    assert [tl.meta.producer for tl in tls] == ["xplane", "xplane"]
    assert all(tl.meta.source == path for tl in tls)
    assert diagnose(tls).to_dict() == streamed


# ---- one event per line: decoded line by line, the same events as ijson gives ----------------
HEAD = b'{"displayTimeUnit": "ns", "metadata": {"highres-ticks": true},\n"traceEvents": [\n'
EV = [
    {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
    {"ph": "X", "pid": 1, "tid": 2, "name": 'a "quoted" ]}, name', "ts": 1.5, "dur": 2},
    {"ph": "X", "pid": 1, "tid": 2, "name": "n", "ts": 4.0, "dur": 1.0, "args": {"a": [1, {}]}},
]
LINES = [json.dumps(e).encode() for e in EV]
LAYOUTS = {
    "comma after": HEAD + b",\n".join(LINES) + b"\n]}\n",
    "xprof": HEAD + b"".join(x + b",\n" for x in LINES) + b"{}]}\n",
    "comma before": HEAD + b"\n,".join(LINES) + b"\n]}",
    "crlf": (HEAD + b",\n".join(LINES) + b"\n]}\n").replace(b"\n", b"\r\n"),
    "keys after": HEAD + b",\n".join(LINES) + b'\n], "otherData": {"v": "2.0"}}\n',
    "empty": HEAD + b"]}\n",
}
BROKEN = {
    "pretty": json.dumps({"traceEvents": EV}, indent=2).encode(),
    "two on a line": HEAD + LINES[0] + b",\n" + LINES[1] + b", " + LINES[2] + b"\n]}",
    "missing comma": HEAD + LINES[0] + b",\n" + LINES[1] + b"\n" + LINES[2] + b"\n]}",
    "trailing comma": HEAD + b"".join(x + b",\n" for x in LINES) + b"]}",
    "truncated": HEAD + b"".join(x + b",\n" for x in LINES),
    "garbage after": HEAD + b",\n".join(LINES) + b"\n]}\n]",
    "second list": HEAD + b",\n".join(LINES) + b'\n], "traceEvents": [' + LINES[1] + b"]}",
    "deep": HEAD + LINES[0] + b',\n{"ph": "X", "args": ' + b"[" * 70 + b"]" * 70 + b"}\n]}",
    "infinite": HEAD + LINES[0] + b',\n{"ph": "X", "ts": 1e999}\n]}',
}


def _events(path: str) -> tuple[list[Any], str | None]:
    out: list[Any] = []
    try:
        out.extend(chrome.EventStream(path, "traceEvents.item"))
    except chrome.TraceError as e:
        return out, str(e)
    return out, None


def _ijson_only(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_lines(path: str) -> Any:
        raise chrome.NotLines
        yield

    monkeypatch.setattr(chrome, "event_slices", not_lines)


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_one_event_per_line_is_decoded_by_line(tmp_path, monkeypatch, layout, gz):
    path = tmp_path / ("t.json.gz" if gz else "t.json")
    path.write_bytes(gzip.compress(LAYOUTS[layout]) if gz else LAYOUTS[layout])
    with monkeypatch.context() as m:
        m.setattr("ijson.items", None)  # never reached
        by_line = _events(str(path))
    _ijson_only(monkeypatch)
    assert by_line == _events(str(path))
    assert by_line[1] is None and len(by_line[0]) in (0, 3, 4)


@pytest.mark.parametrize("layout", sorted(BROKEN))
def test_other_layouts_and_errors_are_ijsons(tmp_path, monkeypatch, layout):
    """Where the layout stops holding, ijson takes over: the same events, or the same error
    (the JSON guard may refuse a chunk before ijson gives its first events)."""
    path = tmp_path / "t.json"
    path.write_bytes(BROKEN[layout])
    got, error = _events(str(path))
    _ijson_only(monkeypatch)
    want, want_error = _events(str(path))
    assert error == want_error
    assert (error is None) == (layout in ("pretty", "two on a line", "second list"))
    if error is None:
        assert got == want and len(got) in (3, 4)


def test_an_integer_beyond_64_bits_is_a_float_by_line(tmp_path):
    """Valid JSON that yajl (ijson) refuses; orjson reads it as a float, which is finite."""
    path = tmp_path / "t.json"
    path.write_bytes(HEAD + LINES[0] + b',\n{"ph": "X", "args": {"n": 1' + b"0" * 30 + b"}}\n]}")
    events, error = _events(str(path))
    assert error is None and events[1]["args"]["n"] == 1e30  # (as a time: impossible, dropped)


def test_step_markers_answered_first_as_every_question_would():
    from gpudiag.trace.tf.viewer.lanes import STEP, classified, name_info

    for name in ("train 0", "train 7", "train 123456789"):
        assert name_info(name) == classified(name)
        assert name_info(name)[:2] == (STEP, int(name.split()[1]))
    for name in ("IteratorGetNext", "train_function", "ApplyAdam", "train 3 x"):
        assert name_info(name) == classified(name)
