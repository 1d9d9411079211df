"""Stress ``gpudiag mcp`` as a server: concurrent, malformed, huge and cancelled calls.

The server is driven over raw JSON-RPC on its stdin/stdout (what any MCP client sends), and
the memory of its whole process tree (server and children) is sampled as it works. Each case
is judged; a defect is any answer that is not inside the contract: the tree over the budget
(``--budget-mb``, 300 MB as for one ``gpudiag analyze``, plus ``--slack-mb``), a call that
does not answer in time, an error that is not one line with its reason, an analysis left
running after its call was cancelled, a server that stops answering.

    python benchmarks/mcp_stress.py                     # every case, 1,000 rank files
    python benchmarks/mcp_stress.py --ranks 5000 --concurrent 6 --huge-mb 200

``tests/cli/test_mcp_stress.py`` runs small versions of the cases.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run as a script: the repository's packages importable


# ---- inputs ------------------------------------------------------------------------------
def rank_directory(folder: Path, ranks: int, steps: int = 20) -> Path:
    """``ranks`` gpudiag rank files of one run (a template's header given each rank)."""
    from gpudiag.record.writer import TraceWriter
    from gpudiag.trace.model.timeline import Kind, Metadata

    folder.mkdir(parents=True, exist_ok=True)
    template = folder / "template.tmp"
    meta = Metadata(producer="gpudiag", devices=["GPU 0"], rank=0, world_size=ranks, run_id="s")
    with TraceWriter(str(template), meta) as w:
        w.detail(True)
        for i in range(steps):
            t = i * 10_000.0
            w.step(i, t, t + 9_000.0, profiled=True)
        from gpudiag.trace.model.timeline import Timeline

        tl = Timeline(meta=meta)
        for i in range(steps):
            t = i * 10_000.0
            tl.add_activity("GPU 0", Kind.COMPUTE, [t + 3_000.0], [t + 8_000.0])
            tl.add_input_wait([t], [t + 2_500.0])
        w.timeline(tl.freeze())
    text = template.read_text()
    template.unlink()
    for r in range(ranks):
        (folder / f"rank{r:05d}.json").write_text(text.replace('"rank":0,', f'"rank":{r},', 1))
    return folder


def slow_trace(path: Path, events: int = 1_000_000) -> Path:
    """An XSpace of one line of ``events`` kernels: tens of seconds to analyze."""
    from benchmarks.hostile_xspace import xspace

    path.write_bytes(xspace(line_events=events))
    return path


# ---- the server --------------------------------------------------------------------------
class RawServer:
    """``python -m gpudiag mcp`` over raw JSON-RPC: requests written, answers read by a
    thread, the process tree's RSS sampled every 50 ms."""

    def __init__(self, env: dict[str, str] | None = None, repo: Path = REPO) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gpudiag", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=repo,
            env={**os.environ, "PYTHONPATH": str(repo), **(env or {})},
        )
        self.answers: queue.Queue[dict[str, Any]] = queue.Queue()
        self.peak_mb = 0.0  # the server and its children together
        self.peak_server_mb = 0.0  # the server alone
        self.most_children = 0
        self._next = 0
        self._done = False
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._sample, daemon=True).start()
        self.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "mcp_stress", "version": "1"},
        })  # fmt: skip
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.answers.put(json.loads(line))
            except ValueError:
                self.answers.put({"unreadable": line[:200].decode("utf-8", "replace")})

    def _sample(self) -> None:
        import psutil

        me = psutil.Process(self.proc.pid)
        while not self._done and self.proc.poll() is None:
            try:
                kids = me.children(recursive=True)
                rss = me.memory_info().rss + sum(_rss(k) for k in kids)
                analyses = [k for k in me.children() if _is_analysis(k)]  # not their workers
            except psutil.Error:
                break
            self.peak_mb = max(self.peak_mb, rss / 1e6)
            self.peak_server_mb = max(self.peak_server_mb, _rss(me) / 1e6)
            self.most_children = max(self.most_children, len(analyses))
            time.sleep(0.05)

    def children(self) -> list[Any]:
        import psutil

        try:
            return [k for k in psutil.Process(self.proc.pid).children() if _is_analysis(k)]
        except psutil.Error:
            return []

    def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.proc.stdin is not None
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any], wait: float = 120.0) -> Any:
        rid = self.start(method, params)
        return self.answer(rid, wait)

    def start(self, method: str, params: dict[str, Any]) -> int:
        self._next += 1
        self.send({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params})
        return self._next

    def call(self, tool: str, arguments: dict[str, Any]) -> int:
        return self.start("tools/call", {"name": tool, "arguments": arguments})

    def answer(self, rid: int, wait: float = 120.0) -> dict[str, Any]:
        """The answer to request ``rid`` (others read meanwhile are kept for later)."""
        deadline = time.monotonic() + wait
        kept: list[dict[str, Any]] = []
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no answer to request {rid} in {wait:g} s")
                msg = self.answers.get(timeout=left)
                if msg.get("id") == rid:
                    return msg
                kept.append(msg)
        finally:
            for m in kept:
                self.answers.put(m)

    def cancel(self, rid: int) -> None:
        self.send({
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": rid, "reason": "stress"},
        })  # fmt: skip

    def close(self) -> str:
        self._done = True
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode("utf-8", "replace")


