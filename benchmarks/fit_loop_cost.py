"""gpudiag's cost on ``fit`` called in a loop: 40 fits of 8 steps on one model (online or RL
training), timed with and without ``DiagnoseCallback``. Each round builds a fresh model,
compiles it with one fit, then times the loop without gpudiag and with it (a new callback,
whose fits become one series from the second on), in an order that alternates between
rounds; the per-round ratio with / without is robust to the host's load swinging between
rounds (on a shared 2-core VM the same loop took 5.7-12.3 s across processes). Target: at
most 1.05x (a series pays gpudiag's fixed cost once, record/fit_series.py).

    python benchmarks/fit_loop_cost.py [--rounds 6] [--fits 40] [--steps 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def loop(fits: int, steps: int, with_gpudiag: bool) -> tuple[float, dict]:
    import keras
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.random((steps * 32, 32), dtype=np.float32)
    y = rng.random((steps * 32, 1), dtype=np.float32)
    m = keras.Sequential(
        [keras.Input((32,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)]
    )
    m.compile("adam", "mse")
    m.fit(x, y, batch_size=32, epochs=1, verbose=0)  # compiled outside the timing
    cbs = []
    if with_gpudiag:
        from gpudiag import DiagnoseCallback

        cbs = [DiagnoseCallback(trace_path=os.path.join(tempfile.mkdtemp(), "t.json"), quiet=True)]
    t = time.perf_counter()
    for _ in range(fits):
        m.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=cbs)
    wall = time.perf_counter() - t
    facts: dict = {}
    if cbs:
        d = cbs[0].diagnosis.to_dict()
        fit = d["run"]["fit"]
        facts = {
            "fits": fit.get("fits"),
            "own_pct": round(100 * fit["shares"].get("gpudiag", 0.0), 1),
            "findings": [f["id"] for f in d["findings"]],
        }
        from gpudiag.record import fit_series

        fit_series.close_open()  # the series ends here, outside the timing: no sampler
        # keeps running into the next loop
    return wall, facts


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--fits", type=int, default=40)
    p.add_argument("--steps", type=int, default=8)
    a = p.parse_args()
    ratios = []
    for r in range(a.rounds):
        order = (False, True) if r % 2 == 0 else (True, False)
        got = {}
        for w in order:
            got[w] = loop(a.fits, a.steps, w)
        ratios.append(got[True][0] / got[False][0])
        print(
            f"  round {r}: without {got[False][0]:.2f} s, with {got[True][0]:.2f} s, "
            f"ratio {ratios[-1]:.3f}; series {got[True][1]}",
            flush=True,
        )
    print(
        f"{a.fits} fits x {a.steps} steps: median ratio {statistics.median(ratios):.3f}x "
        f"(rounds {min(ratios):.3f}-{max(ratios):.3f})"
    )
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
