"""What a fuzzer found in the JSON readers (hardening round 3): a quadratic head scan,
impossible times taken at face value, long names scanned whole. Each input is generated
small; each test failed before its fix."""

from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpudiag.record.writer import TraceWriter
from gpudiag.trace.errors import TraceError
from gpudiag.trace.load import load_file
from gpudiag.trace.model.sink import STEP_WEIGHT, limit_intervals
from gpudiag.trace.model.timeline import Metadata
from gpudiag.trace.names import comm, facts
from gpudiag.trace.names.name_scan import CACHE_CHARS, NameCache, lowered
from gpudiag.trace.source.event_check import check_event
from gpudiag.trace.source.event_lines import line_events
from tests.helpers.paths import SAMPLES


def _kineto(events: list[dict]) -> bytes:
    return json.dumps({"schemaVersion": 1, "traceEvents": events}).encode()


def _kernels(n: int, **extra: float) -> list[dict]:
    return [
        {
            "ph": "X",
            "cat": "kernel",
            "name": "volta_sgemm_128x64_nn",
            "pid": 0,
            "tid": 7,
            "ts": 1000.0 * i,
            "dur": 600.0,
            "args": {"device": 0},
            **extra,
        }
        for i in range(n)
    ]


def test_blank_lines_before_the_document_are_read_in_linear_time(tmp_path: Path) -> None:
    # the head used to be re-joined and re-stripped per line: 200k lines took ~13 s
    p = tmp_path / "blank_head.json"
    p.write_bytes(b"\n" * 200_000 + b'{"traceEvents":[\n' + b'{"ph":"M"},\n{"ph":"X"}\n]}\n')
    t0 = time.perf_counter()
    events = list(line_events(str(p)))
    assert time.perf_counter() - t0 < 2.0
    assert events == [{"ph": "M"}, {"ph": "X"}]


# ---- impossible times: dropped, counted, never a confident 1e305 ms step ----------------


def _analyze(path: Path) -> dict:
    """``gpudiag analyze --json`` as a user runs it, numpy warnings made errors."""
    r = subprocess.run(
        [sys.executable, "-W", "error", "-m", "gpudiag", "analyze", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return json.loads(r.stdout)


def _steps(n: int, pid: int = 1) -> list[dict]:
    return [
        {"ph": "X", "cat": "cpu_op", "name": f"ProfilerStep#{i}", "pid": pid, "tid": 1,
         "ts": 10_000.0 * i, "dur": 9_000.0}
        for i in range(n)
    ]  # fmt: skip


IMPOSSIBLE = [{"dur": 1e308}, {"ts": 1e308}, {"dur": -1.0}, {"ts": -1e300}, {"dur": 40 * 86_400e6}]


def _said_dropped(d: dict, n: int) -> bool:
    said = (f"{n} event{'s' if n > 1 else ''} with impossible times dropped",)
    return any(line.startswith(said) for line in d["limitations"])


def test_kineto_events_with_impossible_times_are_dropped_and_counted(tmp_path: Path) -> None:
    bad = [{**_kernels(1)[0], **b} for b in IMPOSSIBLE]
    p = tmp_path / "k.json"
    p.write_bytes(_kineto(_kernels(30) + _steps(3) + bad))
    d = _analyze(p)
    assert d["steps"]["median_ms"] == pytest.approx(9.0)
    assert _said_dropped(d, len(IMPOSSIBLE))


def test_a_huge_kernel_is_dropped_in_a_trace_read_by_ijson(tmp_path: Path) -> None:
    # not one event per line: the general (ijson) path drops it the same way
    p = tmp_path / "k.json"
    events = _kernels(30) + _steps(3) + [{**_kernels(1)[0], "dur": 1e308}]
    p.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=1))
    d = _analyze(p)
    assert d["steps"]["median_ms"] == pytest.approx(9.0) and _said_dropped(d, 1)