def _rss(p: Any) -> int:
    try:
        return int(p.memory_info().rss)
    except Exception:  # gone between listing and reading
        return 0


def _is_analysis(p: Any) -> bool:
    try:
        cmd = p.cmdline()
    except Exception:
        return False
    return "gpudiag" in cmd and ("analyze" in cmd or "compare" in cmd)


def tool_text(answer: dict[str, Any]) -> tuple[bool, str]:
    """(is_error, text) of a tools/call answer; a JSON-RPC error counts as an error."""
    if "error" in answer:
        return True, str(answer["error"].get("message", ""))
    result = answer.get("result", {})
    text = "".join(c.get("text", "") for c in result.get("content", []))
    return bool(result.get("isError")), text


# ---- cases -------------------------------------------------------------------------------
@dataclass
class Case:
    name: str
    ok: bool
    detail: str
    seconds: float
    peak_mb: float


def one_line_error(answer: dict[str, Any], *said: str) -> tuple[bool, str]:
    """An error of one line that says each of ``said``, with no traceback."""
    is_error, text = tool_text(answer)
    ok = is_error and "\n" not in text and "Traceback" not in text and len(text) <= 1000
    ok = ok and all(s in text for s in said)
    return ok, text[:160]


def concurrent(server: RawServer, folder: Path, calls: int) -> tuple[bool, str]:
    """``calls`` analyze calls at once on one run's directory: every one answered, one
    analysis child at a time."""
    ids = [server.call("analyze", {"paths": [str(folder)]}) for _ in range(calls)]
    answers = [server.answer(i, 600) for i in ids]
    verdicts = [json.loads(tool_text(a)[1]).get("verdict") if not tool_text(a)[0] else None
                for a in answers]  # fmt: skip
    ok = all(verdicts) and server.most_children <= 1
    return ok, (
        f"verdicts {set(verdicts)}, at most {server.most_children} analysis at a time, "
        f"server alone {server.peak_server_mb:.0f} MB"
    )


def malformed(server: RawServer) -> list[tuple[str, bool, str]]:
    out = []
    for name, paths, said in (
        ("NUL byte in a path", ["run\x00.json"], ("NUL character",)),
        ("200,000-character path", ["x" * 200_000], ("200,000 characters",)),
        ("100,000 paths", ["p"] * 100_000, ("100,000 paths", "directory")),
        ("no path", [], ("paths is empty",)),
    ):
        ok, text = one_line_error(server.answer(server.call("analyze", {"paths": paths})), *said)
        out.append((name, ok, text))
    ok, text = one_line_error(
        server.answer(server.call("compare", {"base": "a\x00", "new": "b"})), "NUL"
    )
    out.append(("NUL byte in compare's base", ok, text))
    answer = server.answer(server.call("analyze", {"paths": "not-a-list"}))
    ok, text = one_line_error(answer, "paths", "valid list")
    out.append(("paths not a list", ok, text))
    server.send(b'{"jsonrpc": "2.0", "id": 99999, "method": "tools/call", "params": {')
    return out


