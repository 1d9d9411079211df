"""Loading through one table of formats, bounds passed as one value, errors as one type."""

from __future__ import annotations

import json
import math
import pickle

from gpudiag.analyze.diagnosis import Diagnosis, Finding
from gpudiag.cli import main
from gpudiag.trace.errors import TraceError
from gpudiag.trace.formats import FORMATS, find_format
from gpudiag.trace.load import load_file
from gpudiag.trace.model.sink import LIMIT_ENV
from gpudiag.trace.model.timeline import Metadata
from gpudiag.trace.ranks.runs import identify
from gpudiag.trace.source.limits import ReadLimits
from tests.helpers.paths import SAMPLES
from tests.helpers.synth import periodic, record_profiled


def _write(path, steps: int = 40, rank: int | None = None, run_id: str = "run-a") -> None:
    tl = periodic(steps=steps, input_frac=0.35, compute_frac=0.5)
    meta = Metadata(producer="gpudiag", devices=["GPU 0"])
    if rank is not None:
        meta.rank, meta.world_size, meta.run_id = rank, 3, run_id
    record_profiled(path, tl, meta)


def test_trace_error_crosses_a_process_boundary_intact():
    e = pickle.loads(pickle.dumps(TraceError("rank3.json", "truncated gzip")))
    assert (e.path, e.problem, str(e)) == (
        "rank3.json",
        "truncated gzip",
        "rank3.json: truncated gzip",
    )


def test_one_table_detects_and_identifies(tmp_path):
    _write(tmp_path / "r1.json", rank=1)
    head = (tmp_path / "r1.json").read_bytes()
    assert find_format(head).name == "gpudiag"
    f = identify(str(tmp_path / "r1.json"))
    assert (f.run_id, f.rank) == ("run-a", 1)
    assert identify(str(SAMPLES / "nccl_world128_rank0.json.gz")).rank == 0
    assert [fmt.name for fmt in FORMATS] == ["gpudiag", "chrome-json", "compressed", "xplane"]


def test_limits_reach_pool_workers_as_a_value(tmp_path, capsys, monkeypatch):
    """--max-intervals with a process pool: each worker holds its share of the bound, and
    nothing is left in (or read from) the environment."""
    monkeypatch.delenv(LIMIT_ENV, raising=False)
    for r in range(3):
        _write(tmp_path / f"rank{r}.json", steps=1500, rank=r)
    args = [
        "analyze",
        str(tmp_path),
        "--json",
        "--jobs",
        "2",
        "--memory-mb",
        "4000",
        "--max-intervals",
        "6000",
    ]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert any("memory bound (2,000)" in lim for lim in out["limitations"])
    assert LIMIT_ENV not in __import__("os").environ


def test_load_file_takes_its_bounds_as_an_argument(tmp_path):
    _write(tmp_path / "t.json", steps=3000)
    (tl,) = load_file(str(tmp_path / "t.json"), ReadLimits(max_intervals=2000))
    assert any("memory bound (2,000)" in lim for lim in tl.meta.limitations)
    (whole,) = load_file(str(tmp_path / "t.json"))
    assert not any("memory bound" in lim for lim in whole.meta.limitations)


def test_to_dict_is_strict_json_by_construction():
    d = Diagnosis(
        verdict="inconclusive",
        confidence=0.5,
        reason="r",
        breakdown={"input": math.nan},
        findings=[Finding("straggler", "info", "t", {"lag_ms": math.inf, "n": (1, 2)})],
        steps={"median_ms": math.nan},
    )
    text = json.dumps(d.to_dict(), allow_nan=False)  # raised ValueError before
    doc = json.loads(text)
    assert doc["steps"]["median_ms"] is None and doc["breakdown"]["input"] is None
    assert doc["findings"][0]["evidence"] == {"lag_ms": None, "n": [1, 2]}