def test_tf_trace_viewer_steps_with_impossible_times_are_dropped(tmp_path: Path) -> None:
    meta = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "M", "pid": 1, "tid": 2, "name": "thread_name", "args": {"name": "python"}},
    ]
    steps = [
        {"ph": "X", "pid": 1, "tid": 2, "name": f"train {i}", "ts": 10_000.0 * i,
         "dur": 9_000.0, "args": {"step_num": str(i)}}
        for i in range(4)
    ]  # fmt: skip
    bad = [{**steps[0], "name": "train 9", **b} for b in IMPOSSIBLE]
    p = tmp_path / "tf.trace.json"
    p.write_text(json.dumps({"displayTimeUnit": "ns", "traceEvents": meta + steps + bad}))
    d = _analyze(p)
    assert d["steps"]["median_ms"] == pytest.approx(9.0)
    assert _said_dropped(d, len(IMPOSSIBLE))


def test_gpudiag_stream_events_with_impossible_times_are_dropped(tmp_path: Path) -> None:
    p = tmp_path / "run.gpudiag.json"
    w = TraceWriter(str(p), Metadata(producer="gpudiag"), flush_every=0.0)
    for i in range(5):
        w.step(i, i * 10_000.0, i * 10_000.0 + 9_000.0)
    w.close()
    lines = p.read_text().rstrip().removesuffix("]").rstrip("\n").split("\n")
    for b in IMPOSSIBLE:
        ev = {"ph": "X", "cat": "step", "name": "step 9", "pid": 1, "tid": 1,
              "ts": 60_000.0, "dur": 9_000.0, "args": {"step": 9}, **b}  # fmt: skip
        lines.append("," + json.dumps(ev))
    p.write_text("\n".join([*lines, "]"]) + "\n")
    d = _analyze(p)
    assert d["steps"]["median_ms"] == pytest.approx(9.0)
    assert _said_dropped(d, len(IMPOSSIBLE))


# ---- long names: bounded, cheap classification ------------------------------------------


def _sample_names() -> set[str]:
    names: set[str] = set()
    for p in SAMPLES.glob("*.json.gz"):
        with gzip.open(p) as f:
            doc = json.loads(f.read())
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        names.update(e["name"] for e in events if isinstance(e.get("name"), str))
    return names


NAMED = [  # one name for each row of the tables, as docs/formats.md lists them
    "void dpsk::ep::internode::combine<false, 8>(int)",
    "deep_ep::intranode::dispatch",
    "EpDispatchIntraNodeKernel",
    "multimem_all_reduce",
    "nvshmemi_proxy",
    "mscclKernel",
    "rcclKernel",
    "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "ncclKernel_SendRecv",
    "userbuffers_fp16_sum",
    "cross_device_reduce_1stage",
    "gloo:all_reduce",
    "all-reduce-start.3",
    "%collective-permute-done.1",
    "jit(train)/jvp(model)/psum",
    "CollectiveReduceV2",
    "HorovodAllreduce",
    "my_AllToAll_kernel",
    "Memcpy DtoD (Device -> Device)",
    "copy-start.2",
    "sm90_xmma_gemm_e4m3bf16_e4m3f32",
    "ampere_bf16_s16816gemm_bf16_128x64",
    "volta_h884gemm_64x64",
    "cutlass::Kernel<cutlass_80_tensorop_s1688gemm>",
    "cutlass_x_sm90_y",
    "void at::native::vectorized_elementwise_kernel<c10::Half>",
    "imma_int8_kernel",
    "tf32_gemm",
    "flash_fwd_kernel",
    "nchwToNhwcKernel",
    "void tensorflow::functor::SwapDimension1And2InTensor3UsingTiles",
    "autograd::engine::evaluate_function: AddmmBackward0",
    "Optimizer.step#SGD.step",
    "gradient_tape/model/dense/MatMul",
    "ResourceApplyAdam",
    "transpose(jvp(model))",
    "AccumulateGrad",
    "void tensorflow::functor::ApplyAdamKernel<float>(int)",
    "SparseApplyFtrl",
    "ApplyKerasMomentum",
    "__inference_train_function_5012",
    "train_function",
    "__inference_predict_function_123",
    "serving_default_input",
    "jit_predict_step",
]


