"""The HTML report in a real headless Chromium: it renders, raises no JavaScript error, fetches
nothing, shows the verdict, every rank, and no input string can inject markup or script."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from gpudiag.analyze import diagnose
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.show.html import render_html
from tests.helpers.chromium import render_in_chromium, root_attrs
from tests.helpers.paths import SAMPLES
from tests.helpers.synth import periodic

W0 = str(SAMPLES / "resnet50_dataloader_workers0.pt.trace.json.gz")


def test_report_of_real_trace_renders_in_chromium(tmp_path):
    out = tmp_path / "report.html"
    r = subprocess.run(
        [sys.executable, "-m", "gpudiag", "analyze", W0, "--html", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    page = out.read_text(encoding="utf-8")
    # self-contained: no external reference of any kind
    assert not re.search(r"(src|href)\s*=|@import|url\(", page)
    dom = render_in_chromium(page, tmp_path)
    head = root_attrs(dom)
    assert "data-js-error" not in head, head
    assert 'data-resources="0"' in head, head  # nothing fetched
    assert 'data-rendered="ok"' in dom  # the page's own script ran to its end
    verdict = re.search(r'id="verdict"[^>]*>([^<]+)<', dom)
    assert verdict and verdict.group(1) == "DATA-STARVED"
    assert "the device waits for input 34% of step time" in dom
    assert dom.count('class="strip"') == 1 and "step 5" in dom  # the profiled window
    for fid in ("input-wait", "dataloader-in-main-process", "gpu-idle-gaps"):
        assert fid in dom
    # gains (point and range, from the diagnosis itself) and evidence carry units
    from gpudiag.analyze import diagnose
    from gpudiag.trace.load import load_file

    top = diagnose(load_file(W0)).suggestions[0]
    assert f"{top.expected_gain:.2f}×" in dom and "69.1 ms" in dom


NASTY = "<img src=x onerror=\"document.documentElement.setAttribute('data-pwned','1')\">"


def test_nothing_from_the_input_is_injected(tmp_path):
    tl = periodic(steps=4, input_frac=0.3, device=f"GPU {NASTY}")
    tl.meta.source = f"/runs/{NASTY}</script><script>document.title='pwned'</script>"
    d = diagnose([tl])
    d.findings.append(
        Finding(
            f"x{NASTY}", "high", f"title {NASTY}", {f"key{NASTY}_ms": NASTY, "names": {NASTY: 3.0}}
        )
    )
    d.suggestions.append(Suggestion(NASTY, NASTY, 1.5, NASTY, NASTY))
    d.limitations.append(NASTY)
    dom = render_in_chromium(render_html(d), tmp_path)
    head = root_attrs(dom)
    assert "data-pwned" not in head and "data-js-error" not in head, head
    assert "<img" not in dom
    assert "pwned" not in re.search(r"<title>([^<]*)</title>", dom).group(1)
    assert 'data-rendered="ok"' in dom


def test_every_rank_is_shown():
    tls = [periodic(steps=6, input_frac=0.1 + 0.01 * r, rank=r) for r in range(40)]
    page = render_html(diagnose(tls))
    for r in range(40):
        assert f"<td>rank {r}</td>" in page
    assert "Breakdown per rank (40)" in page


NOTEBOOK = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()  # what a Jupyter kernel has running before any cell
import gpudiag
from gpudiag.analyze.diagnosis import Diagnosis, RankSummary
d = Diagnosis(
    "sync-bound", 0.7, "exposed sync 30%",
    {"input": 0.0, "transfer": 0.0, "compute": 0.6, "sync": 0.3, "other": 0.1},
    ranks=[RankSummary("run", "sync-bound", {}, 0, 0.0)],
)
data, _ = shell.display_formatter.format(d)
print(json.dumps(data))
"""


def test_notebook_shows_a_diagnosis_as_the_report():
    """IPython's own display formatter, in a shell started before ``import gpudiag``."""
    pytest.importorskip("IPython")
    r = subprocess.run(
        [sys.executable, "-c", NOTEBOOK], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr[-2000:]
    data = json.loads(r.stdout.splitlines()[-1])
    frag = data["text/html"]
    assert frag.startswith('<div class="gpudiag-report">') and "<html" not in frag
    assert "SYNC-BOUND" in frag and "exposed sync 30%" in frag
    assert "text/plain" in data


def test_without_ipython_nothing_is_registered_or_imported():
    from gpudiag.show.notebook import register

    code = "import sys, gpudiag.analyze; print('IPython' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == "False", r.stderr[-2000:]
    if "IPython" not in sys.modules:
        assert register() is False  # no shell: nothing to register with


def test_a_shell_without_ipython_formatters_is_left_alone():
    """``import gpudiag`` must not fail in a shell that merely resembles IPython's."""
    from types import SimpleNamespace

    from gpudiag.show.notebook import register

    assert register(SimpleNamespace(display_formatter=SimpleNamespace())) is False
    assert register(SimpleNamespace(display_formatter=SimpleNamespace(formatters={}))) is False
