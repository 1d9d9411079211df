"""The process pool that reads rank files stays within a memory budget: the budget, not
the number of cores or --jobs alone, decides how many worker processes read at once."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from gpudiag.trace.model.timeline import Metadata
from gpudiag.trace.ranks.runs import WORKER_BASE_MB, pool_size
from gpudiag.trace.source.limits import ReadLimits
from tests.helpers.paths import REPO
from tests.helpers.synth import periodic, record_profiled

pytestmark = pytest.mark.timeout(180)


def test_the_budget_caps_the_pool_whatever_jobs_asks():
    own = psutil.Process().memory_info().rss / 1e6
    limits = ReadLimits(max_intervals=10_000, memory_mb=own + 3 * (WORKER_BASE_MB + 1) + 1)
    assert pool_size(64, 64, limits) == 3
    assert pool_size(64, 2, limits) == 2  # --jobs is still the most it takes
    assert pool_size(64, 64, ReadLimits(memory_mb=own)) == 1  # no room: read serially
    big = ReadLimits(max_intervals=10_000, memory_mb=own + 10_000)
    assert pool_size(5, 64, big) == 5  # never more workers than files


def _peak_rss_mb(cmd: list[str]) -> tuple[int, float]:
    """Exit code and the peak of the process's and its children's RSS summed, in MB."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
    proc = psutil.Process(p.pid)
    peak = 0.0
    while p.poll() is None:
        total = 0
        try:
            for q in [proc, *proc.children(recursive=True)]:
                total += q.memory_info().rss
        except psutil.Error:
            pass
        peak = max(peak, total / 1e6)
        time.sleep(0.01)
    return p.returncode, peak


def test_sixteen_jobs_stay_within_the_budget(tmp_path):
    """16 rank files with --jobs 16 used to start 16 workers of ~45 MB each (700 MB in
    all); within the default 300 MB budget the pool takes 4."""
    for r in range(16):
        tl = periodic(steps=200, input_frac=0.35, compute_frac=0.5)
        meta = Metadata(producer="gpudiag", devices=["GPU 0"], rank=r, world_size=16, run_id="mw")
        record_profiled(tmp_path / f"rank{r}.json", tl, meta)
    cmd = [sys.executable, "-m", "gpudiag", "analyze", str(tmp_path), "--json", "--jobs", "16"]
    code, peak = _peak_rss_mb(cmd)
    assert code == 0
    assert peak < 300, f"{peak:.0f} MB"
