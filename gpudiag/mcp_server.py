"""``gpudiag mcp``: the diagnosis served over the Model Context Protocol (stdio).

    gpudiag mcp          # started by an MCP client; speaks JSON-RPC on stdin/stdout

Tools: ``analyze`` (the Diagnosis of ``gpudiag analyze --json``), ``compare`` (``gpudiag
compare --json``) and ``remedies`` (the ranked fixes with their expected gains and the basis
of each gain). Resources: the JSON Schemas of both outputs. Each tool runs the command line
(``gpudiag analyze|compare --json``) in a child process, so its answer is the CLI's; the
children run one at a time within one memory budget with the server (``mcp_budget``), and
requests are bounded before they are read whole (``mcp_stdio``). docs/mcp.md says which tool
answers which question. Needs the official SDK: ``pip install 'gpudiag[mcp]'``.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from typing import Any

from gpudiag.mcp_budget import MAX_ANSWER_BYTES, TIMEOUT_S, Busy, ChildRunner, TimedOut
from gpudiag.version import __version__

# What a client is told when it connects (the long form: docs/mcp.md).
INSTRUCTIONS = (
    "gpudiag diagnoses why a training run is slow from its profiler traces (gpudiag, "
    "TensorFlow/JAX .xplane.pb or trace.json.gz, PyTorch Kineto): data-starved, sync-bound, "
    "compute-bound or inconclusive. Call `remedies` to learn what to change (each fix with "
    "the step speed-up it can buy and the basis of that figure), `analyze` for the whole "
    "diagnosis (shares of step time, findings with their evidence, limitations), `compare` "
    "after a change to measure it against the run before. Paths are on the server's machine; "
    "several files or a directory are the ranks of one run. Fields of the answers: the "
    "resources gpudiag://schema/diagnosis and gpudiag://schema/comparison."
)
DRAWING = ("activity", "per_step")  # binned strips for the HTML report: most of the bytes
MAX_PATHS = 4096  # paths in one call: a run of more rank files is given as its directory
MAX_PATH_CHARS = 4096  # PATH_MAX on Linux: no longer path names a file
MAX_MESSAGE = 1000  # characters of an error the client is told


def tool_error(message: str) -> Exception:
    """The SDK's ToolError: the call's result is an error of this one line."""
    from mcp.server.mcpserver.exceptions import ToolError

    line = (message.splitlines() or [""])[0].strip() or "failed"
    return ToolError(line[:MAX_MESSAGE])


def checked_paths(paths: list[str], what: str = "path") -> list[str]:
    """The paths, or a ToolError saying which one no file can have (a NUL character, more
    characters than any path) or that there are too many; never the path itself."""
    if not paths:
        raise tool_error("no trace given: paths is empty")
    if len(paths) > MAX_PATHS:
        raise tool_error(
            f"{len(paths):,} paths: at most {MAX_PATHS:,} in one call; give their directory "
            "(or a quoted glob) instead"
        )
    for i, p in enumerate(paths, 1):
        which = f"{what} {i}" if len(paths) > 1 else what
        if "\x00" in p:
            raise tool_error(f"{which} holds a NUL character: no file is named so")
        if len(p) > MAX_PATH_CHARS:
            raise tool_error(
                f"{which} is {len(p):,} characters long: longer than any file's path "
                f"({MAX_PATH_CHARS:,})"
            )
    return paths


async def one_line_errors(ctx: Any, call_next: Any) -> Any:
    """Server middleware: a failed tool call's text is one line with its reason, whoever
    wrote it (the SDK's argument validation writes several: pydantic's report)."""
    result = await call_next(ctx)
    failed = isinstance(result, dict) and result.get("isError")
    if getattr(ctx, "method", None) == "tools/call" and failed:
        for part in result.get("content") or []:
            text = part.get("text") if isinstance(part, dict) else None
            if isinstance(text, str) and "\n" in text:
                part["text"] = one_line(text)
    return result


def one_line(text: str) -> str:
    """A message of several lines as one: its lines joined, pydantic's links left out."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    kept = [ln for ln in lines if not ln.startswith("For further information visit")]
    return "; ".join(kept)[:MAX_MESSAGE]


async def _cli_json(
    runner: ChildRunner,
    command: str,
    options: list[str],
    paths: list[str],
    shape: Callable[[dict[str, Any]], Any],
) -> Any:
    """``shape`` of ``gpudiag COMMAND --json OPTIONS -- PATHS``, run in a child process
    (after ``--`` a path that begins with a dash stays a path) within the server's budget
    (``mcp_budget``); ``shape`` runs before the next child starts. Bad input (exit 2)
    becomes the tool's error, the CLI's one line; anything else that goes wrong is one
    line too."""
    try:
        return await runner.run(
            [command, "--json", *options, "--", *paths],
            lambda code, out, err: shape(_answer(command, code, out, err)),
        )
    except Busy as e:
        raise tool_error(
            f"the server is busy: {e.args[0]} calls wait for the analysis running now; "
            "call again when one has answered"
        ) from None
    except TimedOut:
        raise tool_error(f"gpudiag {command} took longer than {TIMEOUT_S} s; stopped") from None
    except OSError as e:
        raise tool_error(f"gpudiag {command} could not start ({e.strerror or e})") from None


def tool_result(answer: dict[str, Any]) -> Any:
    """The tool's result, made once: the answer as structured content and as its JSON text.
    Handed a dict, the SDK would validate, copy and indent it after the next analysis has
    started (a 3.5 MB answer of 5000 ranks took the server to 196 MB)."""
    import mcp_types as types

    text = json.dumps(answer, separators=(",", ":"))
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=answer
    )


