"""Peak memory and speed of ``gpudiag analyze`` per trace format, on big and hostile inputs.

Builds each input in a temporary directory (nothing large is committed), runs
``python -m gpudiag analyze FILE --json`` as a whole process under ``/usr/bin/time`` and
prints per input: size on disk, decompressed size, exit code, wall time, MB/s (decompressed
bytes per wall second, interpreter start and imports included) and peak RSS.

Targets: every format <= 300 MB peak RSS at any size, >= 20 MB/s; hostile inputs (bombs,
deep nesting, giant strings, floods without newlines) end quickly with exit 2.

    python benchmarks/bounded_readers.py                 # 200 MB and 1 GB per format
    python benchmarks/bounded_readers.py --mb 50 --over-mb 0 --keep /tmp/inputs
    python benchmarks/bounded_readers.py --xplane big.xplane.pb   # and a big xplane
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MB = 1_000_000
RSS_TARGET_MB = 300
SPEED_TARGET_MBS = 20


# ---- inputs ---------------------------------------------------------------------------------


def _write_until(
    path: Path,
    head: str,
    items: Iterator[str],
    tail: str,
    size: int,
    sep: str = ",\n",
    head_is_item: bool = False,
) -> None:
    """``head``, then items joined by ``sep`` until ``size`` bytes, then ``tail``."""
    with open(path, "w") as f:
        f.write(head)
        n = len(head)
        first = not head_is_item
        for item in items:
            chunk = item if first else sep + item
            first = False
            f.write(chunk)
            n += len(chunk)
            if n >= size:
                break
        f.write(tail)


def gpudiag_trace(path: Path, size: int) -> None:
    """gpudiag's own stream: one event per line, steps with device and input intervals."""
    header = {
        "name": "gpudiag.metadata",
        "ph": "M",
        "pid": 1,
        "tid": 1,
        "ts": 0,
        "args": {
            "format": "gpudiag-trace",
            "version": 1,
            "producer": "gpudiag",
            "device_type": "GPU",
            "devices": ["GPU 0"],
        },
    }

    def events() -> Iterator[str]:
        i = 0
        while True:
            t = i * 1000.0
            yield json.dumps(
                {
                    "ph": "X",
                    "cat": "step",
                    "name": f"step {i}",
                    "pid": 1,
                    "tid": 1,
                    "ts": t,
                    "dur": 1000.0,
                    "args": {"step": i, "profiled": True},
                }
            )
            yield json.dumps(
                {
                    "ph": "X",
                    "cat": "input",
                    "name": "IteratorGetNext",
                    "pid": 1,
                    "tid": 2,
                    "ts": t,
                    "dur": 300.0,
                }
            )
            yield json.dumps(
                {
                    "ph": "X",
                    "cat": "device.compute",
                    "name": "kernels",
                    "pid": 100,
                    "tid": 1,
                    "ts": t + 300,
                    "dur": 600.0,
                    "args": {"device": "GPU 0", "n": 12},
                }
            )
            yield json.dumps(
                {"ph": "C", "name": "gpu_util", "pid": 100, "ts": t, "args": {"GPU 0": 60.0}}
            )
            i += 1

    _write_until(
        path, "[\n" + json.dumps(header), events(), "\n]\n", size, sep="\n,", head_is_item=True
    )


def tf_trace_viewer(path: Path, size: int) -> None:
    """TensorFlow trace-viewer JSON: host threads, tf_Compute ops, input waits, step markers."""
    meta = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "M", "pid": 1, "tid": 1, "name": "thread_name", "args": {"name": "python"}},
        {"ph": "M", "pid": 1, "tid": 2, "name": "thread_name", "args": {"name": "tf_Compute/0"}},
        {
            "ph": "M",
            "pid": 1,
            "tid": 3,
            "name": "thread_name",
            "args": {"name": "tf_data_iterator_get_next"},
        },
    ]

    def events() -> Iterator[str]:
        for m in meta:
            yield json.dumps(m)
        i = 0
        while True:
            t = i * 1000.0
            yield json.dumps(
                {"ph": "X", "pid": 1, "tid": 1, "name": f"train {i}", "ts": t, "dur": 1000.0}
            )
            yield json.dumps(
                {
                    "ph": "X",
                    "pid": 1,
                    "tid": 3,
                    "name": "IteratorGetNextOp::DoCompute",
                    "ts": t,
                    "dur": 250.0,
                }
            )
            for k in range(6):
                yield json.dumps(
                    {
                        "ph": "X",
                        "pid": 1,
                        "tid": 2,
                        "name": "MatMul",
                        "ts": t + 300 + 100 * k,
                        "dur": 90.0,
                        "args": {"long_name": f"sequential/dense_{k}/MatMul"},
                    }
                )
            i += 1

    _write_until(path, '{"displayTimeUnit": "ns", "traceEvents": [\n', events(), "\n]}\n", size)


