"""``gpudiag live --follow`` on a profiler window that never closes: memory and frame gaps.

A writer process writes a gpudiag stream as fast as it can: the header, then one profiled
window that never closes (each step profiled, its kernel and input wait recorded), up to
``--mb`` MB. A follower (``TraceFollower``, the training panel's source, polled as the live
monitor polls it) tails it in this process. Measured: the follower's peak RSS (its own
``ru_maxrss``, the writer being another process) and the longest poll, which is the longest
time the monitor draws no frame.

    python benchmarks/follow_memory.py --mb 57          # the writer at full speed
    python benchmarks/follow_memory.py --mb 57 --after  # the whole file written first

Targets: peak RSS flat in the file's size (under 200 MB), no poll over 5 s.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script: the repository's packages importable

WRITER = """
import os
import sys
import numpy as np
from gpudiag.record.writer import TraceWriter
from gpudiag.trace.model.timeline import Kind, Metadata, Timeline
path, limit = sys.argv[1], int(sys.argv[2])
w = TraceWriter(path, Metadata(producer="gpudiag", devices=["GPU 0"]), flush_every=0.0)
w.detail(True)  # a profiler window opens, and never closes
i = 0
while True:
    chunk = Timeline(meta=Metadata(producer="gpudiag"))
    t = np.arange(i, i + 500) * 1000.0
    chunk.add_activity("GPU 0", Kind.COMPUTE, t + 300.0, t + 900.0)
    chunk.add_input_wait(t, t + 250.0)
    for j in range(500):
        w.step(i + j, t[j], t[j] + 1000.0, profiled=True)
    w.timeline(chunk)
    i += 500
    w.flush()
    if os.path.getsize(path) >= limit:
        break
"""


def write(path: Path, mb: float) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(int(mb * 1e6))], env=env)


def follow(path: Path, writer: subprocess.Popen[bytes] | None, interval: float) -> dict[str, float]:
    from gpudiag.show.follow import TraceFollower

    follower = TraceFollower(str(path))
    polls = 0
    longest = 0.0
    quiet = 0
    status = None
    while True:
        t0 = time.perf_counter()
        status = follower.poll()
        took = time.perf_counter() - t0
        longest = max(longest, took)
        polls += 1
        done = writer is None or writer.poll() is not None
        caught_up = os.path.getsize(path) <= follower.tail._offset
        quiet = quiet + 1 if done and caught_up else 0
        if quiet >= 2:
            break
        time.sleep(interval)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"  last note: {status.note if status else ''}")
    return {"polls": polls, "longest_poll_s": longest, "peak_rss_mb": rss}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=57.0, help="size of the stream (57 MB)")
    ap.add_argument("--after", action="store_true", help="write the whole file first")
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between polls")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "live.json"
        writer = write(path, args.mb)
        if args.after:
            writer.wait()
        while not path.exists():
            time.sleep(0.05)
        t0 = time.perf_counter()
        got = follow(path, None if args.after else writer, args.interval)
        writer.wait()
        size = path.stat().st_size / 1e6
    print(
        f"{size:.0f} MB stream ({'written first' if args.after else 'writer at full speed'}): "
        f"{got['polls']} polls in {time.perf_counter() - t0:.0f} s, longest poll "
        f"{got['longest_poll_s']:.1f} s, follower peak RSS {got['peak_rss_mb']:.0f} MB"
    )
    ok = got["peak_rss_mb"] < 200 and got["longest_poll_s"] < 5
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
