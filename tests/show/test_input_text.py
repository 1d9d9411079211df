"""Text from a trace reaches the reader only made safe: a lone surrogate, ESC, NUL or a
right-to-left override in a device, op or host name, a finding or a limitation never breaks
``--html`` or ``--json`` and never reaches the terminal or the page raw."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from gpudiag.analyze import diagnose
from gpudiag.analyze.compare import compare
from gpudiag.analyze.diagnosis import Diagnosis
from gpudiag.record.writer import TraceWriter
from gpudiag.show.compare import render_comparison
from gpudiag.show.html import render_html
from gpudiag.show.report import plain_report, render_report
from gpudiag.show.safe import clean, escaped
from gpudiag.show.tensorboard import verdict_markdown
from gpudiag.trace.model.timeline import Metadata, RecordedLint
from tests.helpers import foreign
from tests.helpers.chromium import render_in_chromium, root_attrs
from tests.helpers.synth import periodic

BAD = "a\ud800b\x1bc\x00d\u202ee"
# what must never come out raw: the above, other controls, bidi controls, line separators
RAW = ["\ud800", "\x1b", "\x00", "\u202e", "\u202d", "\u2066", "\u200f", "\u2028", "\x9b"]


def hostile_trace(path: Path) -> str:
    """A gpudiag trace (as DiagnoseCallback writes it) with BAD in every name it carries."""
    tl = periodic(steps=6, input_frac=0.3, device=f"GPU {BAD}")
    tl.input_wait_names = {f"IteratorGetNext{BAD}": 1.0}
    meta = Metadata(
        producer="gpudiag", hostname=f"host{BAD}", device_type="GPU", limitations=[f"lim {BAD}"]
    )
    with TraceWriter(str(path), meta) as w:
        for i in range(6):
            w.step(i, i * 1000.0, (i + 1) * 1000.0, profiled=True)
        w.timeline(tl)
        w.span(f"epoch{BAD}", 0.0, 6000.0)
        w.finding(RecordedLint(f"id{BAD}", "high", f"title{BAD}", {f"k{BAD}_ms": f"v{BAD}"}, BAD))
    return str(path)


def hostile_kineto(path: Path) -> str:
    """A PyTorch Kineto trace whose kernel, DataLoader op and device names hold BAD."""
    doc = foreign.legacy_kineto_dataloader(iters=8)
    for ev in doc["traceEvents"]:
        if ev.get("cat") == "Kernel":
            ev["name"] = f"gemm{BAD}"
        elif "DataLoader" in ev["name"]:
            ev["name"] += BAD
    doc["deviceProperties"] = [{"id": 0, "name": f"NVIDIA {BAD}"}]
    return foreign.write(doc, path)


def gpudiag(*args: str, columns: int = 100) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "COLUMNS": str(columns), "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-m", "gpudiag", *args], capture_output=True, timeout=120, env=env
    )


def assert_none_raw(s: str) -> None:
    found = sorted({f"U+{ord(c):04X}" for c in s if c in RAW})
    assert not found, found


@pytest.fixture(params=["gpudiag", "kineto"])
def trace(request, tmp_path) -> str:
    make = hostile_trace if request.param == "gpudiag" else hostile_kineto
    return make(tmp_path / f"{request.param}.json")


def test_html_page_is_valid_utf8_without_raw_controls_and_renders(trace, tmp_path):
    out = tmp_path / "out.html"
    r = gpudiag("analyze", trace, "--html", str(out))
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
    assert b"Traceback" not in r.stderr
    page = out.read_bytes().decode("utf-8")  # strict: valid UTF-8
    assert_none_raw(page)
    dom = render_in_chromium(page, tmp_path)
    head = root_attrs(dom)
    assert "data-js-error" not in head and 'data-rendered="ok"' in dom, head
    assert "DATA-STARVED" in dom
    if trace.endswith("gpudiag.json"):
        # shown, visibly marked: the surrogate and the override as U+FFFD, ESC and NUL as
        # their control pictures
        assert "lim a\ufffdb\u241bc\u2400d\ufffde" in dom
        assert "GPU a\ufffdb\u241bc\u2400d\ufffde" in dom


def test_terminal_and_json_hold_nothing_raw(trace):
    for columns in (100, 30):  # the panel report and the plain lines of a narrow terminal
        r = gpudiag("analyze", trace, columns=columns)
        assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
        assert_none_raw(r.stdout.decode("utf-8"))
    j = gpudiag("analyze", trace, "--json")
    assert j.returncode == 0, j.stderr.decode(errors="replace")[-2000:]
    text = j.stdout.decode("ascii")  # JSON writes what is not ASCII as \uXXXX escapes
    assert_none_raw(text)
    assert json.loads(text)["verdict"] == "data-starved"


def _poison(value: Any, keys: bool = False) -> Any:
    """Every free-text string in ``value`` (and dict keys, where ``keys``) with BAD added."""
    if isinstance(value, str):
        return value + BAD
    if isinstance(value, list):
        return [_poison(v, keys) for v in value]
    if isinstance(value, dict):
        return {(_poison(k) if keys else k): _poison(v, keys) for k, v in value.items()}
    return value


ENUMS = {"verdict", "severity", "status"}  # chosen from fixed tables, never from input


def poisoned(obj: Any) -> Any:
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        return obj
    changes = {}
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        if f.name in ENUMS:
            continue
        if dataclasses.is_dataclass(v):
            changes[f.name] = poisoned(v)
        elif isinstance(v, list) and v and dataclasses.is_dataclass(v[0]):
            changes[f.name] = [poisoned(x) for x in v]
        elif f.name in ("breakdown", "per_step", "share_deltas", "steps"):
            continue  # category keys and figures
        else:
            changes[f.name] = _poison(v, keys=f.name == "evidence")
    return dataclasses.replace(obj, **changes)


@pytest.fixture(scope="module")
def diagnosis() -> Diagnosis:
    tls = [periodic(steps=6, input_frac=0.1 + 0.1 * r, rank=r) for r in range(2)]
    d = diagnose(tls)
    d.limitations.append("a caveat")
    assert d.findings and d.suggestions and d.devices and d.activity
    return poisoned(d)


def _terminal(renderable: Any, width: int = 100) -> str:
    """What a terminal receives, without rich's own colour escapes (so any ESC came from input)."""
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None).print(renderable)
    return buf.getvalue()


def test_every_string_field_is_made_safe_in_every_view(diagnosis):
    assert diagnosis.limitations and diagnosis.ranks[0].label.endswith(BAD)
    html_page = render_html(diagnosis)
    assert_none_raw(html_page)
    html_page.encode("utf-8")  # strict: no lone surrogate
    for width in (80, 120):
        out = _terminal(render_report(diagnosis, width=width), width)
        assert_none_raw(out)
    assert_none_raw("".join(line.plain for line in plain_report(diagnosis)))
    assert_none_raw(verdict_markdown(diagnosis))  # TensorBoard's text summary
    c = poisoned(compare(diagnosis, diagnosis))
    assert_none_raw(_terminal(render_comparison(c, f"base{BAD}", f"new{BAD}")))


def test_clean_keeps_length_and_makes_every_unsafe_character_visible():
    s = "x" + "".join(RAW) + "\ufffe\U0010ffff" + "y\u00e9\u4e2d"
    out = clean(s)
    assert len(out) == len(s)
    assert_none_raw(out)
    assert out.encode("utf-8") and out.startswith("x\ufffd\u241b\u2400\ufffd")
    assert out.endswith("y\u00e9\u4e2d")  # ordinary text untouched
    assert escaped("a\nb\u202ec") == "a\\nb\ufffdc"
