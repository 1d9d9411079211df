"""The MCP server's stdin, a request at a time, each request bounded before it is held.

The SDK's stdio transport reads stdin a line (one JSON-RPC message) at a time, whatever the
line's size: one request line of 200 MB took the server to 917 MB. Here a line is read to at
most ``MAX_REQUEST_BYTES``; a longer one is skipped a MiB at a time without being held, and
answered with a JSON-RPC error naming the bound (when its id can be read off its start).

    from mcp.server.stdio import stdio_server

    lines = BoundedLines(sys.stdin.buffer)
    async with stdio_server(stdin=lines) as (read, write):
        lines.answer = write.send          # where the error for an oversized request goes
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO

import anyio
import anyio.to_thread

# The largest request gpudiag's tools take: MAX_PATHS paths of a few hundred bytes. A JSON
# line is decoded by the SDK into ~10x its size, so this bounds a request at ~10 MB.
MAX_REQUEST_BYTES = 1 << 20
SKIP_BYTES = 1 << 20  # read at a time while skipping an oversized line
ID_RE = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')
INVALID_REQUEST = -32600  # JSON-RPC


class BoundedLines:
    """stdin's lines as the SDK's transport iterates them (``async for line in stdin``),
    each at most ``limit`` bytes; see the module's doc."""

    def __init__(self, raw: BinaryIO, limit: int = MAX_REQUEST_BYTES) -> None:
        self.raw = raw
        self.limit = limit
        self.answer: Callable[[Any], Awaitable[None]] | None = None  # the write stream's send

    def __aiter__(self) -> BoundedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await anyio.to_thread.run_sync(self.raw.readline, self.limit + 1)
            if not line:
                raise StopAsyncIteration
            if len(line) <= self.limit or line.endswith(b"\n"):
                return line.decode("utf-8", "replace")
            head = line[:4096]
            size = len(line) + await anyio.to_thread.run_sync(self._skip_rest)
            await self._refuse(head, size)

    def _skip_rest(self) -> int:
        """Read past the rest of the line, holding at most ``SKIP_BYTES``; its length."""
        skipped = 0
        while True:
            part = self.raw.readline(SKIP_BYTES)
            skipped += len(part)
            if not part or part.endswith(b"\n"):
                return skipped

    async def _refuse(self, head: bytes, size: int) -> None:
        """Answer the oversized request with an error, when its id can be read."""
        found = ID_RE.search(head)
        message = (
            f"request of {size / (1 << 20):,.1f} MiB refused: gpudiag's server takes requests "
            f"of at most {self.limit / (1 << 20):g} MiB (give a directory or a quoted glob "
            "instead of many paths)"
        )
        if found is None or self.answer is None:
            print(f"gpudiag mcp: {message}", file=sys.stderr, flush=True)
            return
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        try:
            rid = json.loads(found.group(1))  # a number or a JSON string, unescaped
        except ValueError:
            print(f"gpudiag mcp: {message}", file=sys.stderr, flush=True)
            return
        error = types.JSONRPCError(
            jsonrpc="2.0", id=rid, error=types.ErrorData(code=INVALID_REQUEST, message=message)
        )
        await self.answer(SessionMessage(error))


async def serve_stdio(server: Any) -> None:
    """``server`` (an ``MCPServer``) on stdin and stdout, its requests bounded: the SDK's
    ``run_stdio_async`` with stdin read by ``BoundedLines``."""
    from mcp.server.stdio import stdio_server

    lines = BoundedLines(sys.stdin.buffer)
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
        lines.answer = write_stream.send
        low = server._lowlevel_server  # what run_stdio_async runs, with this transport
        await low.run(read_stream, write_stream, low.create_initialization_options())
