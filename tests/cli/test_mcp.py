"""``gpudiag mcp`` driven by the MCP SDK's own client over stdio, as an MCP host starts it:
the tools answer what the CLI prints, bad input is one line, the schemas are served."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from tests.helpers.optional import require
from tests.helpers.paths import REPO, SAMPLES

mcp = require("mcp", "the MCP SDK, gpudiag[mcp]")
jsonschema = require("jsonschema", "validates the answers against the published schema")

W0 = str(SAMPLES / "resnet50_dataloader_workers0.pt.trace.json.gz")
W4 = str(SAMPLES / "resnet50_dataloader_workers4.pt.trace.json.gz")


def cli_json(*argv: str) -> dict[str, Any]:
    r = subprocess.run(
        [sys.executable, "-m", "gpudiag", *argv, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def session(calls: list[tuple[str, Any]]) -> list[Any]:
    """One stdio session with ``python -m gpudiag mcp``; each call is (method, arguments)."""

    async def run() -> list[Any]:
        params = mcp.StdioServerParameters(
            command=sys.executable, args=["-m", "gpudiag", "mcp"], env=dict(os.environ), cwd=REPO
        )
        out = []
        async with mcp.Client(params) as client:
            for method, arg in calls:
                if method == "call_tool":
                    out.append(await client.call_tool(*arg))
                elif method == "read_resource":
                    out.append(await client.read_resource(arg))
                else:
                    out.append(await getattr(client, method)())
        return out

    return asyncio.run(asyncio.wait_for(run(), timeout=180))


@pytest.fixture(scope="module")
def answers(tmp_path_factory) -> dict[str, Any]:
    written = tmp_path_factory.mktemp("mcp") / "written.html"
    names = ["tools", "resources", "analyze", "remedies", "compare", "missing", "schema", "dash"]
    results = session(
        [
            ("list_tools", None),
            ("list_resources", None),
            ("call_tool", ("analyze", {"paths": [W0]})),
            ("call_tool", ("remedies", {"paths": [W0]})),
            ("call_tool", ("compare", {"base": W0, "new": W4})),
            ("call_tool", ("analyze", {"paths": [str(REPO / "no-such-trace.json")]})),
            ("read_resource", "gpudiag://schema/diagnosis"),
            ("call_tool", ("analyze", {"paths": [f"--html={written}", W0]})),
        ]
    )
    return {**dict(zip(names, results, strict=True)), "written": written}


def test_tools_and_schemas_are_listed(answers):
    tools = {t.name: t for t in answers["tools"].tools}
    assert set(tools) == {"analyze", "compare", "remedies"}
    assert all(len(t.description) > 100 for t in tools.values())  # says when to call it
    assert tools["analyze"].input_schema["required"] == ["paths"]
    uris = {str(r.uri) for r in answers["resources"].resources}
    assert uris == {"gpudiag://schema/diagnosis", "gpudiag://schema/comparison"}


def test_analyze_is_the_cli_json_without_the_drawing_data(answers):
    result = answers["analyze"]
    assert not result.is_error
    expected = cli_json("analyze", W0)
    got = result.structured_content
    assert got == {k: v for k, v in expected.items() if k not in ("activity", "per_step")}
    schema = json.loads(answers["schema"].contents[0].text)
    jsonschema.validate(got, schema)


def test_remedies_carry_gains_basis_and_evidence(answers):
    got = answers["remedies"].structured_content
    expected = cli_json("analyze", W0)
    assert got["verdict"] == expected["verdict"]
    assert got["median_step_ms"] == expected["steps"]["median_ms"]
    assert [r["title"] for r in got["remedies"]] == [s["title"] for s in expected["suggestions"]]
    findings = {f["id"]: f for f in expected["findings"]}
    for r in got["remedies"]:
        assert r["expected_gain"] > 1.0 and r["basis"]
        assert r["evidence"] == findings[r["finding"]]["evidence"]
        assert r["severity"] == findings[r["finding"]]["severity"]


def test_compare_is_the_cli_json(answers):
    assert answers["compare"].structured_content == cli_json("compare", W0, W4)


def test_bad_input_is_a_tool_error_of_one_line(answers):
    result = answers["missing"]
    assert result.is_error
    text = result.content[0].text
    assert "no-such-trace.json" in text and "\n" not in text
    assert "Traceback" not in text


def test_a_path_is_never_read_as_an_option(answers):
    result = answers["dash"]
    assert result.is_error
    assert result.content[0].text.endswith(f"--html={answers['written']}: no such file")
    assert not answers["written"].exists()


def test_without_the_sdk_one_line_and_exit_2():
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['mcp'] = None; from gpudiag.cli import main; "
            "raise SystemExit(main(['mcp']))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert r.returncode == 2
    assert r.stderr.strip() == "gpudiag: gpudiag mcp needs the MCP SDK: pip install 'gpudiag[mcp]'"
