"""A real multi-worker run: two TensorFlow workers on localhost (TF_CONFIG, CPU,
MultiWorkerMirroredStrategy), each with DiagnoseCallback; then ``gpudiag analyze DIR``.

Worker 1 sleeps 80 ms per step in another callback: it must be named the straggler, with
worker 0's wait attributed to it, whichever side of DiagnoseCallback the sleeper sits. With
no sleeper nobody is named.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from gpudiag.cli import main as cli_main
from tests.helpers.paths import REPO

pytestmark = [pytest.mark.train, pytest.mark.timeout(120)]
pytest.importorskip("tensorflow")


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def run_workers(trace_dir: Path, *args: str, tries: int = 2) -> list[str]:
    """Both workers' stdout+stderr; retried once if a port was taken meanwhile."""
    for attempt in range(tries):
        cluster = {"worker": [f"localhost:{p}" for p in _free_ports(2)]}
        procs = []
        for i in range(2):
            env = {
                **os.environ,
                "TF_CPP_MIN_LOG_LEVEL": "3",
                "TF_ENABLE_ONEDNN_OPTS": "0",
                "TF_CONFIG": json.dumps(
                    {"cluster": cluster, "task": {"type": "worker", "index": i}}
                ),
            }
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "tests.helpers.multi_worker", str(trace_dir), *args],
                    cwd=REPO,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )
            )
        outs = []
        for p in procs:
            try:
                out, _ = p.communicate(timeout=90)
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                raise
            outs.append((p.returncode, out))
        if all(rc == 0 for rc, _ in outs):
            return [out for _, out in outs]
        if attempt == tries - 1:
            raise AssertionError("workers failed:\n" + "\n---\n".join(o[-3000:] for _, o in outs))
        for f in trace_dir.glob("*.json"):
            f.unlink()
    raise AssertionError("unreachable")


def analyze_dir(trace_dir: Path, capsys) -> dict:
    capsys.readouterr()
    rc = cli_main(["analyze", str(trace_dir), "--json"])
    out = capsys.readouterr().out
    assert rc == 0, out
    return json.loads(out)


def _straggler(d: dict) -> dict | None:
    return next((f for f in d["findings"] if f["id"] == "straggler"), None)


@pytest.mark.parametrize("order", ["after", "before"])
def test_sleeping_worker_is_named_whatever_the_callback_order(tmp_path, capsys, order):
    outs = run_workers(tmp_path, "--sleep-ms", "80", "--order", order)
    files = sorted(p.name for p in tmp_path.glob("*.json"))
    assert files == ["run-0.json", "run-1.json"]
    check_headers(tmp_path)
    # rank 0 prints the report, rank 1 says where its trace is
    assert "Ranks" not in outs[1] and "trace: " in outs[0]
    assert "rank 1 of 2: trace at" in outs[1]
    d = analyze_dir(tmp_path, capsys)
    f = _straggler(d)
    assert f is not None, d["ranks"]
    assert f["evidence"]["straggler"] == "rank 1"
    # rank 0's wait is attributed to rank 1: most of the 80 ms
    assert f["evidence"]["others_wait_ms"] >= 50.0
    rows = {r["label"]: r for r in d["ranks"]}
    assert rows["rank 0"]["wait_ms"] >= 50.0
    assert rows["rank 1"]["wait_ms"] < 10.0


@pytest.mark.parametrize("order, sleep_ms", [("after", "0"), ("before", "80")])
def test_control_run_names_nobody(tmp_path, capsys, order, sleep_ms):
    # no sleeper, or every rank sleeping alike (before DiagnoseCallback): nobody is waited for
    run_workers(tmp_path, "--sleeper", "-1", "--sleep-ms", sleep_ms, "--order", order)
    d = analyze_dir(tmp_path, capsys)
    assert _straggler(d) is None, d["ranks"]
    assert len(d["ranks"]) == 2
    if sleep_ms != "0":  # the sleep counts in every rank's step, whatever the order
        assert all(r["step_ms"] >= 80.0 for r in d["ranks"])


def _headers(trace_dir: Path) -> list[dict]:
    heads = []
    for p in sorted(trace_dir.glob("*.json")):
        with open(p) as f:
            assert f.readline().strip() == "["
            first = json.loads(f.readline())
        heads.append(first["args"])
    return heads


def check_headers(trace_dir: Path) -> None:
    heads = _headers(trace_dir)
    assert [h["rank"] for h in heads] == [0, 1]
    assert all(h["world_size"] == 2 for h in heads)
    assert heads[0]["run_id"] == heads[1]["run_id"] and heads[0]["run_id"].startswith("mw-")
    assert all(h["hostname"] for h in heads)
    assert all(len(h["extra"]["cluster"]["worker"]) == 2 for h in heads)