def kineto(path: Path, size: int) -> None:
    """PyTorch profiler JSON: ProfilerStep annotations, kernels, memcpys, launches."""
    top = '{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H100"}],\n'

    def events() -> Iterator[str]:
        i = 0
        while True:
            t = i * 1000.0
            yield json.dumps(
                {
                    "ph": "X",
                    "cat": "user_annotation",
                    "name": f"ProfilerStep#{i}",
                    "pid": 1,
                    "tid": 1,
                    "ts": t,
                    "dur": 1000.0,
                }
            )
            yield json.dumps(
                {
                    "ph": "X",
                    "cat": "gpu_memcpy",
                    "name": "Memcpy HtoD",
                    "pid": 0,
                    "tid": 7,
                    "ts": t + 10,
                    "dur": 50.0,
                    "args": {"device": 0},
                }
            )
            for k in range(6):
                yield json.dumps(
                    {
                        "ph": "X",
                        "cat": "cuda_runtime",
                        "name": "cudaLaunchKernel",
                        "pid": 1,
                        "tid": 1,
                        "ts": t + 60 + 100 * k,
                        "dur": 5.0,
                    }
                )
                yield json.dumps(
                    {
                        "ph": "X",
                        "cat": "kernel",
                        "name": f"gemm_kernel_{k}",
                        "pid": 0,
                        "tid": 7,
                        "ts": t + 70 + 100 * k,
                        "dur": 90.0,
                        "args": {"device": 0, "stream": 7},
                    }
                )
            i += 1

    _write_until(path, top + '"traceEvents": [\n', events(), "\n]}\n", size)


def gz(src: Path) -> Path:
    dst = src.with_name(src.name + ".gz")
    with open(src, "rb") as f, gzip.open(dst, "wb", compresslevel=1) as g:
        shutil.copyfileobj(f, g, 1 << 20)
    return dst


