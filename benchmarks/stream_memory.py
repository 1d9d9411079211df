"""Peak memory of ``gpudiag analyze`` on gpudiag streams of many profiled steps.

Every step of the stream is profiled, so the steps themselves are held as intervals, not
aggregated (``stream``). Each size runs as a whole process reaped with ``os.wait4``,
whose ``ru_maxrss`` is that child's own peak.

    python benchmarks/stream_memory.py --steps 250000 500000 1000000 --keep /tmp/streams
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEADER = {
    "name": "gpudiag.metadata",
    "ph": "M",
    "pid": 1,
    "tid": 1,
    "ts": 0,
    "args": {"format": "gpudiag-trace", "version": 1, "producer": "gpudiag",
             "device_type": "GPU", "devices": ["GPU 0"]},
}  # fmt: skip


def stream(path: Path, steps: int) -> None:
    """Profiled steps as the writer records them inside windows (the train-function call,
    batches), each with one device interval: two held intervals per step, so a stream of
    up to a million steps is held whole under the default bound of 2,000,000."""
    with open(path, "w") as f:
        f.write("[\n" + json.dumps(HEADER))
        for i in range(steps):
            t = i * 1000.0
            f.write(
                f'\n,{{"ph":"X","cat":"step","name":"step {i}","pid":1,"tid":1,"ts":{t},'
                f'"dur":1000.0,"args":{{"step":{i},"profiled":true,"call":[{t + 50},900.0],'
                f'"batches":1}}}}'
                f'\n,{{"ph":"X","cat":"device.compute","name":"kernels","pid":100,"tid":1,'
                f'"ts":{t + 300},"dur":600.0,"args":{{"device":"GPU 0","n":12}}}}'
            )
        f.write("\n]\n")


def measure(path: Path, *extra: str) -> tuple[float, float, dict]:
    """(seconds, peak RSS MiB, the --json diagnosis) of one analysis."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpudiag", "analyze", str(path), "--json", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        return seconds, usage.ru_maxrss / 1024, {}
    return seconds, usage.ru_maxrss / 1024, json.loads(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, nargs="+", default=[250_000, 500_000, 1_000_000])
    ap.add_argument("--keep", help="write the streams here and keep them")
    ap.add_argument("--max-intervals", type=int, help="passed to gpudiag analyze")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        print("| profiled steps | MB | wall s | peak RSS MiB | steps analyzed | limitation |")
        print("|---:|---:|---:|---:|---:|---|")
        for steps in args.steps:
            path = folder / f"stream_{steps}.json"
            if not path.exists():
                stream(path, steps)
            extra = ("--max-intervals", str(args.max_intervals)) if args.max_intervals else ()
            seconds, peak, d = measure(path, *extra)
            held = (d.get("steps") or {}).get("count")
            cut = next((x for x in d.get("limitations", []) if "first" in x), "")
            mb = path.stat().st_size / 1e6
            print(f"| {steps:,} | {mb:,.0f} | {seconds:.1f} | {peak:.0f} | {held} | {cut[:70]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
