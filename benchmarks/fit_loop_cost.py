"""gpudiag's cost on ``fit`` called in a loop: 40 fits of 8 steps on one model (online or RL
training), timed with and without ``DiagnoseCallback`` in fresh processes, interleaved (A/B,
``--reps`` rounds). The figure is the loop's wall time (the first fit, which compiles, left
out) and the ratio with / without; the target is at most 1.05x (a series of fits pays
gpudiag's fixed cost once, record/fit_series.py).

    python benchmarks/fit_loop_cost.py [--reps 3] [--fits 40] [--steps 8]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child(with_gpudiag: bool, fits: int, steps: int) -> dict:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.random((steps * 32, 32), dtype=np.float32)
    y = rng.random((steps * 32, 1), dtype=np.float32)
    m = keras.Sequential(
        [keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)]
    )
    m.compile("adam", "mse")
    cbs = []
    cb = None
    if with_gpudiag:
        from gpudiag import DiagnoseCallback

        cb = DiagnoseCallback(trace_path=os.path.join(tempfile.mkdtemp(), "t.json"), quiet=True)
        cbs = [cb]
    m.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=cbs)  # compiles
    t = time.perf_counter()
    for _ in range(fits - 1):
        m.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=cbs)
    wall = time.perf_counter() - t
    out = {"wall_s": wall}
    if cb is not None:
        d = cb.diagnosis
        out["findings"] = [f.id for f in d.findings]
        contention = d.finding("cpu-contention")
        out["others_pct"] = (
            contention.evidence.get("cpu_other_processes_p50_pct") if contention else 0
        )
        out["fits_in_account"] = d.to_dict()["run"]["fit"].get("fits")
    return out


def run(with_gpudiag: bool, fits: int, steps: int) -> dict:
    r = subprocess.run(
        [sys.executable, __file__, "--child", str(int(with_gpudiag)), str(fits), str(steps)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "3"},
        timeout=600,
    )
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[7:])


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--fits", type=int, default=40)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--child", nargs=3)
    a = p.parse_args()
    if a.child:
        out = child(bool(int(a.child[0])), int(a.child[1]), int(a.child[2]))
        print("RESULT " + json.dumps(out), flush=True)
        os._exit(0)
    base, with_ = [], []
    for _ in range(a.reps):
        base.append(run(False, a.fits, a.steps)["wall_s"])
        w = run(True, a.fits, a.steps)
        with_.append(w["wall_s"])
        print(
            f"  without {base[-1]:.2f} s  with {w['wall_s']:.2f} s  {w.get('findings')} "
            f"fits in account {w.get('fits_in_account')}",
            flush=True,
        )
    ratio = statistics.median(with_) / statistics.median(base)
    best = min(with_) / min(base)
    print(f"{a.fits} fits x {a.steps} steps: median ratio {ratio:.3f}x, best/best {best:.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