def _answer(command: str, code: int, out: bytes, err: bytes) -> dict[str, Any]:
    """The child's answer decoded, or the tool's error of one line."""
    if code != 0:
        text = err.decode("utf-8", "backslashreplace")
        lines = [ln for ln in text.splitlines() if ln.startswith("gpudiag: ")]
        raise tool_error(
            lines[-1].removeprefix("gpudiag: ")
            if lines
            else f"gpudiag {command} failed (exit {code})"
        )
    if len(out) > MAX_ANSWER_BYTES:
        raise tool_error(
            f"gpudiag {command}'s answer is larger than {MAX_ANSWER_BYTES >> 20} MiB; "
            "use the command line for this run"
        )
    try:
        answer: dict[str, Any] = json.loads(out)
    except ValueError:
        raise tool_error(f"gpudiag {command} gave no JSON answer") from None
    return answer


async def _analyze(
    runner: ChildRunner, paths: list[str], ranks: bool, shape: Callable[[dict[str, Any]], Any]
) -> Any:
    options = ["--ranks"] if ranks else []
    return await _cli_json(runner, "analyze", options, checked_paths(paths), shape)


def _remedies(d: dict[str, Any]) -> dict[str, Any]:
    """The suggestions of a diagnosis, each with the finding it answers."""
    findings = {f["id"]: f for f in d["findings"]}
    remedies = []
    for s in d["suggestions"]:
        f = findings.get(s.get("finding", ""), {})
        remedies.append({**s, "severity": f.get("severity"), "evidence": f.get("evidence", {})})
    return {
        "schema": d["schema"],
        "verdict": d["verdict"],
        "confidence": d["confidence"],
        "reason": d["reason"],
        "median_step_ms": d["steps"].get("median_ms"),
        "remedies": remedies,
        "limitations": d["limitations"],
    }


def build_server() -> Any:
    """The MCP server with gpudiag's tools and resources (``mcp`` SDK 2)."""
    from mcp.server.mcpserver import MCPServer

    from gpudiag.schemas import schema_text

    server = MCPServer(
        "gpudiag",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        middleware=[one_line_errors],
    )
    runner = ChildRunner()

    @server.tool()
    async def analyze(
        paths: list[str], ranks: bool = False, drawing_data: bool = False
    ) -> dict[str, Any]:
        """Diagnose one run from its trace files (or a directory of rank files, or a quoted
        glob): verdict, confidence, reason, shares of step time (breakdown), findings with
        their evidence, suggestions with expected gains, step times, limitations. Exactly
        `gpudiag analyze --json` (schema: gpudiag://schema/diagnosis), without the drawing
        data (activity, per_step) unless drawing_data. ranks: treat every file as a rank of
        one run even when their run ids differ."""

        def shape(d: dict[str, Any]) -> Any:
            return tool_result(
                d if drawing_data else {k: v for k, v in d.items() if k not in DRAWING}
            )

        return await _analyze(runner, paths, ranks, shape)

    @server.tool()
    async def remedies(paths: list[str], ranks: bool = False) -> dict[str, Any]:
        """What to change in this run, best first (correctness fixes first): each remedy's
        title, detail, expected_gain (step speed-up factor, 1.0 = none), expected_gain_range
        [low, high], basis (how the gain was derived: which measured shares or A/B figure),
        and the finding it addresses with its severity and evidence. Also the verdict and
        the limitations that bound what the trace could show."""
        return await _analyze(runner, paths, ranks, lambda d: tool_result(_remedies(d)))

    @server.tool()
    async def compare(base: str, new: str) -> dict[str, Any]:
        """Compare two runs, BASE before a change and NEW after it (each a trace file,
        directory of rank files or quoted glob): both verdicts and median steps,
        work (NEW's work per second over BASE's, throughput over each run's steady part,
        per sample or step, with its 95% interval and whether it is measurable beyond the
        runs' noise), step_time_ratio (NEW/BASE median step: a distribution fact, not the
        speed-up), share deltas, configuration changes, findings that appeared or went away,
        whether each remedy BASE suggested was applied, with its measured against its
        predicted gain, and judged=false with the reason when a run stopped early or the
        runs are different programs.
        Exactly `gpudiag compare --json` (schema: gpudiag://schema/comparison)."""
        checked_paths([base], "base")
        checked_paths([new], "new")
        return await _cli_json(runner, "compare", [], [base, new], tool_result)

    @server.resource("gpudiag://schema/diagnosis", mime_type="application/schema+json")
    def diagnosis_schema() -> str:
        """JSON Schema of `analyze` and `gpudiag analyze --json`."""
        return schema_text("diagnosis")

    @server.resource("gpudiag://schema/comparison", mime_type="application/schema+json")
    def comparison_schema() -> str:
        """JSON Schema of `compare` and `gpudiag compare --json`."""
        return schema_text("comparison")

    return server


def serve() -> int:
    """Serve on stdin/stdout until the client closes them. Exit 2 with one line when the
    SDK is not installed."""
    if importlib.util.find_spec("mcp") is None:
        print("gpudiag: gpudiag mcp needs the MCP SDK: pip install 'gpudiag[mcp]'", file=sys.stderr)
        return 2
    import anyio

    from gpudiag.mcp_stdio import serve_stdio

    anyio.run(serve_stdio, build_server())
    return 0
