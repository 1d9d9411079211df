"""GPU truth: DiagnoseCallback, the NVML/GPM samplers and the remedies' gains on a real GPU.

Keras 3 on the JAX backend (the GPU machine has JAX, no TensorFlow). Each run is a fresh
process (``benchmarks/gpu_workloads.py``: one backend, clean device memory). Each workload is
diagnosed by ``DiagnoseCallback``, then timed without gpudiag before and after the remedy the
diagnosis put first, applied as a user would (``apply``); where that remedy has no
programmatic form the run says so and times the workload's expected remedy instead:

- ``conv``: a convolutional net on in-memory arrays, float32 (XLA's TF32). Expected remedy:
  ``mixed_bfloat16``. Also run at JAX's ``highest`` matmul precision (true FP32, no TF32), so
  GPM's tensor-pipe activity can be checked against what each precision must show.
- ``starved_long``: a ``PyDataset`` doing ~5 ms of pure Python per batch in the main process
  (150 batches an epoch), a small MLP; ``starved``: the same over 40-batch epochs, where the
  worker pool Keras starts again each epoch costs more than it buys.
- ``tiny``: a 32→64→1 MLP on arrays at batch 32 (per-step fixed cost).
- ``varlen``: a text classifier fed batches padded to their own length (recompilation).
- ``eager``: the tiny MLP compiled with ``run_eagerly=True``.

Throughput is samples over wall time of the epochs after the first (compilation and warm-up
stay in epoch 1), the figure a user sees; every run also records ``peak_bytes_in_use``.
Beside the runs, the parent process reads the GPU through gpudiag's own ``NvmlSession``
every 0.25 s (an NVML replay fixture: utilisation samples, memory, power, clocks, GPM) and
``nvidia-smi`` at the same moments, for the sampler-vs-nvidia-smi check.

    python benchmarks/gpu_truth.py --out DIR            # the GPU run (about 4 minutes on an H100)
    python benchmarks/gpu_truth.py --out DIR --small    # the same flow on a CPU

Writes ``DIR/results.json`` (every run: diagnosis, throughput, memory, the remedy applied),
``DIR/nvml_replay.json``, ``DIR/smi_pairs.json``, and archives of the traces and profiles.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOADS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu_workloads.py")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_workloads import FIXED_LEN  # noqa: E402


# ---- the parent: GPU readers beside the runs ------------------------------------------------
class GpuWatch:
    """gpudiag's NvmlSession every ``interval`` s (a replay fixture) and nvidia-smi beside it."""

    SMI_FIELDS = "utilization.gpu,memory.used,power.draw,clocks.sm,temperature.gpu"

    def __init__(self, interval: float = 0.25, smi_every: int = 4) -> None:
        from gpudiag.record.nvml import NvmlSession

        self.session = NvmlSession(backfill=False)
        self.interval = interval
        self.smi_every = smi_every
        self.t0 = time.time()
        self.reads: list[dict[str, Any]] = []
        self.util: list[list[float]] = []
        self.pairs: list[dict[str, Any]] = []
        self.marks: list[tuple[float, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self.smi = shutil.which("nvidia-smi")

    def mark(self, label: str) -> None:
        self.marks.append((round(time.time() - self.t0, 3), label))

    def start(self) -> None:
        if self.session.available:
            self._thread.start()

    def _loop(self) -> None:
        k = 0
        while not self._stop.wait(self.interval):
            k += 1
            smi = None
            if self.smi and k % self.smi_every == 0:
                smi = self._smi()
            snaps = self.session.read()
            if not snaps:
                continue
            s = snaps[0]
            t = round(s.ts_us / 1e6 - self.t0, 3)
            self.util.extend([round((ts / 1e6 - self.t0) * 1000, 1), v] for ts, v in s.util_samples)
            row = {
                "t_s": t,
                "mem_used_mib": s.mem_used_mib,
                "pcie_rx_kbs": None if s.pcie_rx_mbs is None else s.pcie_rx_mbs * 1000,
                "pcie_tx_kbs": None if s.pcie_tx_mbs is None else s.pcie_tx_mbs * 1000,
                "power_mw": None if s.power_w is None else s.power_w * 1000,
                "clock_sm_mhz": s.clock_sm_mhz,
                "temperature_c": s.temperature_c,
                "util": s.util,
            }
            if s.gpm:
                row["gpm"] = {k2: round(v, 2) for k2, v in s.gpm.items()}
            if s.errors:
                row["errors"] = s.errors
            self.reads.append(row)
            if smi is not None:
                self.pairs.append({"t_s": t, "smi": smi, "gpudiag": row})

    def _smi(self) -> dict[str, Any] | None:
        try:
            r = subprocess.run(
                [self.smi, f"--query-gpu={self.SMI_FIELDS}", "--format=csv,noheader,nounits"],
                capture_output=True,
                text=True,
                timeout=5,
            )
            vals = [v.strip() for v in r.stdout.strip().splitlines()[0].split(",")]
            return dict(zip(self.SMI_FIELDS.split(","), vals, strict=False))
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        s = self.session
        fixture = {
            "description": "Recorded by benchmarks/gpu_truth.py through gpudiag's NvmlSession "
            f"every {self.interval:g} s beside Keras 3 (JAX) runs; marks: run starts",
            "driver_version": s.driver_version,
            "duration_s": round(time.time() - self.t0, 2),
            "gpm_reason": s.gpm_reason,
            "marks": self.marks,
            "devices": [
                {
                    "name": s.names[0] if s.names else "?",
                    "memory_total_mib": None,
                    "power_limit_w": s._power_limit[0] if s._power_limit else None,
                    "processes": [],
                    "util_samples_ms": self.util,
                    "reads": self.reads,
                }
            ]
            if s.available
            else [],
            "unavailable_reason": s.reason,
        }
        s.close()
        return fixture


# (workload, the remedy expected to help). Each workload is diagnosed, timed plain, then
# timed with the remedy its diagnosis put first (or the expected one where that has no
# programmatic form). In order of what matters most, so a run cut short by --budget keeps the
# essentials.
PLAN: list[tuple[str, dict[str, Any]]] = [
    ("conv", {"precision": "mixed_bfloat16"}),
    ("starved_long", {"workers": 8}),
    ("tiny", {"batch_mult": 4}),
    ("varlen", {"fixed_len": FIXED_LEN}),
    ("eager", {"run_eagerly": False}),
    ("starved", {"workers": 8}),
]
EXTRA: list[tuple[str, dict[str, Any]]] = [
    ("conv", {"precision": "mixed_bfloat16", "diagnose": True}),  # GPM under bf16
    ("conv", {"matmul_precision": "highest", "diagnose": True}),  # GPM without TF32
]


def apply(title: str) -> dict[str, Any] | None:
    """The variant a user gets by following a suggestion; None = no programmatic form."""
    t = title.lower()
    if "mixed precision" in t or t.startswith("compute in bfloat16"):
        return {"precision": "mixed_bfloat16"}
    if t.startswith("run the python input in"):
        return {"workers": int(t.split(" in ")[1].split()[0])}
    if "bigger batch" in t:
        factor = re.search(r"(\d+)\s*[x×] bigger", t)
        return {"batch_mult": int(factor.group(1)) if factor else 2}
    if "steps per execution" in t:
        return {"spe": 8}
    if t.startswith("pad every batch") or t.startswith("bucket the sequence"):
        length = re.search(r"(\d+)\D*$", t) if t.startswith("pad") else None
        return {"fixed_len": int(length.group(1)) if length else FIXED_LEN}
    if "run_eagerly=false" in t:
        return {"run_eagerly": False}
    return None


def run_name(workload: str, variant: dict[str, Any]) -> str:
    parts = [workload] + [f"{k}-{v}" for k, v in sorted(variant.items()) if k != "diagnose"]
    if variant.get("diagnose"):
        parts.append("diag")
    return "_".join(str(p).replace("_", "") for p in parts)


def pack(out: str) -> None:
    """What comes back (at most eight files): traces and logs in one archive, the first
    profiler window of each diagnosed run in another (whole profile folders are tens of MB;
    a window over ``MAX_PROFILE_MB`` is left out)."""
    import tarfile

    runs = os.path.join(out, "runs")
    with tarfile.open(os.path.join(out, "traces.tar.gz"), "w:gz") as tar:
        for name in sorted(os.listdir(runs)):
            for f in ("trace.json", "stderr.txt"):
                path = os.path.join(runs, name, f)
                if os.path.exists(path):
                    tar.add(path, arcname=f"{name}/{f}")
    with tarfile.open(os.path.join(out, "profiles.tar.gz"), "w:gz") as tar:
        for name in sorted(os.listdir(runs)):
            prof = os.path.join(runs, name, "profile", "plugins", "profile")
            if not os.path.isdir(prof):
                continue
            for window in sorted(os.listdir(prof))[:1]:
                for f in os.listdir(os.path.join(prof, window)):
                    path = os.path.join(prof, window, f)
                    if f.endswith(".xplane.pb") and os.path.getsize(path) < MAX_PROFILE_MB << 20:
                        tar.add(path, arcname=f"{name}/{f}")


MAX_PROFILE_MB = 6

PLANS = {
    "all": (PLAN, EXTRA),
    # the worker pool Keras starts every epoch, and the GPM and memory a longer run records
    "pool": ([("starved_long", {"workers": 4})], [("conv_long", {"diagnose": True})]),
    "pool-only": ([("starved_long", {"workers": 4})], []),
}


def parent(out: str, small: bool, timeout: float, budget: float, plan: str = "all") -> int:
    started = time.time()
    os.makedirs(os.path.join(out, "runs"), exist_ok=True)
    watch = GpuWatch()
    watch.start()
    results: list[dict[str, Any]] = []
    env = dict(os.environ, KERAS_BACKEND="jax", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")

    def run(workload: str, variant: dict[str, Any], note: str = "") -> dict[str, Any]:
        name = run_name(workload, variant)
        run_dir = os.path.join(out, "runs", name)
        os.makedirs(run_dir, exist_ok=True)
        watch.mark(name)
        cmd = [sys.executable, WORKLOADS, workload, json.dumps(variant), run_dir]
        cmd += ["--small"] if small else []
        t0 = time.time()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
            lines = [x for x in r.stdout.splitlines() if x.startswith("RESULT ")]
            res = (
                json.loads(lines[-1][7:])
                if lines
                else {"error": f"rc {r.returncode}: {r.stderr.strip()[-600:]}"}
            )
            with open(os.path.join(run_dir, "stderr.txt"), "w") as f:
                f.write(r.stderr[-20000:])
        except subprocess.TimeoutExpired:
            res = {"error": f"timed out after {timeout:g} s"}
        res["name"], res["run_s"], res["note"] = name, round(time.time() - t0, 2), note
        results.append(res)
        d = res.get("diagnosis") or {}
        top = (d.get("suggestions") or [{}])[0]
        print(
            f"{name:40s} {res.get('samples_per_s') or 0:10.0f} samples/s  "
            f"{d.get('verdict', '-'):14s} top: {top.get('title', '-')[:50]} "
            f"{top.get('expected_gain', '')} {note} {res.get('error', '')[:200]}",
            flush=True,
        )
        with open(os.path.join(out, "results.json"), "w") as f:
            json.dump(results, f, indent=1)
        return res

    runs, extra = PLANS[plan]
    for workload, expected in runs + extra:
        if time.time() - started > budget:
            print(f"{workload:40s} skipped: the {budget:g} s budget is spent", flush=True)
            continue
        if expected.get("diagnose"):
            run(workload, expected)
            continue
        diag = run(workload, {"diagnose": True}).get("diagnosis") or {}
        run(workload, {})
        sugs = diag.get("suggestions") or []
        top = sugs[0]["title"] if sugs else ""
        variant = apply(top) if top else None
        note = f"top remedy: {top!r}" if variant else f"top remedy {top!r} not applicable"
        run(workload, variant or expected, note)
    fixture = watch.stop()
    with open(os.path.join(out, "nvml_replay.json"), "w") as f:
        json.dump(fixture, f)
    with open(os.path.join(out, "smi_pairs.json"), "w") as f:
        json.dump(watch.pairs, f, indent=1)
    gpm = fixture.get("unavailable_reason") or fixture.get("gpm_reason") or "read"
    print(
        f"NVML: {len(watch.reads)} reads, {len(watch.util)} util samples, "
        f"{len(watch.pairs)} nvidia-smi pairs, GPM: {gpm}"
    )
    pack(out)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--small", action="store_true")
    p.add_argument("--timeout", type=float, default=90.0, help="seconds per run")
    p.add_argument("--budget", type=float, default=300.0, help="no run starts after this")
    p.add_argument("--plan", choices=sorted(PLANS), default="all")
    a = p.parse_args()
    return parent(a.out, a.small, a.timeout, a.budget, a.plan)


if __name__ == "__main__":
    sys.exit(main())
