"""Files that do not make one run are refused in one short line that says why: a copied
rank file is named, a folder of unrelated traces is listed briefly, hundreds of runs too."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from gpudiag.cli import main
from gpudiag.trace.runs import RankFile, several_runs_problem
from tests.conftest import SAMPLES


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
