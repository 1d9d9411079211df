"""``--scheduler``: relative paths as the README writes them, a malformed address blamed on
itself, not on the traces."""

from __future__ import annotations

import http.server
import json
import os
import socket
import struct
import threading
import time

import pytest

from gpudiag.cli import main
from gpudiag.trace.model.timeline import Metadata
from tests.helpers.synth import periodic, record_profiled

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


class Server:
    """A TCP server on a free local port that does ``greet`` to each connection (send bytes,
    or nothing) and then holds it open without a word, as a port that is not Dask does."""

    def __init__(self, greet: bytes = b"") -> None:
        self.greet = greet
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if self.greet:
                conn.sendall(self.greet)
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for c in self.held:
            c.close()


def _refused_quickly(tmp_path, capsys, monkeypatch, address: str) -> str:
    pytest.importorskip("distributed")
    from gpudiag.trace.ranks import dask_run

    monkeypatch.setattr(dask_run, "HANDSHAKE_S", 1.0)
    _ranks(tmp_path / "run")
    t0 = time.perf_counter()
    code = main(["analyze", str(tmp_path / "run"), "--scheduler", address])
    took = time.perf_counter() - t0
    _, err = capsys.readouterr()
    assert code == 2 and len(err.splitlines()) == 1, err
    assert took < 20, took  # the handshake's 1 s, not Dask's "forever"
    assert f"--scheduler {address}: " in err
    assert "trace" not in err and "memory" not in err  # the scheduler is blamed
    return err


def test_a_port_that_accepts_and_never_speaks_is_refused_in_time(tmp_path, capsys, monkeypatch):
    """Was: hung in distributed.Client.start (killed after 120 s)."""
    server = Server()
    try:
        err = _refused_quickly(tmp_path, capsys, monkeypatch, f"tcp://127.0.0.1:{server.port}")
    finally:
        server.close()
    assert "did not speak Dask's protocol within 1 s" in err


def test_an_http_servers_port_is_refused_in_time(tmp_path, capsys, monkeypatch):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        err = _refused_quickly(
            tmp_path, capsys, monkeypatch, f"127.0.0.1:{httpd.server_address[1]}"
        )
    finally:
        httpd.shutdown()
    assert "HTTP server" in err


def test_a_port_that_greets_first_is_not_dask(tmp_path, capsys, monkeypatch):
    """Was: Dask read SSH's greeting as a message length and tried to allocate 3 EiB; the
    message blamed the trace ("not enough memory to read this trace")."""
    server = Server(b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n")
    try:
        err = _refused_quickly(tmp_path, capsys, monkeypatch, f"tcp://127.0.0.1:{server.port}")
    finally:
        server.close()
    assert "does not speak Dask's protocol (it greets as an SSH server does)" in err


def test_a_handshake_that_stalls_after_a_dask_like_greeting_is_given_up(
    tmp_path, capsys, monkeypatch
):
    """A greeting that passes for a Dask message's length, then silence: the whole
    handshake has a deadline, not only the connect."""
    server = Server(struct.pack("<Q", 64))
    try:
        err = _refused_quickly(tmp_path, capsys, monkeypatch, f"tcp://127.0.0.1:{server.port}")
    finally:
        server.close()
    assert "the Dask scheduler did not complete its handshake within 1 s" in err
