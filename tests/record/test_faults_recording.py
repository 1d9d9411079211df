"""Training never breaks because of gpudiag's recording: a full, read-only or vanished disk,
repeated fits, colliding names, a changed working directory, the user's RNG.

Real Keras runs (tiny model, CPU) in this process; faults are real where the machine allows
(a 64 KiB tmpfs when we may mount one) and injected at the system-call level otherwise.
"""

from __future__ import annotations

import errno
import os
import random
import shutil
import subprocess
import uuid
from pathlib import Path

import numpy as np
import pytest

pytestmark = [pytest.mark.train, pytest.mark.timeout(240)]
keras = pytest.importorskip("keras")
pytest.importorskip("tensorflow")

from gpudiag import DiagnoseCallback  # noqa: E402
from gpudiag.record import writer as writer_mod  # noqa: E402
from gpudiag.trace.load import load_file  # noqa: E402

STEPS = 30


def _model() -> keras.Model:
    m = keras.Sequential(
        [keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)]
    )
    m.compile(optimizer="sgd", loss="mse")
    return m


def _data(n: int = STEPS * 8) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)  # a local generator: the global state stays the user's
    return rng.normal(size=(n, 8)).astype("float32"), rng.normal(size=(n, 1)).astype("float32")


def _fit(cb: DiagnoseCallback, callbacks: tuple = (), epochs: int = 1) -> keras.callbacks.History:
    x, y = _data()
    return _model().fit(x, y, batch_size=8, epochs=epochs, verbose=0, callbacks=[cb, *callbacks])


def _warnings(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith("gpudiag: cannot write")]


def test_disk_full_partway_fit_completes_one_warning_full_report(tmp_path, monkeypatch, capfd):
    real_write = os.write
    calls = {"n": 0}

    def write_then_enospc(fd: int, data) -> int:
        calls["n"] += 1
        if calls["n"] > 3:  # header and a few flushes reach the disk, then it is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(writer_mod, "WRITE_CHUNK", 256)  # write often: fail partway
    monkeypatch.setattr(writer_mod.os, "write", write_then_enospc)
    cb = DiagnoseCallback(trace_path=str(tmp_path / "t.json"), profile_start=3, profile_steps=3)
    history = _fit(cb)
    assert len(history.history["loss"]) == 1  # fit completed
    err = capfd.readouterr().err
    assert len(_warnings(err)) == 1, err
    assert "No space left" in _warnings(err)[0]
    assert "Traceback" not in err
    # the report is built from what is in memory: every step is there
    assert cb.diagnosis is not None
    assert cb.diagnosis.steps["count"] == STEPS
    # what reached the disk is a readable, shorter trace
    on_disk = load_file(cb.trace_path)[0]
    assert len(on_disk.steps) < STEPS


def _mount_tmpfs(where: Path, size: str) -> bool:
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    where.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    return r.returncode == 0


def test_really_full_tmpfs(tmp_path, capfd):
    disk = tmp_path / "small"
    if not _mount_tmpfs(disk, "64k"):
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        # fill most of it so the trace runs out of room partway
        (disk / "filler").write_bytes(b"\0" * (60 << 10))
        cb = DiagnoseCallback(trace_path=str(disk / "t.json"), profile=False, sample_interval=0.05)
        _fit(cb, epochs=3)
        err = capfd.readouterr().err
        assert len(_warnings(err)) == 1, err
        assert "Traceback" not in err
        assert cb.diagnosis.steps["count"] == 3 * STEPS
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)


def test_read_only_trace_directory(capfd):
    # /proc refuses new files whoever we are (chmod does not stop root)
    path = f"/proc/gpudiag-{uuid.uuid4().hex}/t.json"
    cb = DiagnoseCallback(trace_path=path, profile=False)
    _fit(cb)
    err = capfd.readouterr().err
    assert len(_warnings(err)) == 1, err
    assert "Traceback" not in err
    assert cb.diagnosis is not None and cb.diagnosis.steps["count"] == STEPS


