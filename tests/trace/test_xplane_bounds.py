"""Hostile XSpace shapes: many planes, impossible times (fuzzing found both)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys

import pytest

from gpudiag.trace.errors import TraceError
from gpudiag.trace.tf.xspace.by_xprof import MAX_XPROF_PLANES, xprof_tool
from gpudiag.trace.tf.xspace.schema import XSpace
from tests.helpers.xspace_build import MS, PlaneBuilder, training_profile, write

ADDRESS_SPACE = 1 << 30  # the cap the fuzzer ran under


def _analyze(path: str, cap: bool = False) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    return subprocess.run(
        [sys.executable, "-m", "gpudiag", "analyze", path, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit if cap else None,
    )


def _many_planes(n: int) -> XSpace:
    """``n`` GPU planes of one kernel each, and a host plane with two step markers."""
    space, _, _ = training_profile(steps=2)
    for i in range(1, n):
        gpu = PlaneBuilder(space, i, f"/device:GPU:{i}")
        gpu.event(gpu.line(1, "Stream #1(Compute)"), "sgemm", MS, MS)
    return space


def test_a_thousand_planes_are_read_under_an_address_space_cap(tmp_path):
    """xprof started a thread per plane: 1000 planes (73 KB) aborted with SIGABRT, exit 134
    and nothing said. Read directly, they are one more pid each."""
    path = write(_many_planes(1000), tmp_path / "planes.xplane.pb")
    r = _analyze(path, cap=True)
    assert r.returncode == 0, r.stderr[-500:]
    d = json.loads(r.stdout)
    assert d["steps"]["count"] == 2 and len(d["devices"]) == 1000


def test_xprof_is_not_started_on_more_planes_than_it_can_take(tmp_path):
    path = write(_many_planes(MAX_XPROF_PLANES + 1), tmp_path / "planes.xplane.pb")
    with pytest.raises(TraceError, match="one thread per plane"):
        xprof_tool(path, "overview_page")


@pytest.mark.parametrize(
    "field, value",
    [
        ("duration_ps", -1),  # wrapped to 2^64 ps by xprof: a 213-day kernel
        ("duration_ps", 40 * 86_400 * 10**12),  # 40 days
        ("offset_ps", -5 * MS),
        ("offset_ps", 2**62),  # 53 days after the profile began
    ],
)
def test_events_with_impossible_times_are_dropped_and_counted(tmp_path, field, value):
    space, gpu, stream = training_profile(steps=4)
    bad = gpu.event(stream, "volta_sgemm_128x64_nn", 2 * MS, MS)
    setattr(bad, field, value)
    r = _analyze(write(space, tmp_path / "bad.xplane.pb"))
    assert r.returncode == 0, r.stderr[-500:]
    d = json.loads(r.stdout)
    assert any("1 XSpace event with impossible times dropped" in x for x in d["limitations"])
    assert d["steps"]["median_ms"] == pytest.approx(9.0, rel=0.01)  # the markers
    assert d["breakdown"]["compute"] == pytest.approx(6 / 9, abs=0.02)


def test_a_profile_without_impossible_times_says_nothing_of_them(tmp_path):
    space, _, _ = training_profile(steps=4)
    r = _analyze(write(space, tmp_path / "ok.xplane.pb"))
    d = json.loads(r.stdout)
    assert not any("impossible" in x for x in d["limitations"])
    assert d["breakdown"]["compute"] == pytest.approx(6 / 9, abs=0.02)


def test_a_profile_of_names_only_is_said_to_hold_no_events(tmp_path):
    """Without events an XSpace is valid UTF-8: it is not taken for a text file."""
    space = XSpace()
    space.planes.add(id=0, name="/host:CPU").lines.add(id=1, name="python")
    r = _analyze(write(space, tmp_path / "empty.xplane.pb"))
    assert r.returncode == 2 and "holds no timed events" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
