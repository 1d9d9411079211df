"""Files that do not make one run are refused in one short line that says why: a copied
rank file is named, a folder of unrelated traces is listed briefly, hundreds of runs too."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from gpudiag.cli import main
from gpudiag.trace.ranks.runs import RankFile, several_runs_problem
from tests.helpers.paths import SAMPLES


def _analyze(capsys, *args: str) -> tuple[int, str]:
    code = main(["analyze", *args, "--json", "--jobs", "1"])
    _, err = capsys.readouterr()
    return code, err


def _kineto_ranks(folder: Path, n: int) -> None:
    doc = json.loads(gzip.decompress((SAMPLES / "nccl_world128_rank0.json.gz").read_bytes()))
    doc["traceEvents"] = doc["traceEvents"][:2000]
    for r in range(n):
        doc["distributedInfo"]["rank"] = r
        (folder / f"rank{r}.pt.trace.json").write_text(json.dumps(doc))


def test_a_copied_rank_file_is_named_as_the_duplicate(tmp_path, capsys):
    _kineto_ranks(tmp_path, 8)
    shutil.copy(tmp_path / "rank3.pt.trace.json", tmp_path / "rank3 (copy).pt.trace.json")
    code, err = _analyze(capsys, str(tmp_path))
    assert code == 2 and len(err.splitlines()) == 1
    assert "rank 3 is in 2 files" in err and "rank3 (copy).pt.trace.json" in err
    assert "copies of each other" in err and "--ranks" in err
    (tmp_path / "rank3 (copy).pt.trace.json").unlink()
    code, err = _analyze(capsys, str(tmp_path))
    assert code == 0, err


def test_a_folder_of_unrelated_traces_is_listed_briefly(tmp_path, capsys):
    names = ["a100_nccl_sparse.json.gz", "nccl_world128_rank0.json.gz", "no_gpu_events.json.gz"]
    names += ["cpu_only_rank34.json.gz"]  # three claim rank 0: not the ranks of one run
    for name in names:
        shutil.copy(SAMPLES / name, tmp_path / name)
    code, err = _analyze(capsys, str(tmp_path))
    assert code == 2 and len(err.splitlines()) == 1
    assert (
        "4 files hold 4 runs, unrelated traces" in err
        and "+1 more" in err
        and "analyze one at a time" in err
    )
    assert len(err) - len(str(tmp_path)) < 300


def test_a_thousand_runs_make_one_short_line():
    runs = [
        [RankFile(f"/r/run{i:04d}-rank{r}.json", f"id-{i}", r, 0.0) for r in range(2)]
        for i in range(1024)
    ]
    line = several_runs_problem(runs)
    assert "2048 files hold 1024 runs" in line and "+1021 more runs" in line
    assert len(line) < 400
    alone = [[RankFile(f"/r/{'x' * 200}{i}.json", None, 0, None)] for i in range(1024)]
    assert len(several_runs_problem(alone)) < 400


def _kept(folder: Path, windows: int, inside: bool = False) -> Path:
    """A profile directory as DiagnoseCallback keeps it: its windows' raw profiles (here
    real xplane files of another run, each a run of its own if read alone) and the manifest
    naming the run's trace, copied there or written there."""
    from gpudiag.record.writer import TraceWriter
    from gpudiag.trace.model.timeline import Metadata
    from gpudiag.trace.ranks.kept_run import write_manifest

    names = []
    for k in range(windows):
        sub = folder / "plugins" / "profile" / f"2026_01_01_00_00_0{k}"
        sub.mkdir(parents=True)
        shutil.copy(SAMPLES / "tf_gpu_multi_worker.xplane.pb", sub / "vm.xplane.pb")
        names.append(str((sub / "vm.xplane.pb").relative_to(folder)))
    trace = (folder if inside else folder.parent) / "run.json"
    w = TraceWriter(str(trace), Metadata(producer="gpudiag", batch_size=32))
    for i in range(30):
        w.step(i, 1e6 + i * 1e4, 1e6 + (i + 1) * 1e4)
    w.close()
    assert write_manifest(str(folder), str(trace), "run1", names) is None
    return trace


def test_a_kept_profile_dir_is_one_run_read_from_its_trace(tmp_path, capsys):
    from gpudiag.trace.ranks.kept_run import TRACE_NAME
    from gpudiag.trace.ranks.runs import run_files

    kept = tmp_path / "profile"
    kept.mkdir()
    _kept(kept, 3)
    assert run_files([str(kept)]) == [str(kept / TRACE_NAME)]  # not three unrelated runs
    code, err = _analyze(capsys, str(kept))
    assert code == 0 and not err
    inside = tmp_path / "inside"
    inside.mkdir()
    trace = _kept(inside, 2, inside=True)
    assert run_files([str(inside)]) == [str(trace)]  # already there: not copied
    assert not (inside / TRACE_NAME).exists()


def test_a_kept_profile_dir_without_its_trace_says_what_is_missing(tmp_path, capsys):
    from gpudiag.trace.ranks.kept_run import TRACE_NAME

    kept = tmp_path / "profile"
    kept.mkdir()
    _kept(kept, 2)
    (kept / TRACE_NAME).unlink()
    code, err = _analyze(capsys, str(kept))
    assert code == 2 and "the run's trace" in err and TRACE_NAME in err
    assert len(err.strip().splitlines()) == 1
