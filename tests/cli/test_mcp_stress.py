"""``gpudiag mcp`` as a server (``benchmarks/mcp_stress.py``, small): concurrent calls share
one memory budget, one analysis at a time; malformed calls are one-line errors with their
reason; a huge request is refused unread; a cancelled call stops its analysis."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks import mcp_stress as ms
from tests.helpers.optional import require

require("mcp", "the MCP SDK, gpudiag[mcp]")
require("psutil", "samples the server's process tree")
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def stressed(tmp_path_factory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("mcp-stress")
    folder = ms.rank_directory(tmp / "run", 12)
    slow = ms.slow_trace(tmp / "slow.xplane.pb", events=400_000)
    server = ms.RawServer({"GPUDIAG_MEMORY_MB": "300"})
    out: dict[str, Any] = {}
    try:
        out["concurrent"] = ms.concurrent(server, folder, 3)
        out["children"] = server.most_children
        out["env"] = server_child_budget(server, folder)
        out["malformed"] = ms.malformed(server)
        server.peak_mb = 0.0
        out["huge"] = ms.huge(server, 30)
        out["huge_peak_mb"] = server.peak_mb
        out["cancelled"] = ms.cancelled(server, slow, after_s=1.5)
        out["after"] = ms.still_answering(server)
    finally:
        out["stderr"] = server.close()
    return out


def server_child_budget(server: ms.RawServer, folder: Path) -> float | None:
    """The memory budget the server gives its analysis child (read off the child)."""
    rid = server.call("analyze", {"paths": [str(folder)]})
    seen = None
    deadline = time.monotonic() + 60
    while seen is None and time.monotonic() < deadline:
        for child in server.children():
            try:
                seen = float(child.environ()["GPUDIAG_MEMORY_MB"])
            except Exception:
                continue
        time.sleep(0.02)
    server.answer(rid, 120)
    return seen


def test_concurrent_calls_run_one_analysis_at_a_time(stressed):
    """Was: each call its own child with the whole 300 MB budget (six calls on a 5000-rank
    directory: 1033 MB in 19 processes)."""
    ok, detail = stressed["concurrent"]
    assert ok, detail
    assert stressed["children"] == 1


def test_the_child_gets_what_the_server_leaves_of_the_budget(stressed):
    share = stressed["env"]
    assert share is not None and 100 <= share < 300 - 30  # the server holds ~70 MB


def test_malformed_calls_are_one_line_errors_with_their_reason(stressed):
    """Was: "Error executing tool analyze" and nothing more (a traceback on stderr)."""
    bad = [(name, text) for name, ok, text in stressed["malformed"] if not ok]
    assert not bad, bad


def test_a_huge_request_is_refused_unread(stressed):
    """Was: one 200 MB request line took the server to 917 MB."""
    ok, text = stressed["huge"]
    assert ok, text
    assert "at most 1 MiB" in text
    assert stressed["huge_peak_mb"] < 160, stressed["huge_peak_mb"]


def test_a_cancelled_call_stops_its_analysis(stressed):
    """Was: a cancelled call's analysis ran to its end."""
    ok, detail = stressed["cancelled"]
    assert ok, detail


def test_the_server_answers_on_and_logs_no_traceback(stressed):
    assert stressed["after"][0], stressed["after"]
    assert "Traceback" not in stressed["stderr"], stressed["stderr"][-2000:]


def test_an_oversized_line_without_an_id_is_skipped_and_reading_goes_on():
    import anyio

    from gpudiag.mcp_stdio import BoundedLines

    class Raw:
        def __init__(self, data: bytes) -> None:
            self.data, self.at = data, 0

        def readline(self, n: int) -> bytes:
            end = self.data.find(b"\n", self.at, self.at + n)
            end = self.at + n if end < 0 else end + 1
            part, self.at = self.data[self.at : end], min(end, len(self.data))
            return part

    sent: list[Any] = []

    async def answer(message: Any) -> None:
        sent.append(message)

    async def read(data: bytes) -> list[str]:
        lines = BoundedLines(Raw(data), limit=100)  # type: ignore[arg-type]
        lines.answer = answer
        return [line async for line in lines]

    big = b'{"jsonrpc": "2.0", "id": "a\\"b", "method": "x", "params": "' + b"y" * 1000 + b'"}'
    got = anyio.run(read, b'{"a": 1}\n' + big + b"\n" + b"z" * 500 + b'\n{"b": 2}\n')
    assert [json.loads(x) for x in got] == [{"a": 1}, {"b": 2}]
    assert len(sent) == 1 and sent[0].message.id == 'a"b'
    assert "refused" in sent[0].message.error.message
