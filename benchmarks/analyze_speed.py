"""``gpudiag analyze --json`` against the floor of reading the file, and against HTA.

For each trace format, as whole processes alternated round by round (a slow spell on a
shared machine hits every contender of a round alike), the median of ``--runs`` rounds after
one warm-up round:

* **floor**: a process that gunzips the file (``gzip.open(...).read()``) and decodes it whole
  with ``orjson.loads``; the floor is the sum of those two in-process phases, the least any
  reader of the whole JSON document pays (its process wall time is shown beside it).
* **gpudiag**: ``python -m gpudiag analyze FILE --json``, the whole process.
* **HTA** (Kineto only): ``hta_temporal_breakdown.py`` by the interpreter of HTA's own venv
  (``--hta-python``): ``TraceAnalysis`` (parse, align) and ``get_temporal_breakdown``.

Traces: the V100 PyTorch trace in ``sample_traces`` (ResNet-50, DataLoader in the main
process; 75,718 events, 1.2 MB gzipped, 35 MB of JSON, written by Kineto with each event
indented over several lines), the same with its steps repeated ``--factor`` (3) times by
``make_synthetic_kineto.py`` (227k events), and TF trace-viewer JSON (gzipped) and gpudiag's
own stream of ``--mb`` MB each, made by ``bounded_readers.py``'s generators, all in a temp
directory.

Cold start, on a 220-event trace (``mi250_rocm_minitoy.json.gz``): the interpreter alone
(``python -c pass``), ``gpudiag --help``, ``gpudiag analyze --json``, and the share of the
last that is the interpreter's start.

Children run from cached bytecode (``PYTHONPYCACHEPREFIX`` in the temp directory, as after
an install). The 1-minute load average before and after is printed: compare runs only at
similar load.

Targets: gpudiag >= 5x faster than HTA, and <= 1.3x the floor.

    python benchmarks/analyze_speed.py --hta-python ../hta-venv/bin/python
    python benchmarks/analyze_speed.py --runs 7 --mb 54
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import bounded_readers
from speed_vs_hta import (
    GENERATOR,
    HTA_RUNNER,
    REPO,
    check_python,
    child_env,
    default_hta_python,
    fmt_table,
    run_process,
)

V100 = REPO / "sample_traces" / "resnet50_dataloader_workers0.pt.trace.json.gz"
SMALL = REPO / "sample_traces" / "mi250_rocm_minitoy.json.gz"
KINETO = "PyTorch V100 (Kineto)"
HTA_TARGET = 5.0
FLOOR_TARGET = 1.3
FLOOR = """
import gzip, sys, time
import orjson
path = sys.argv[1]
t0 = time.perf_counter()
raw = gzip.open(path).read() if path.endswith(".gz") else open(path, "rb").read()
t1 = time.perf_counter()
orjson.loads(raw)
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def _inputs(work: Path, mb: int, factor: int) -> dict[str, Path]:
    x = work / f"v100_x{factor}.json.gz"
    subprocess.run(
        [sys.executable, str(GENERATOR), str(V100), "--factor", str(factor), "-o", str(x)],
        check=True,
        capture_output=True,
    )
    tf_json = work / "tf_trace_viewer.json"
    bounded_readers.tf_trace_viewer(tf_json, mb * bounded_readers.MB)
    tf_gz = work / "tf_trace_viewer.json.gz"
    with open(tf_json, "rb") as src, gzip.open(tf_gz, "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst)
    tf_json.unlink()
    gd = work / "gpudiag.json"
    bounded_readers.gpudiag_trace(gd, mb * bounded_readers.MB)
    return {
        KINETO: V100,
        f"{KINETO} x{factor}": x,
        "TF trace viewer": tf_gz,
        "gpudiag stream": gd,
    }


def _median(runs: list[float]) -> float:
    return statistics.median(runs) if runs else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="measured rounds (after one warm-up)")
    ap.add_argument("--mb", type=int, default=35, help="MB of JSON of the generated traces")
    ap.add_argument("--factor", type=int, default=3, help="the V100 trace's steps repeated")
    ap.add_argument("--hta-python", default=default_hta_python())
    ap.add_argument("--no-hta", action="store_true")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="gpudiag-speed-") as tmp:
        work = Path(tmp)
        env = child_env(work)
        py = sys.executable
        hta_why = "--no-hta" if args.no_hta else check_python(args.hta_python, "hta", env, REPO)
        traces = _inputs(work, args.mb, args.factor)
        sizes = {k: (p.stat().st_size, _json_bytes(p)) for k, p in traces.items()}
        load0 = os.getloadavg()[0]

        cmds: dict[tuple[str, str], list[str]] = {}
        for label, path in traces.items():
            cmds[(label, "floor")] = [py, "-c", FLOOR, str(path)]
            cmds[(label, "gpudiag")] = [py, "-m", "gpudiag", "analyze", str(path), "--json"]
            if hta_why is None and label.startswith(KINETO):
                stage = work / "hta" / path.name.split(".")[0]  # HTA reads a directory
                stage.mkdir(parents=True)
                (stage / path.name).symlink_to(path)
                cmds[(label, "HTA")] = [args.hta_python, str(HTA_RUNNER), str(stage)]
        cmds[("small", "python -c pass")] = [py, "-c", "pass"]
        cmds[("small", "gpudiag --help")] = [py, "-m", "gpudiag", "--help"]
        cmds[("small", "analyze --json")] = [py, "-m", "gpudiag", "analyze", str(SMALL), "--json"]

        walls: dict[tuple[str, str], list[float]] = {k: [] for k in cmds}
        peaks: dict[tuple[str, str], float] = dict.fromkeys(cmds, 0.0)
        floor_s: dict[str, list[float]] = {k: [] for k in traces}
        verdicts: dict[str, str] = {}
        for rnd in range(args.runs + 1):
            for key, cmd in cmds.items():
                run = run_process(cmd, env, REPO)
                if run.rc != 0:
                    print(f"{key}: exit {run.rc}\n{run.stderr[-2000:]}", file=sys.stderr)
                    return 1
                if rnd == 0:
                    continue  # warm-up: page cache and bytecode
                walls[key].append(run.wall_s)
                peaks[key] = max(peaks[key], run.peak_bytes / 2**20)
                if key[1] == "gpudiag":
                    verdicts[key[0]] = json.loads(run.stdout)["verdict"]
                if key[1] == "floor":
                    floor_s[key[0]].append(sum(map(float, run.stdout.split())))
            print(f"round {rnd}/{args.runs} done", file=sys.stderr, flush=True)
        load1 = os.getloadavg()[0]

    print(f"\nload average (1 min): {load0:.2f} before, {load1:.2f} after; {args.runs} rounds")
    if hta_why:
        print(f"HTA skipped: {hta_why}")
    rows = []
    for label in traces:
        g = _median(walls[(label, "gpudiag")])
        fl = _median(floor_s[label])
        hta = _median(walls.get((label, "HTA"), []))
        gz, js = sizes[label]
        rows.append(
            [
                label,
                f"{gz / 1e6:.1f} / {js / 1e6:.0f}",
                f"{g:.2f}",
                f"{peaks[(label, 'gpudiag')]:.0f}",
                f"{fl:.2f} ({_median(walls[(label, 'floor')]):.2f})",
                f"{peaks[(label, 'floor')]:.0f}",
                f"{g / fl:.2f}x",
                f"{hta:.2f}" if hta == hta else "-",
                f"{hta / g:.1f}x" if hta == hta else "-",
                verdicts[label],
            ]
        )
    print(
        fmt_table(
            [
                "trace",
                "MB file / JSON",
                "gpudiag s",
                "MiB",
                "floor s (process)",
                "MiB",
                "gpudiag/floor",
                "HTA s",
                "HTA/gpudiag",
                "verdict",
            ],
            rows,
        )
    )
    bare = _median(walls[("small", "python -c pass")])
    small = _median(walls[("small", "analyze --json")])
    helps = _median(walls[("small", "gpudiag --help")])
    print(
        f"\ncold start: python -c pass {bare:.3f} s; gpudiag --help {helps:.3f} s; analyze "
        f"--json on {SMALL.name} {small:.3f} s, of which the interpreter's start "
        f"{100 * bare / small:.0f}% (peak {peaks[('small', 'analyze --json')]:.0f} MiB)"
    )
    print(f"targets: HTA/gpudiag >= {HTA_TARGET:g}x; gpudiag/floor <= {FLOOR_TARGET:g}x")
    return 0


def _json_bytes(path: Path) -> int:
    if path.name.endswith(".gz"):
        with gzip.open(path) as f:
            return sum(len(c) for c in iter(lambda: f.read(1 << 20), b""))
    return path.stat().st_size


if __name__ == "__main__":
    raise SystemExit(main())
