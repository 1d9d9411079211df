"""Files that are not traces are named for what they are not, never for what they hold; and
the JSON guard's string bound counts each string from its own opening quote."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpudiag.trace.errors import TraceError
from gpudiag.trace.source import files as source_files
from tests.helpers.paths import REPO

SECRET = "AKIA0123456789SECRET"


def analyze(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gpudiag", "analyze", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )


@pytest.mark.parametrize(
    "name, content, said",
    [
        # a credentials file: its keys were listed ("keys: aws_secret_access_key=...")
        (
            "creds.json",
            {f"aws_secret_access_key={SECRET}": 1, f"ghp_{SECRET}": 2},
            "a JSON object with no traceEvents",
        ),
        ("list.json", [{f"token_{SECRET}": 1}], "a JSON list whose items are not trace events"),
        ("string.json", f"{SECRET}", "neither JSON nor an XSpace"),
    ],
)
def test_a_json_file_that_is_not_a_trace_is_not_quoted(tmp_path, name, content, said):
    for path in (tmp_path / name, tmp_path / (name + ".gz")):
        data = json.dumps(content).encode()
        path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
        r = analyze(path)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert said in r.stderr and "not a trace" in r.stderr
        assert SECRET not in r.stderr and "SECRET" not in r.stdout


def test_integers_beyond_64_bits_in_a_json_that_is_no_trace(tmp_path):
    """rocprofiler-sdk writes such integers: valid JSON the parser cannot take, refused as
    what it is (no traceEvents), not as invalid JSON."""
    p = tmp_path / "rocprof.json"
    p.write_text('{"rocprofiler-sdk-tool": [{"agents": [{"id": 18446744073709551615123}]}]}')
    r = analyze(p)
    assert r.returncode == 2
    assert r.stderr.strip() == f"gpudiag: {p}: not a trace: a JSON object with no traceEvents"
    q = tmp_path / "ints.json"
    q.write_text("[1, 99999999999999999999999999]")
    r = analyze(q)
    assert r.returncode == 2 and "a JSON list whose items are not trace events" in r.stderr


def _feed(guard: source_files.JsonGuard, doc: bytes, size: int) -> None:
    for i in range(0, len(doc), size):
        guard.feed(doc[i : i + size])


def test_the_string_bound_restarts_with_each_string():
    """Two 9 MiB names a few hundred bytes apart were "a JSON string longer than 16 MiB":
    a chunk holding the end of one and the start of the next added up both. Scaled down:
    a 64 KiB bound, names of 36 KiB, read 16 KiB at a time."""
    name = b"n" * (36 << 10)
    doc = b'[{"name": "' + name + b'", "ph": "X", "cat": "kernel"}, {"name": "' + name + b'"}]'
    for size in (1000, 16 << 10, 64 << 10):
        guard = source_files.JsonGuard("t", max_string=64 << 10)
        _feed(guard, doc, size)
        assert guard.depth == 0
    # escapes and a backslash cut at a chunk's end still count from the string's start
    escaped = b'["' + b'\\"' * (20 << 10) + b'", "' + b"x" * (40 << 10) + b'"]'
    _feed(source_files.JsonGuard("t", max_string=64 << 10), escaped, 4097)


def test_one_string_over_the_bound_is_still_refused():
    doc = b'[{"name": "' + b"n" * (70 << 10) + b'"}]'
    for size in (1000, 16 << 10, 40 << 10):  # a string inside one chunk: the chunk bounds it
        with pytest.raises(TraceError, match="JSON string longer than"):
            _feed(source_files.JsonGuard("t", max_string=64 << 10), doc, size)