def huge(server: RawServer, mb: int) -> tuple[bool, str]:
    """One request line of ``mb`` MB: answered with an error, never held whole."""
    rid = server._next = server._next + 1
    head = (
        b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "analyze",' % rid
    )
    body = b' "arguments": {"paths": ["' + b"x" * (mb << 20) + b'"]}}}'
    server.send(head + body)
    answer = server.answer(rid, 120)
    is_error, text = tool_text(answer)
    return is_error and "refused" in text, text[:160]


def cancelled(server: RawServer, trace: Path, after_s: float = 2.0) -> tuple[bool, str]:
    """A slow call cancelled: its analysis stops (no child left soon after)."""
    rid = server.call("analyze", {"paths": [str(trace)]})
    time.sleep(after_s)
    running = len(server.children())
    server.cancel(rid)
    deadline = time.monotonic() + 10
    while server.children() and time.monotonic() < deadline:
        time.sleep(0.1)
    left = len(server.children())
    return running == 1 and left == 0, f"{running} analysis running, {left} left after cancel"


def still_answering(server: RawServer) -> tuple[bool, str]:
    tools = server.request("tools/list", {}).get("result", {}).get("tools", [])
    return len(tools) == 3, f"{len(tools)} tools listed"


def run_cases(
    ranks: int,
    concurrent_calls: int,
    huge_mb: int,
    budget_mb: float,
    slack_mb: float,
    repo: Path = REPO,
) -> list[Case]:
    out: list[Case] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = rank_directory(Path(tmp) / "run", ranks)
        trace = slow_trace(Path(tmp) / "slow.xplane.pb")
        server = RawServer({"GPUDIAG_MEMORY_MB": f"{budget_mb:g}"}, repo)

        def judge(name: str, fn: Callable[[], tuple[bool, str]]) -> None:
            t0 = time.perf_counter()
            server.peak_mb = 0.0
            try:
                ok, detail = fn()
            except Exception as e:  # no answer in time, the server gone
                ok, detail = False, f"{type(e).__name__}: {e}"
            ok = ok and server.peak_mb <= budget_mb + slack_mb
            out.append(Case(name, ok, detail, time.perf_counter() - t0, server.peak_mb))

        try:
            judge(f"{concurrent_calls} concurrent analyze, {ranks} ranks",
                  lambda: concurrent(server, folder, concurrent_calls))  # fmt: skip
            for name, ok, text in malformed(server):
                out.append(Case(name, ok, text, 0.0, server.peak_mb))
            judge(f"one request line of {huge_mb} MB", lambda: huge(server, huge_mb))
            judge("a slow analyze cancelled", lambda: cancelled(server, trace))
            judge("still answering", lambda: still_answering(server))
        finally:
            stderr = server.close()
        noisy = [ln for ln in stderr.splitlines() if "Traceback" in ln]
        out.append(Case("no traceback on the server's stderr", not noisy, "", 0.0, 0.0))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=1000, help="rank files of the run (1000)")
    ap.add_argument("--concurrent", type=int, default=6, help="analyze calls at once (6)")
    ap.add_argument("--huge-mb", type=int, default=200, help="size of the huge request (200)")
    ap.add_argument("--budget-mb", type=float, default=300.0)
    ap.add_argument("--slack-mb", type=float, default=30.0, help="allowed over the budget")
    ap.add_argument(
        "--repo", type=Path, default=REPO, help="the gpudiag checkout whose server is stressed"
    )
    args = ap.parse_args()
    t0 = time.perf_counter()
    cases = run_cases(
        args.ranks, args.concurrent, args.huge_mb, args.budget_mb, args.slack_mb, args.repo
    )
    print(f"{'case':42} {'ok':>3} {'s':>6} {'peak MB':>8}  detail")
    for c in cases:
        print(f"{c.name:42} {'yes' if c.ok else 'NO':>3} {c.seconds:6.1f} {c.peak_mb:8.0f}  "
              f"{c.detail[:90]}")  # fmt: skip
    defects = sum(not c.ok for c in cases)
    print(f"{len(cases)} cases, {defects} defects, {time.perf_counter() - t0:.0f} s")
    return 1 if defects else 0


if __name__ == "__main__":
    sys.exit(main())