def blank_line_bomb(path: Path, lines: int) -> None:
    """``lines`` empty lines, gzipped (2e9 lines: about 2 MB on disk)."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\n" * (1 << 24)
    with open(path, "wb") as f:
        left = lines
        while left > 0:
            n = min(left, len(block))
            f.write(comp.compress(block[:n]))
            left -= n
        f.write(comp.flush())


def kineto_bomb(path: Path, size: int) -> None:
    """A Kineto header, then blank space inside the event list, gzipped."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        f.write(comp.compress(b'{"schemaVersion": 1, "traceEvents": ['))
        block = b" " * (1 << 24)
        for _ in range(size // len(block)):
            f.write(comp.compress(block))
        f.write(comp.flush())


def deep_nesting(path: Path, depth: int) -> None:
    path.write_text('{"schemaVersion": 1, "traceEvents": [' + "[" * depth + "]" * depth + "]}")


def giant_string(path: Path, size: int) -> None:
    with open(path, "w") as f:
        f.write('{"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "')
        for _ in range(size // MB):
            f.write("a" * MB)
        f.write('"}]}')


def no_newline_flood(path: Path, size: int) -> None:
    with open(path, "w") as f:
        f.write('[\n{"name":"gpudiag.metadata","ph":"M","args":{"format":"gpudiag-trace"}}\n,')
        for _ in range(size // MB):
            f.write("x" * MB)


# ---- measurement ----------------------------------------------------------------------------


def decompressed_size(path: Path) -> int:
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic != b"\x1f\x8b":
        return path.stat().st_size
    n = 0
    d = zlib.decompressobj(31)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            n += len(d.decompress(chunk))
            if n > 50 * (1 << 30):
                break
    return n


def measure(path: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "100"}
    cmd = [
        "/usr/bin/time",
        "-f",
        "%e %M",
        sys.executable,
        "-m",
        "gpudiag",
        "analyze",
        str(path),
        "--json",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    wall_s, rss_kb = r.stderr.strip().splitlines()[-1].split()
    message = [ln for ln in r.stderr.strip().splitlines()[:-1] if ln.strip()]
    verdict = ""
    if r.returncode == 0:
        out = json.loads(r.stdout)
        verdict = out["verdict"]
        bound = [lim for lim in out["limitations"] if "memory bound" in lim]
        if bound:  # "... analyzed its first 375 s of 2,000 s ..."
            verdict += " (" + bound[0].split("analyzed its ")[1].split(" (")[0] + ")"
    return {
        "rc": r.returncode,
        "wall_s": float(wall_s),
        "rss_mb": int(rss_kb) / 1024,
        "verdict": verdict,
        "message": message[0][:110] if message else "",
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=int, default=200, help="size of each big trace (MB)")
    ap.add_argument(
        "--over-mb",
        type=int,
        default=1000,
        help="size of one more trace per format, beyond the interval bound (0: none)",
    )
    ap.add_argument("--xplane", metavar="FILE", help="also measure this .xplane.pb")
    ap.add_argument("--bomb-lines", type=float, default=2e9, help="empty lines in the bomb")
    ap.add_argument("--keep", metavar="DIR", help="build the inputs here and keep them")
    ap.add_argument("--json-out", metavar="FILE", help="also write the rows as JSON")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="gpudiag-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    size = args.mb * MB
    inputs: list[tuple[str, Path]] = []
    try:
        builders = [
            ("gpudiag trace", "trace.gpudiag.json", gpudiag_trace),
            ("TF trace-viewer JSON", "host.trace.json", tf_trace_viewer),
            ("Kineto JSON", "rank0.pt.trace.json", kineto),
        ]
        for label, name, build in builders:
            p = work / name
            if not p.exists():
                build(p, size)
            inputs.append((label, p))
            inputs.append(
                (
                    label + " .gz",
                    gz(p) if not (work / (name + ".gz")).exists() else work / (name + ".gz"),
                )
            )
        if args.over_mb:
            for label, name, build in builders:
                p = work / f"over-{args.over_mb}-{name}"
                if not p.exists():
                    build(p, args.over_mb * MB)
                inputs.append((f"{label}, {args.over_mb} MB", p))
        xplane = REPO / "sample_traces" / "tf_gpu_multi_worker.xplane.pb"
        inputs.append(("xplane.pb (sample, 3 MB)", xplane))
        if args.xplane:
            mb = Path(args.xplane).stat().st_size / MB
            inputs.append((f"xplane.pb ({mb:.0f} MB, --xplane)", Path(args.xplane)))
        hostile = [
            (
                f"gzip bomb: {args.bomb_lines:.0e} empty lines",
                "bomb.json.gz",
                lambda p: blank_line_bomb(p, int(args.bomb_lines)),
            ),
            (
                "gzip bomb: Kineto head + 8 GB of spaces",
                "kbomb.json.gz",
                lambda p: kineto_bomb(p, 8 << 30),
            ),
            ("80 KB of nested brackets", "deep.json", lambda p: deep_nesting(p, 40_000)),
            ("one 200 MB JSON string", "string.json", lambda p: giant_string(p, size)),
            (
                "200 MB without a newline (gpudiag)",
                "flood.json",
                lambda p: no_newline_flood(p, size),
            ),
        ]
        for label, name, build in hostile:
            p = work / name
            if not p.exists():
                build(p)
            inputs.append((label, p))
        rows = []
        crashed: list[str] = []
        print(
            f"{'input':42} {'disk MB':>8} {'data MB':>8} {'rc':>3} {'wall s':>7} "
            f"{'MB/s':>6} {'peak RSS MB':>11}  result"
        )
        for label, p in inputs:
            disk = p.stat().st_size / MB
            data = decompressed_size(p) / MB
            m = measure(p)
            speed = data / m["wall_s"] if m["wall_s"] else float("inf")  # type: ignore[operator]
            result = m["verdict"] or m["message"]
            print(
                f"{label:42} {disk:8.1f} {data:8.1f} {m['rc']:>3} {m['wall_s']:7.2f} "
                f"{speed:6.1f} {m['rss_mb']:11.0f}  {result}",
                flush=True,
            )
            rows.append({"input": label, "disk_mb": disk, "data_mb": data, **m, "mb_per_s": speed})
        # MB/s of the traces of 50 MB and more: on a small file, starting the interpreter
        # and importing dominate (they are in the wall time, not in the speed of reading)
        big = [r for r in rows if r["rc"] == 0 and r["data_mb"] >= 50]  # type: ignore[operator]
        worst_rss = max(r["rss_mb"] for r in rows)  # type: ignore[type-var]
        slowest = min((r["mb_per_s"] for r in big), default=0.0)  # type: ignore[type-var]
        print(
            f"\npeak RSS, worst input: {worst_rss:.0f} MB (target <= {RSS_TARGET_MB} MB); "
            f"slowest trace: {slowest:.1f} MB/s (target >= {SPEED_TARGET_MBS} MB/s)"
        )
        # a trace must be analyzed (exit 0), a hostile input refused in one line (exit 2):
        # any other exit is a crash, whatever the figures above say
        crashed = [str(r["input"]) for r in rows if r["rc"] not in (0, 2)]
        if crashed:
            print(f"CRASHED (exit neither 0 nor 2): {', '.join(crashed)}")
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(rows, indent=2))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if crashed else 0


if __name__ == "__main__":
    raise SystemExit(main())
