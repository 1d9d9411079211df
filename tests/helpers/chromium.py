"""An HTML page loaded in Debian's headless Chromium, for the tests that render reports: the
DOM after load, with any JavaScript error and the count of fetched resources written on the
root element by a harness injected before the page's own script."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from tests.helpers.optional import missing

# Injected before the page's own code: records JavaScript errors and what the page fetched.
HARNESS = """<script>
window.addEventListener('error', function (ev) {
  document.documentElement.setAttribute('data-js-error', String(ev.message));
});
window.addEventListener('load', function () {
  document.documentElement.setAttribute(
    'data-resources', String(performance.getEntriesByType('resource').length));
});
</script>"""


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        missing("Debian's chromium is not installed (apt-get install -y chromium; .ci/run does)")
    return exe


def render_in_chromium(page: str, tmp_path: Path) -> str:
    """The DOM after load, as headless Chromium built it."""
    exe = chromium()
    path = tmp_path / "page.html"
    path.write_text(page.replace("<head>", "<head>" + HARNESS, 1), encoding="utf-8")
    r = subprocess.run(
        [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--virtual-time-budget=3000",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "<html" in r.stdout, r.stderr[-2000:]
    return r.stdout


def root_attrs(dom: str) -> str:
    """The page's ``<html ...>`` tag, where the harness writes what it saw."""
    return re.search(r"<html[^>]*>", dom).group(0)
