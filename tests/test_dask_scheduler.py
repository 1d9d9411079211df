"""``--scheduler``: relative paths as the README writes them, a malformed address blamed on
itself, not on the traces."""

from __future__ import annotations

import json
import os

import pytest

from gpudiag.cli import main
from gpudiag.trace.timeline import Metadata
from tests.synth import periodic, record_profiled

pytestmark = pytest.mark.timeout(180)


def _ranks(folder) -> None:
    folder.mkdir()
    for r in range(2):
        tl = periodic(steps=30, input_frac=0.35, compute_frac=0.5)
        meta = Metadata(producer="gpudiag", devices=["GPU 0"], rank=r, world_size=2, run_id="mw-d")
        record_profiled(folder / f"rank{r}.json", tl, meta)


def test_relative_paths_reach_workers_that_run_elsewhere(tmp_path, capsys, monkeypatch):
    distributed = pytest.importorskip("distributed")
    _ranks(tmp_path / "run")
    monkeypatch.chdir(tmp_path)
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.run(os.chdir, "/")  # a worker started in another directory
        code = main(["analyze", "run", "--json", "--scheduler", cluster.scheduler_address])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert len(json.loads(out)["ranks"]) == 2


@pytest.mark.parametrize("address", ["not a url", "foo://x:1"])
def test_a_malformed_scheduler_address_is_blamed_not_the_traces(tmp_path, capsys, address):
    pytest.importorskip("distributed")
    _ranks(tmp_path / "run")
    code = main(["analyze", str(tmp_path / "run"), "--scheduler", address])
    _, err = capsys.readouterr()
    assert code == 2 and len(err.splitlines()) == 1
    assert f"--scheduler {address}: not a Dask scheduler address" in err
    assert "trace" not in err.split("address")[0]
