"""128 rank files of one run: `gpudiag analyze DIR` serial (--jobs 1) against the process pool.

The ranks are built from a real trace (sample_traces/nccl_world128_rank0.json.gz, rank 0 of a
128-rank NCCL run): each copy gets its own ``distributedInfo.rank``, its own clock offset
(up to ±50 ms, as unsynchronised hosts would have) and, on one rank, collectives that start
later (it arrives last: the others wait for it). Each configuration runs as a whole process;
wall time and the peak memory of the process tree (parent + pool workers, summed, sampled
every 20 ms) are reported, median of ``--runs``.

    python benchmarks/ranks_parallel.py            # target: pool <= 1/1.6 of serial time
    python benchmarks/ranks_parallel.py --ranks 32 --runs 1
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "sample_traces" / "nccl_world128_rank0.json.gz"
STRAGGLER = 77
TARGET_SPEEDUP = 1.6


def build_ranks(out: Path, n: int) -> None:
    doc = json.loads(gzip.decompress(SOURCE.read_bytes()))
    rng = np.random.default_rng(0)
    offsets = rng.uniform(-50_000, 50_000, n)  # µs
    for r in range(n):
        d = json.loads(json.dumps(doc))
        d["distributedInfo"]["rank"] = r
        for ev in d["traceEvents"]:
            if "ts" in ev:
                ev["ts"] = ev["ts"] + float(offsets[r])
            if (
                r == STRAGGLER % n
                and ev.get("cat") == "kernel"
                and "nccl" in ev.get("name", "").lower()
            ):
                ev["ts"] += 0.9 * ev["dur"]  # arrives late, so it waits a tenth as long
                ev["dur"] *= 0.1
        with gzip.open(out / f"rank{r:03d}.pt.trace.json.gz", "wt", compresslevel=1) as f:
            json.dump(d, f)


def run(cmd: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS of the process tree (MiB), stdout."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        peak = 0
        ps = psutil.Process(proc.pid)
        while proc.poll() is None:
            try:
                tree = [ps, *ps.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
            except psutil.Error:
                pass
            time.sleep(0.02)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.read()[-500:]}")
        return wall, peak / 2**20, out.read()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=128)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        build_ranks(folder, args.ranks)
        base = [sys.executable, "-m", "gpudiag", "analyze", str(folder), "--json"]
        results = {}
        for label, extra in (
            ("serial (--jobs 1)", ["--jobs", "1"]),
            (f"pool (--jobs {args.jobs})", ["--jobs", str(args.jobs)]),
        ):
            walls, peaks = [], []
            for _ in range(args.runs):
                wall, peak, out = run(base + extra)
                walls.append(wall)
                peaks.append(peak)
            results[label] = (statistics.median(walls), statistics.median(peaks), out)
        print(
            f"{args.ranks} rank files built from {SOURCE.name} "
            f"({os.path.getsize(folder / 'rank000.pt.trace.json.gz') / 1e3:.0f} kB each, "
            f"{psutil.cpu_count()} cores), median of {args.runs} runs"
        )
        for label, (wall, peak, _) in results.items():
            print(f"  {label:<18} {wall:6.2f} s   peak RSS of the process tree {peak:6.0f} MiB")
        (serial, _, out_s), (pool, _, out_p) = results.values()
        speedup = serial / pool
        print(
            f"  speed-up {speedup:.2f}x (target >= {TARGET_SPEEDUP}x: pool <= 1/{TARGET_SPEEDUP} "
            f"of serial) -> {'met' if speedup >= TARGET_SPEEDUP else 'NOT met'}"
        )
        d_s, d_p = json.loads(out_s), json.loads(out_p)
        same = d_s == d_p
        print(f"  serial and pool diagnoses identical: {same}")
        f = next((x for x in d_p["findings"] if x["id"] == "straggler"), None)
        print(
            f"  straggler named: {f['evidence']['straggler'] if f else None} "
            f"(injected: rank {STRAGGLER % args.ranks}); "
            + (
                f"others wait {f['evidence']['others_wait_ms']} ms "
                f"({f['evidence']['others_wait_share_pct']}% of their step), clock offsets up "
                f"to {f['evidence']['max_clock_offset_ms']} ms recovered"
                if f
                else ""
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
