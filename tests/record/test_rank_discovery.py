"""Rank discovery for each backend, and the run id every rank agrees on without talking.

TensorFlow's cluster comes from TF_CONFIG here (the real MultiWorkerMirroredStrategy path is
in test_multi_worker.py); JAX and torch.distributed are stood in for by modules exposing the
same calls, since neither is installed on the test machine.
"""

from __future__ import annotations

import json
import sys
import types

import pytest

from gpudiag.record.backends import for_name
from gpudiag.record.ranks import RankInfo, default_trace_template, discover, run_id_for

CLUSTER = {"chief": ["host0:2222"], "worker": ["host1:2222", "host2:2222"]}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in (
        "TF_CONFIG",
        "RANK",
        "WORLD_SIZE",
        "MASTER_ADDR",
        "MASTER_PORT",
        "GPUDIAG_RUN_ID",
        "SLURM_JOB_ID",
        "TORCHELASTIC_RUN_ID",
    ):
        monkeypatch.delenv(var, raising=False)


def _tf_config(monkeypatch, task_type: str, index: int) -> None:
    monkeypatch.setenv(
        "TF_CONFIG", json.dumps({"cluster": CLUSTER, "task": {"type": task_type, "index": index}})
    )


@pytest.mark.parametrize("task, rank", [(("chief", 0), 0), (("worker", 0), 1), (("worker", 1), 2)])
def test_tf_config_gives_tensorflow_task_order(monkeypatch, task, rank):
    _tf_config(monkeypatch, *task)
    info = discover(None, for_name("tensorflow"))
    assert (info.rank, info.world_size, info.source) == (rank, 3, "TF_CONFIG")
    assert info.cluster == CLUSTER


def test_every_rank_derives_the_same_run_id(monkeypatch):
    ids = set()
    for task in (("chief", 0), ("worker", 0), ("worker", 1)):
        _tf_config(monkeypatch, *task)
        ids.add(discover(None, for_name("tensorflow")).run_id)
    assert len(ids) == 1 and next(iter(ids)).startswith("mw-")
    # another job on the same addresses under a launcher gets another id
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    assert discover(None, for_name("tensorflow")).run_id not in ids


def test_explicit_run_id_wins(monkeypatch):
    _tf_config(monkeypatch, "worker", 1)
    monkeypatch.setenv("GPUDIAG_RUN_ID", "nightly-7")
    assert discover(None, for_name("tensorflow")).run_id == "nightly-7"


def test_single_process_gets_a_fresh_id_without_touching_rngs():
    import random

    import numpy as np

    np.random.seed(5)
    random.seed(5)
    state = (np.random.get_state()[1].copy(), random.getstate())
    a, b = discover(None, for_name("tensorflow")), discover(None, for_name("tensorflow"))
    assert a.rank is None and a.world_size == 1 and not a.multi_worker
    assert a.run_id != b.run_id
    assert (np.random.get_state()[1] == state[0]).all() and random.getstate() == state[1]


def test_jax_process_index(monkeypatch):
    jax = types.ModuleType("jax")
    jax.process_index = lambda: 3  # type: ignore[attr-defined]
    jax.process_count = lambda: 4  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "jax", jax)
    monkeypatch.setenv("JAX_COORDINATOR_ADDRESS", "10.0.0.1:1234")
    info = discover(None, for_name("jax"))
    assert (info.rank, info.world_size, info.source) == (3, 4, "jax.process_index")
    assert info.cluster == {"coordinator": ["10.0.0.1:1234"]}


def test_torch_distributed(monkeypatch):
    dist = types.SimpleNamespace(
        is_available=lambda: True,
        is_initialized=lambda: True,
        get_rank=lambda: 5,
        get_world_size=lambda: 8,
    )
    torch = types.ModuleType("torch")
    torch.distributed = dist  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setenv("MASTER_ADDR", "10.0.0.2")
    monkeypatch.setenv("MASTER_PORT", "29500")
    info = discover(None, for_name("torch"))
    assert (info.rank, info.world_size) == (5, 8)
    assert info.cluster == {"master": ["10.0.0.2:29500"]}


def test_launcher_variables_as_last_resort(monkeypatch):
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "4")
    info = discover(None, for_name("jax"))  # jax not imported: the environment answers
    assert (info.rank, info.world_size, info.source) == (2, 4, "RANK/WORLD_SIZE")


def test_default_names_one_file_per_rank():
    single = RankInfo()
    single.run_id = run_id_for(single)
    assert default_trace_template(single, "20260101-000000") == "gpudiag-trace-20260101-000000.json"
    multi = RankInfo(rank=1, world_size=2, cluster=CLUSTER)
    multi.run_id = run_id_for(multi)
    name = default_trace_template(multi, "20260101-000000")
    assert "{rank}" in name and multi.run_id in name


def test_call_timer_times_the_train_function_and_restores_it():
    from gpudiag.record.call_timer import CallTimer

    class Model:
        def train_function(self, x):
            return x * 2

    m = Model()
    original = m.train_function
    timer = CallTimer(m)
    assert m.train_function(21) == 42
    start, end = timer.take()
    assert end >= start
    assert timer.take() is None
    timer.restore()
    assert m.train_function == original
