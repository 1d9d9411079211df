"""Many rank files: grouping by run id, the process pool, Dask, and all three agreeing.

Rank files are copies of a real 128-rank NCCL trace (sample_traces/) with their own
``distributedInfo.rank``, and gpudiag traces written by TraceWriter with run ids.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gpudiag.cli import main as cli_main
from gpudiag.record.writer import TraceWriter
from gpudiag.trace.model.timeline import Metadata
from gpudiag.trace.ranks.runs import group_runs, load_ranks
from tests.helpers.paths import SAMPLES

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def rank_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ranks")
    doc = json.loads(gzip.decompress((SAMPLES / "nccl_world128_rank0.json.gz").read_bytes()))
    for r in range(4):
        doc["distributedInfo"]["rank"] = r
        with gzip.open(out / f"rank{r}.pt.trace.json.gz", "wt", compresslevel=1) as f:
            json.dump(doc, f)
    return out


def _analyze(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli_main(["analyze", *args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_pool_and_serial_give_the_same_diagnosis(rank_dir, capsys):
    rc1, serial, _ = _analyze(capsys, str(rank_dir), "--json", "--jobs", "1")
    rc2, pool, _ = _analyze(capsys, str(rank_dir), "--json", "--jobs", "2", "--memory-mb", "4000")
    assert rc1 == rc2 == 0
    assert json.loads(serial) == json.loads(pool)
    d = json.loads(pool)
    assert [r["label"] for r in d["ranks"]] == [f"rank {i}" for i in range(4)]
    assert all(r["wait_ms"] is not None for r in d["ranks"])
    assert d.get("findings") is not None and not any(
        f["id"] == "straggler" for f in d["findings"]
    )  # four identical ranks


def test_dask_local_cluster_runs_the_same_per_rank_work(rank_dir, capsys):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        rc, out, err = _analyze(
            capsys, str(rank_dir), "--json", "--scheduler", cluster.scheduler_address
        )
    assert rc == 0, err
    _, serial, _ = _analyze(capsys, str(rank_dir), "--json", "--jobs", "1")
    assert json.loads(out) == json.loads(serial)


def test_unreachable_scheduler_is_one_line(rank_dir, capsys):
    pytest.importorskip("distributed")
    rc, _, err = _analyze(capsys, str(rank_dir), "--scheduler", "tcp://127.0.0.1:9")
    assert rc == 2
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Dask scheduler" in lines[0], err


def _gpudiag_trace(path: Path, run_id: str, rank: int, started: float) -> None:
    meta = Metadata(
        producer="gpudiag", rank=rank, world_size=2, run_id=run_id, extra={"started_us": started}
    )
    with TraceWriter(str(path), meta) as w:
        for i in range(3):
            w.step(i, started + i * 1000.0, started + i * 1000.0 + 900.0)


def test_files_of_two_runs_are_refused_naming_both(tmp_path, capsys):
    for r in range(2):
        _gpudiag_trace(tmp_path / f"a-{r}.json", "mw-aaaa", r, 1e15)
    _gpudiag_trace(tmp_path / "b-0.json", "mw-bbbb", 0, 2e15)
    rc, _, err = _analyze(capsys, str(tmp_path))
    assert rc == 2
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1
    assert "2 runs" in lines[0] and "mw-aaaa (2 files" in lines[0] and "mw-bbbb" in lines[0]
    assert "--ranks" in lines[0]
    rc, out, _ = _analyze(capsys, str(tmp_path), "--ranks", "--json")
    assert rc == 0 and len(json.loads(out)["ranks"]) == 3
    rc, out, _ = _analyze(capsys, str(tmp_path / "a-0.json"), str(tmp_path / "a-1.json"), "--json")
    assert rc == 0 and len(json.loads(out)["ranks"]) == 2


def test_one_cluster_reused_splits_by_start_time(tmp_path):
    # same cluster addresses, so the same run id, twice: ranks repeat, start times differ
    for r in range(2):
        _gpudiag_trace(tmp_path / f"first-{r}.json", "mw-same", r, 1e15 + r)
        _gpudiag_trace(tmp_path / f"second-{r}.json", "mw-same", r, 1e15 + 3.6e9 + r)
    runs = group_runs(sorted(str(p) for p in tmp_path.glob("*.json")))
    assert [sorted(Path(f.path).name for f in run) for run in runs] == [
        ["first-0.json", "first-1.json"],
        ["second-0.json", "second-1.json"],
    ]


def test_a_bad_rank_file_is_named(rank_dir, tmp_path, capsys):
    bad = tmp_path / "rank9.pt.trace.json.gz"
    bad.write_bytes(gzip.compress(b'{"traceEvents": [{"ph": "X", "ts": '))
    rc, _, err = _analyze(
        capsys,
        *sorted(str(p) for p in rank_dir.iterdir()),
        str(bad),
        "--jobs",
        "2",
        "--memory-mb",
        "4000",
    )
    assert rc == 2 and str(bad) in err and "Traceback" not in err


def test_summaries_keep_only_the_profiled_window():
    from gpudiag.trace.model.timeline import Kind, Timeline
    from gpudiag.trace.ranks.summary import summarize

    tl = Timeline(meta=Metadata(producer="gpudiag"))
    tl.add_steps(
        range(10),
        [i * 100.0 for i in range(10)],
        [i * 100.0 + 90 for i in range(10)],
        profiled=[4 <= i < 6 for i in range(10)],
    )
    tl.add_activity(
        "CPU 0", Kind.COMPUTE, [i * 100.0 for i in range(10)], [i * 100.0 + 50 for i in range(10)]
    )
    tl.add_counter("cpu_total", "host", range(10_000), [50.0] * 10_000)
    s = summarize(tl.freeze())
    assert len(s.activity[("CPU 0", Kind.COMPUTE)]) == 2
    assert len(s.steps) == 10
    assert s.counters[0].ts.size <= 2000
    assert load_ranks([]) == []