def test_trace_directory_vanishes_mid_run(tmp_path, capfd):
    folder = tmp_path / "traces"

    class RemoveFolder(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 5:
                shutil.rmtree(folder)

    cb = DiagnoseCallback(trace_path=str(folder / "t.json"), profile=False)
    _fit(cb, callbacks=(RemoveFolder(),))
    err = capfd.readouterr().err
    assert "vanished" in err and "Traceback" not in err
    assert cb.diagnosis is not None and cb.diagnosis.steps["count"] == STEPS


def test_two_fits_with_one_callback_keep_both_traces(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for explicit in (True, False):
        cb = DiagnoseCallback(
            trace_path=str(tmp_path / "run.json") if explicit else None, profile=False, quiet=True
        )
        _fit(cb)
        first = cb.trace_path
        _fit(cb)
        second = cb.trace_path
        assert first != second
        assert len(load_file(first)[0].steps) == STEPS  # the first run is intact
        assert len(load_file(second)[0].steps) == STEPS
        if explicit:
            assert first == str(tmp_path / "run.json")
            assert second == str(tmp_path / "run-2.json")
        for p in (first, second):
            os.remove(p)


def test_runs_started_in_the_same_second_do_not_collide(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("time.strftime", lambda fmt, *a: "20260101-000000")  # same second
    paths = set()
    for _ in range(3):
        cb = DiagnoseCallback(profile=False, quiet=True)
        _fit(cb)
        paths.add(cb.trace_path)
    assert len(paths) == 3
    assert all(len(load_file(p)[0].steps) == STEPS for p in paths)


def test_relative_trace_path_resolves_when_the_run_starts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cb = DiagnoseCallback(trace_path="traces/t.json", profile=False, quiet=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    _fit(cb)
    assert cb.trace_path == str(elsewhere / "traces" / "t.json")
    assert Path(cb.trace_path).exists()
    assert cb.diagnosis.steps["count"] == STEPS


class _Shuffled(keras.utils.PyDataset):
    """A PyDataset that, like many, draws from the global NumPy RNG."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int):
        order = np.random.permutation(8)
        x, y = _data(8)
        return x[order], y[order]


def test_pydataset_lint_leaves_global_rng_alone():
    np.random.seed(123)
    random.seed(123)
    np_before = np.random.get_state()[1].copy()
    pos_before = np.random.get_state()[2]
    py_before = random.getstate()
    cb = DiagnoseCallback(dataset=_Shuffled(), quiet=True)
    assert cb.lint_findings is not None
    from gpudiag.record.generation import generation_of

    cb._run_lints(None, 1, generation_of(None))  # what on_train_begin does again
    assert np.array_equal(np.random.get_state()[1], np_before)
    assert np.random.get_state()[2] == pos_before
    assert random.getstate() == py_before
    # and the user's next draw is what it would have been without gpudiag
    np.random.seed(123)
    expected = np.random.random()
    np.random.seed(123)
    DiagnoseCallback(dataset=_Shuffled(), quiet=True)
    assert np.random.random() == expected


def test_writer_stops_writing_after_a_failure_and_counts(tmp_path, monkeypatch):
    from gpudiag.trace.model.timeline import Metadata

    real_write = os.write
    calls = {"n": 0}

    def full_after_two(fd: int, data) -> int:
        calls["n"] += 1
        if calls["n"] > 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(writer_mod.os, "write", full_after_two)
    problems: list[str] = []
    path = tmp_path / "t.json"
    w = writer_mod.TraceWriter(
        str(path), Metadata(producer="gpudiag"), flush_every=0.0, on_error=problems.append
    )
    for i in range(500):
        w.step(i, i * 10.0, i * 10.0 + 5.0)
    w.close()
    assert problems == ["No space left on device (errno 28)"]  # said once
    assert calls["n"] == 3  # nothing tried after the failure
    assert w.dropped > 400
    assert len(w.summary(str(path)).steps) == 500  # the report's source has every step
    assert len(load_file(str(path))[0].steps) < 5  # the file: what fitted, still readable
