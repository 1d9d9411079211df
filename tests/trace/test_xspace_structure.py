"""What an XSpace holds is bounded before it is decoded: metadata entries, lines and planes
counted from the wire format and refused past their bounds in one line that names the flag;
a line of millions of events is decoded a slice at a time; a stat out of range is ignored."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.hostile_xspace import xspace
from benchmarks.peak_rss import run_measured
from gpudiag.trace.source.limits import ReadLimits, XSpaceBounds
from gpudiag.trace.tf.xspace import lines as xspace_lines
from gpudiag.trace.tf.xspace.counts import xspace_shape
from gpudiag.trace.tf.xspace.lines import parse_line
from gpudiag.trace.tf.xspace.reader import read_xplane
from gpudiag.trace.tf.xspace.schema import XLine, XSpaceLines
from tests.helpers.paths import REPO, SAMPLES
from tests.helpers.xspace_build import training_profile, write

pytestmark = pytest.mark.timeout(120)


def analyze(path: Path, *flags: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """``gpudiag analyze PATH --json FLAGS``, and its own peak RSS in MB (``peak_rss``)."""
    cmd = [sys.executable, "-m", "gpudiag", "analyze", str(path), "--json", *flags]
    done = run_measured(cmd, timeout=100, cwd=REPO)
    assert done is not None, "over 100 s"
    r, rss = done
    text = r.stdout.decode(), r.stderr.decode()
    return subprocess.CompletedProcess(cmd, r.returncode, *text), rss


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    "what, flag, env, bound, make",
    [
        ("metadata entries", "--max-xplane-metadata", "GPUDIAG_MAX_XPLANE_METADATA", 1000,
         lambda n: xspace(metadata=n)),
        ("metadata entries", "--max-xplane-metadata", "GPUDIAG_MAX_XPLANE_METADATA", 1000,
         lambda n: xspace(stats=n)),
        ("metadata entries", "--max-xplane-metadata", "GPUDIAG_MAX_XPLANE_METADATA", 1000,
         lambda n: xspace(used=n)),
        ("lines", "--max-xplane-lines", "GPUDIAG_MAX_XPLANE_LINES", 100,
         lambda n: xspace(lines=n)),
    ],
)  # fmt: skip
def test_each_count_is_refused_past_its_bound_and_read_below(
    tmp_path, what, flag, env, bound, make
):
    below = _write(tmp_path, "below.xplane.pb", make(bound - 50))
    r, _ = analyze(below, flag, str(bound))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["steps"]["median_ms"] == pytest.approx(9.0)
    above = _write(tmp_path, "above.xplane.pb", make(bound + 10))
    r, _ = analyze(above, flag, str(bound))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"more than {bound:,} {what}" in r.stderr
    assert flag in r.stderr and env in r.stderr


def test_planes_past_the_device_key_bound_are_refused(tmp_path):
    r, _ = analyze(_write(tmp_path, "planes.xplane.pb", xspace(planes=4100)))
    assert r.returncode == 2 and "more than 4,096 planes" in r.stderr, r.stderr


def test_a_metadata_flood_is_refused_in_seconds_at_the_default_bound(tmp_path):
    """Was: 1 million unused entries (21 MB) 342 MB, 3 million (67 MB) 829 MB. Counting
    stops at the bound, before anything is decoded."""
    path = _write(tmp_path, "flood.xplane.pb", xspace(metadata=300_000))
    t0 = time.perf_counter()
    r, rss = analyze(path)
    assert r.returncode == 2 and "more than 100,000 metadata entries" in r.stderr
    assert time.perf_counter() - t0 < 30  # about 2 s here, 2 cores shared
    assert rss < 150, rss


def test_the_count_stops_at_the_first_bound_passed():
    data = xspace(metadata=5000, lines=300)
    shape = xspace_shape(data, XSpaceBounds(metadata=10**6, lines=10**6, planes=10))
    assert (shape.planes, shape.lines, shape.over) == (3, 302, None)  # host, GPU 0, GPU 1
    assert shape.metadata == 5000 + 1 + 1 + 4 + 1  # + kernel, group_id, markers, second GPU
    shape = xspace_shape(data, XSpaceBounds(metadata=1000, lines=10**6, planes=10))
    assert shape.over == "metadata" and shape.metadata == 1001
    assert xspace_shape(data[:-7], XSpaceBounds(10**6, 10**6, 10)).over is None  # cut: no error


def test_the_sample_profile_is_within_every_bound():
    data = (SAMPLES / "tf_gpu_multi_worker.xplane.pb").read_bytes()
    shape = xspace_shape(data, ReadLimits().xspace())
    assert shape.over is None and shape.metadata < 11_000 and shape.lines == 37


@pytest.mark.parametrize("slice_bytes", [1, 64, 1000, 100_000])
def test_a_line_read_a_slice_at_a_time_gives_the_same_events(monkeypatch, slice_bytes):
    monkeypatch.setattr(xspace_lines, "SLICE_BYTES", slice_bytes)
    space = XSpaceLines()
    space.ParseFromString((SAMPLES / "tf_gpu_multi_worker.xplane.pb").read_bytes())
    sliced = 0
    for plane in space.planes:
        for raw in plane.lines:
            whole, line = XLine.FromString(raw), parse_line(raw, "x")
            assert list(line.events) == list(whole.events)
            assert (line.id, line.display_id, line.name, line.timestamp_ns) == (
                whole.id,
                whole.display_id,
                whole.name,
                whole.timestamp_ns,
            )
            sliced += type(line).__name__ == "SlicedLine"
    assert sliced > 0


def test_a_long_line_is_diagnosed_the_same_read_in_slices(tmp_path, monkeypatch):
    """One line of 3 million events (39 MB) took 390 MB decoded whole; read in slices of
    4 MiB, 217 MB. Scaled down: 20,000 events, slices of 4 KiB."""
    path = str(_write(tmp_path, "long.xplane.pb", xspace(line_events=20_000)))
    whole = read_xplane(path)
    monkeypatch.setattr(xspace_lines, "SLICE_BYTES", 4096)
    sliced = read_xplane(path)
    assert len(whole) == len(sliced) == 1
    for kind, iv in whole[0].activity.items():
        got = sliced[0].activity[kind]
        assert (got.starts.tolist(), got.ends.tolist()) == (iv.starts.tolist(), iv.ends.tolist())


@pytest.mark.parametrize("minor", [-1, 10, 2**40])
def test_a_compute_capability_out_of_range_is_ignored(tmp_path, minor):
    """``compute_cap_minor = -1`` refused the whole profile ("internal ValueError",
    float("8.-1")): the stat is no capability, the profile is read without it."""
    space, gpu, _ = training_profile(steps=4)
    for name, value in (("compute_cap_major", 8), ("compute_cap_minor", minor)):
        gpu.plane.stats.add(metadata_id=gpu.stat_id(name), int64_value=value)
    r, _ = analyze(Path(write(space, tmp_path / "cc.xplane.pb")))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["config"].get("compute_capability") is None
    assert d["steps"]["median_ms"] == pytest.approx(9.0)
