"""The same Keras scenarios under each Keras backend (TensorFlow, JAX, torch), on CPU.

Each run is its own process with ``KERAS_BACKEND`` set (Keras picks its backend at import;
tests/helpers/backend_scenarios.py). Each gives its verdict, findings and remedies in that backend's
words, and reading its trace file back gives the same diagnosis. JAX and torch come from the
``backends`` extra: missing in CI is a failure, elsewhere a skip.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.optional import require_backend
from tests.helpers.paths import REPO
from tests.helpers.reread import same_from_file
from tests.helpers.script_io import run_script

pytestmark = [pytest.mark.train, pytest.mark.timeout(240)]

BACKENDS = ["tensorflow", "jax", "torch"]


def run(backend: str, name: str, tmp: Path) -> dict:
    require_backend(backend)
    result, proc = run_script(
        "backend_scenarios",
        name,
        tmp / f"{name}.json",
        timeout=200,
        env={"KERAS_BACKEND": backend},
        what=f"{backend} {name}",
    )
    # the profilers gpudiag starts print nothing of their own (Kineto's USDT/ERROR lines)
    assert "USDT:" not in proc.stderr and "gpuGetDeviceCount" not in proc.stderr, proc.stderr[
        -2000:
    ]
    assert result["backend"] == backend
    return result


def ids(d: dict) -> set[str]:
    return {f["id"] for f in d["findings"]}


def words(d: dict) -> str:
    """Everything the diagnosis tells the user."""
    return " ".join(
        [f["title"] for f in d["findings"]]
        + [s["title"] + " " + s["detail"] for s in d["suggestions"]]
    )


def in_backends_words(backend: str, d: dict) -> None:
    """No advice that belongs to another backend's input: tf.data only under TensorFlow,
    a DataLoader's num_workers only where the user gave one (never here)."""
    text = words(d)
    if backend != "tensorflow":
        assert "tf.data" not in text and "tf.distribute" not in text, text
    assert "num_workers" not in text, text


@pytest.mark.parametrize("backend", BACKENDS)
def test_starved_python_input_is_data_starved(backend, tmp_path):
    result = run(backend, "starved_input", tmp_path)
    d = result["diagnosis"]
    assert d["verdict"] == "data-starved"
    assert d["steps"]["analyzed"] == 5  # the profiler window's steps, matched by marker
    assert d["breakdown"]["input"] >= 0.3
    assert "python-generator" in ids(d)
    assert "dataloader-in-main-process" not in ids(d)  # Keras made that DataLoader
    details = " ".join(s["detail"] for s in d["suggestions"])
    assert "PyDataset" in details and "use_multiprocessing=True" in details
    in_backends_words(backend, d)
    same_from_file(result)


@pytest.mark.parametrize("backend", BACKENDS)
def test_conv_net_on_arrays_is_compute_bound(backend, tmp_path):
    result = run(backend, "conv_compute", tmp_path)
    d = result["diagnosis"]
    assert d["verdict"] == "compute-bound"
    assert d["steps"]["analyzed"] == 5
    assert d["breakdown"]["compute"] >= 0.6
    assert d["breakdown"]["input"] < 0.1
    assert not {"input-wait", "python-generator", "dataloader-in-main-process"} & ids(d)
    assert any("CPU-only profile" in lim for lim in d["limitations"])
    in_backends_words(backend, d)
    same_from_file(result)


@pytest.mark.parametrize("backend", BACKENDS)
def test_tiny_batch_is_compute_bound_with_small_batch(backend, tmp_path):
    result = run(backend, "tiny_batch", tmp_path)
    d = result["diagnosis"]
    # the computation holds most of each step; Keras's own per-batch input work (heavier on
    # torch, through its DataLoader) can still reach the input threshold on a loaded machine
    assert d["breakdown"]["compute"] >= 0.6
    assert d["verdict"] in ("compute-bound", "data-starved")
    assert "small-batch" in ids(d)
    small = next(f for f in d["findings"] if f["id"] == "small-batch")
    assert small["evidence"]["batch"] == 4
    in_backends_words(backend, d)
    same_from_file(result)


@pytest.mark.parametrize("backend", BACKENDS)
def test_uneven_global_batch_is_linted_where_there_are_replicas(backend, tmp_path):
    result = run(backend, "uneven_batch", tmp_path)
    lints = set(result["lint_ids"])
    if backend == "torch":
        # one process trains one replica under Keras-torch (data parallelism is DDP across
        # processes): an odd batch splits over nothing, and nothing claims it does
        assert "batch-not-multiple-of-replicas" not in lints
        assert result["fit_error"] is None
        d = result["diagnosis"]
        assert d["steps"]["count"] == 20  # 5 epochs of 4 batches, the last of 1 sample
        same_from_file(result)
    else:
        # 33 samples over 2 replicas (MirroredStrategy / DataParallel): said before the
        # backend rejects the split
        assert "batch-not-multiple-of-replicas" in lints


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_rank_discovery_through_the_backends_own_distributed_layer(backend):
    """Two real processes joined by jax.distributed / torch.distributed (gloo): each adapter
    names its own rank of 2, and discovery takes it."""
    require_backend(backend)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "KERAS_BACKEND": backend, "JAX_PLATFORMS": "cpu"}
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "TF_CONFIG", "OMPI_COMM_WORLD_RANK"):
        env.pop(k, None)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.helpers.backend_ranks", backend, str(r), "2", str(port)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for r in range(2)
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        line = next((ln for ln in out.splitlines() if ln.startswith("RESULT ")), None)
        assert line is not None, err[-3000:]
        results.append(json.loads(line[len("RESULT ") :]))
    source = "jax.process_index" if backend == "jax" else "torch.distributed"
    for rank, got in enumerate(results):
        assert (got["rank"], got["world_size"], got["source"]) == (rank, 2, source)
        assert got["discovered"] == [rank, 2, True]
        assert str(port) in json.dumps(got["cluster"])


def test_a_dataloader_given_to_fit_is_described_as_one():
    """A torch DataLoader named in dataset= is the user's: its workers and batch are known,
    and the DataLoader rules may speak of its num_workers."""
    require_backend("torch")
    import numpy as np
    from torch.utils.data import DataLoader

    from gpudiag.record.run_facts import describe_input

    loader = DataLoader(np.zeros((64, 4), dtype=np.float32), batch_size=8, num_workers=2)
    facts = describe_input(loader)
    assert (facts.kind, facts.batch_size, facts.workers) == ("dataloader", 8, 2)
