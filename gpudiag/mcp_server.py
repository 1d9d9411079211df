"""``gpudiag mcp``: the diagnosis served over the Model Context Protocol (stdio).

    gpudiag mcp          # started by an MCP client; speaks JSON-RPC on stdin/stdout

Tools: ``analyze`` (the Diagnosis of ``gpudiag analyze --json``), ``compare`` (``gpudiag
compare --json``) and ``remedies`` (the ranked fixes with their expected gains and the basis
of each gain). Resources: the JSON Schemas of both outputs. Each tool runs the command line
(``gpudiag analyze|compare --json``) in a child process, so its answer is the CLI's. docs/mcp.md
says which tool answers which question. Needs the official SDK: ``pip install 'gpudiag[mcp]'``.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from typing import Any

from gpudiag import __version__

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
# A child running longer is stopped: reading is bounded (docs/formats.md), so only a stuck
# analysis gets there, and it must not hold the client forever.
TIMEOUT_S = 900


def _cli_json(command: str, options: list[str], paths: list[str]) -> dict[str, Any]:
    """``gpudiag COMMAND --json OPTIONS -- PATHS`` in a child process (after ``--`` a path
    that begins with a dash stays a path): the CLI's answer by construction, and a
    trace that exhausts memory or hangs takes down the child, not the server. Bad input
    (exit 2) becomes the tool's error, the CLI's one line."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        r = subprocess.run(
            [sys.executable, "-m", "gpudiag", command, "--json", *options, "--", *paths],
            stdin=subprocess.DEVNULL,  # stdin carries the protocol
            capture_output=True,
            text=True,
            errors="backslashreplace",
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise ToolError(f"gpudiag {command} took longer than {TIMEOUT_S} s; stopped") from None
    if r.returncode != 0:
        lines = [ln for ln in r.stderr.splitlines() if ln.startswith("gpudiag: ")]
        raise ToolError(
            lines[-1].removeprefix("gpudiag: ")
            if lines
            else f"gpudiag {command} failed (exit {r.returncode})"
        )
    answer: dict[str, Any] = json.loads(r.stdout)
    return answer


def _analyze(paths: list[str], ranks: bool) -> dict[str, Any]:
    if not paths:
        from mcp.server.mcpserver.exceptions import ToolError

        raise ToolError("no trace given: paths is empty")
    return _cli_json("analyze", ["--ranks"] if ranks else [], paths)


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
        "gpudiag", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )

    @server.tool()
    def analyze(
        paths: list[str], ranks: bool = False, drawing_data: bool = False
    ) -> dict[str, Any]:
        """Diagnose one run from its trace files (or a directory of rank files, or a quoted
        glob): verdict, confidence, reason, shares of step time (breakdown), findings with
        their evidence, suggestions with expected gains, step times, limitations. Exactly
        `gpudiag analyze --json` (schema: gpudiag://schema/diagnosis), without the drawing
        data (activity, per_step) unless drawing_data. ranks: treat every file as a rank of
        one run even when their run ids differ."""
        d = _analyze(paths, ranks)
        return d if drawing_data else {k: v for k, v in d.items() if k not in DRAWING}

    @server.tool()
    def remedies(paths: list[str], ranks: bool = False) -> dict[str, Any]:
        """What to change in this run, best first (correctness fixes first): each remedy's
        title, detail, expected_gain (step speed-up factor, 1.0 = none), expected_gain_range
        [low, high], basis (how the gain was derived: which measured shares or A/B figure),
        and the finding it addresses with its severity and evidence. Also the verdict and
        the limitations that bound what the trace could show."""
        return _remedies(_analyze(paths, ranks))

    @server.tool()
    def compare(base: str, new: str) -> dict[str, Any]:
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
        return _cli_json("compare", [], [base, new])

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
    build_server().run("stdio")
    return 0