def _plain_facts(name: str) -> tuple:
    """What the facts tables say when each regex reads the whole name (no needles)."""
    precision = next(
        (lab for lab, scan in facts.PRECISION_TABLE if scan.pattern.search(name)), None
    )
    return (
        precision,
        facts.TENSOR_CORE_RE.search(name) is not None,
        facts.LAYOUT_TRANSPOSE_RE.search(name) is not None,
        facts.TRAINING_RE.search(name) is not None,
    )


def _plain_comm(name: str) -> comm.Comm | None:
    for row in comm.COMM_TABLE:
        m = row.scan.pattern.search(name)
        if m is not None:
            op = row.op if row.op is not None else (m.group(1) if m.groups() else "collective")
            return comm.Comm(row.library, op)
    return None


def test_the_needles_never_hide_a_match() -> None:
    names = _sample_names() | set(NAMED)
    for name in names:
        low = lowered(name)
        got = (
            facts.kernel_precision(name),
            facts.is_tensor_core(low),
            facts.LAYOUT_TRANSPOSE.search(name, low) is not None,
            facts.is_training_name(name),
        )
        assert got == _plain_facts(name), name
        assert comm.classify(name) == _plain_comm(name), name
        assert comm.is_copy(name) == (comm.COPY_RE.search(name) is not None), name
        assert facts.is_inference_name(name) == (facts.INFERENCE_RE.search(name) is not None)
    # every row of the tables is exercised by some name
    assert {_plain_comm(n).library for n in NAMED if _plain_comm(n)} >= {
        row.library for row in comm.COMM_TABLE
    }


def test_distinct_long_kernel_names_cost_little(tmp_path: Path) -> None:
    # was ~1.3 s of regex per MiB of distinct name (a 25 KB gzip took 9.3 s): 2 MiB here
    rng = random.Random(1)
    names = [
        f"void cutlass_kernel_{i}_" + "".join(rng.choices("ab_:<>, ", k=4000)) for i in range(512)
    ]
    t0 = time.perf_counter()
    run = facts.RunFacts()
    for name in names:
        comm.classify(name)
        comm.is_copy(name)
        run.kernel(name, 1.0)
        run.host_op("op " + name)
    assert time.perf_counter() - t0 < 0.5


def test_name_caches_hold_a_bounded_number_of_characters() -> None:
    cache = NameCache(max_names=10)
    for i in range(20):
        cache.put(f"k{i}", i)
    assert len(cache) == 10
    big = NameCache()
    big.put("x" * (CACHE_CHARS + 1), 1)
    assert not big


def test_a_wrong_json_type_is_named_in_words() -> None:
    # was "args is a int" / "trace event is a str" (Python's type names)
    with pytest.raises(TraceError, match="args is a number, expected an object"):
        check_event({"name": "k", "args": 5}, "f")
    with pytest.raises(TraceError, match="trace event is a string, expected an object"):
        check_event("x", "f")


# ---- a stream of profiled steps: steps weigh what they cost ------------------------------


def test_held_steps_count_for_what_they_cost_in_the_interval_bound(tmp_path: Path) -> None:
    # was: a step counted as one interval, but costs about three at the peak (its columns
    # and per-step shares): 990,000 profiled steps peaked at 340 MB, past the ~300 MB bound
    p = tmp_path / "steps.gpudiag.json"
    w = TraceWriter(str(p), Metadata(producer="gpudiag"), flush_every=0.0)
    for i in range(600):
        w.step(i, i * 1000.0, i * 1000.0 + 900.0, profiled=True)
    w.close()
    with limit_intervals(1000):
        (tl,) = load_file(str(p))
    assert len(tl.steps) * STEP_WEIGHT <= 1000
    assert any("analyzed its first" in x for x in tl.meta.limitations)
