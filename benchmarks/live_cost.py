"""CPU cost of ``gpudiag live``: sampling + rendering at 1 Hz, as % of one core.

Runs the real monitor loop (samplers on their threads, a rich frame per interval) into an
off-screen terminal for ``--seconds`` and divides this process's CPU time by wall time.
GPU data comes from the replayed two-H100 recording (the NvmlSession code path is the same
as with a driver) or, with ``--nvml real``, from this machine's NVML. Target: <= 1 %.

    python benchmarks/live_cost.py                 # 20 s, 1 Hz, replayed 2x H100
    python benchmarks/live_cost.py --nvml real --seconds 10
    python benchmarks/live_cost.py --recorder      # also: the training-side samplers
"""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path

from rich.console import Console

from gpudiag.record.nvml_replay import ReplayNvml
from gpudiag.record.samplers import SamplerSet
from gpudiag.show.live import run_live

FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "data" / "nvml_h100_bursty.json"


def measure(fn, seconds: float) -> tuple[float, float]:
    """(% of one core, wall seconds) for ``fn()``."""
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    return 100.0 * cpu / wall, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--nvml", choices=["replay", "real"], default="replay")
    ap.add_argument("--width", type=int, default=120)
    ap.add_argument("--height", type=int, default=50)
    ap.add_argument(
        "--recorder",
        action="store_true",
        help="also measure the training-side samplers as DiagnoseCallback runs them",
    )
    args = ap.parse_args()

    lib = ReplayNvml.from_file(FIXTURE, realtime=True) if args.nvml == "replay" else None
    out = io.StringIO()
    console = Console(file=out, width=args.width, height=args.height, force_terminal=True)
    pct, wall = measure(
        lambda: run_live(
            interval=args.interval, console=console, nvml_lib=lib, duration=args.seconds
        ),
        args.seconds,
    )
    gpus = "2x H100 replayed" if lib is not None else "this machine's NVML"
    print(
        f"gpudiag live, {args.interval:g} s interval, {gpus}, {args.width}x{args.height}, "
        f"{wall:.1f} s: {pct:.2f} % of one core ({len(out.getvalue()) / 1024:.0f} KiB drawn)"
    )

    if args.recorder:
        samples: list[tuple] = []
        lib2 = ReplayNvml.from_file(FIXTURE, realtime=True) if args.nvml == "replay" else None

        def record() -> None:
            # as DiagnoseCallback configures them: GIL probe in bursts
            with SamplerSet.default(
                lambda *s: samples.append(s),
                nvml_lib=lib2,
                host_interval=0.5,
                gil_bursts=(0.5, 10.0),
            ):
                time.sleep(args.seconds)

        pct2, wall2 = measure(record, args.seconds)
        print(
            f"recorder samplers (NVML 0.5 s, psutil 0.5 s, GIL probe 0.5 s bursts every 10 s), "
            f"{wall2:.1f} s: "
            f"{pct2:.2f} % of one core in the training process, {len(samples)} samples"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
