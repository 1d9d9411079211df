"""The sample XSpace, mutated: every mutant is refused in one line (TraceError) or analyzed
into finite figures, quickly."""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

import pytest

from gpudiag.analyze import diagnose
from gpudiag.trace.errors import TraceError
from gpudiag.trace.load import load_file
from gpudiag.trace.tf.xspace.schema import XSpace
from tests.helpers.paths import sample

RAW = Path(sample("tf_gpu_multi_worker.xplane.pb")).read_bytes()
INT64_MAX = 2**63 - 1


def _bytes_mutant(rng: random.Random) -> bytes:
    b = bytearray(RAW)
    kind = rng.randrange(4)
    if kind == 0:
        return bytes(b[: rng.randrange(len(b))])  # cut short
    if kind == 1:
        for _ in range(rng.randrange(1, 20)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if kind == 2:
        return RAW + RAW[: rng.randrange(len(RAW))]  # a second (partial) XSpace appended
    p = rng.randrange(len(b))
    return bytes(b[:p] + b[p + rng.randrange(1, 4096) :])


def _field_mutant(rng: random.Random) -> bytes:
    space = XSpace()
    space.ParseFromString(RAW)
    events = [
        (plane, line, ev) for plane in space.planes for line in plane.lines for ev in line.events
    ]
    for _ in range(rng.randrange(1, 30)):
        plane, line, ev = rng.choice(events)
        what = rng.randrange(7)
        if what == 0:
            ev.duration_ps = rng.choice([-1, -(2**40), INT64_MAX, 0])
        elif what == 1:
            ev.offset_ps = rng.choice([-1, INT64_MAX, 2**62])
        elif what == 2:
            line.timestamp_ns = rng.choice([-(10**12), INT64_MAX // 1000, 2**62])
        elif what == 3:
            ev.metadata_id = rng.randrange(10**6, 10**7)  # no such metadata
        elif what == 4:
            ev.stats.add(metadata_id=rng.randrange(10**6), ref_value=rng.randrange(10**9))
        elif what == 5:
            line.display_id = rng.choice([-1, INT64_MAX, 701])
        else:
            plane.id = rng.choice([699, 700, -1, INT64_MAX])
    return space.SerializeToString()


@pytest.mark.parametrize("seed", range(24))
def test_mutants_are_refused_or_give_finite_figures(tmp_path, seed):
    rng = random.Random(seed)
    raw = _bytes_mutant(rng) if seed % 2 else _field_mutant(rng)
    path = tmp_path / "mutant.xplane.pb"
    path.write_bytes(raw)
    t0 = time.perf_counter()
    try:
        d: Any = diagnose(load_file(str(path))).to_dict()
    except TraceError as e:
        assert "\n" not in e.problem and len(e.problem) < 300
    else:
        json.dumps(d, allow_nan=False)  # every figure finite
        assert d["steps"]["median_ms"] is None or d["steps"]["median_ms"] < 86_400_000
    assert time.perf_counter() - t0 < 30
