"""Both ends of a helper script that runs in a process of its own.

Training scripts (``python -m tests.helpers.scenarios NAME TRACE`` and the others here) run
apart because TensorFlow, JAX and torch keep state per process (devices, thread pools, the
Keras backend) and TensorFlow processes sometimes hang at exit. Each prints one line
``RESULT {json}`` and leaves at once; a test starts it and reads that line:

    result, proc = run_script("scenarios", "gil_generator", trace, timeout=200)

Stdlib only: a script imports this before its framework.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from typing import NoReturn

from tests.helpers.paths import REPO

PREFIX = "RESULT "
QUIET_TF = {"TF_CPP_MIN_LOG_LEVEL": "3", "TF_ENABLE_ONEDNN_OPTS": "0"}


def _environment(env: Mapping[str, str | None] | None) -> dict[str, str]:
    full = {**os.environ, **QUIET_TF}
    for k, v in (env or {}).items():
        if v is None:
            full.pop(k, None)
        else:
            full[k] = v
    return full


def start_script(module: str, *args: object) -> subprocess.Popen[str]:
    """Start ``tests.helpers.<module>`` and return at once, its stdout piped (line by line:
    a scenario prints ``started`` when its fit begins) and its stderr dropped, for a test
    that watches or kills the run while it trains."""
    return subprocess.Popen(
        [sys.executable, "-m", f"tests.helpers.{module}", *map(str, args)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=_environment(None),
    )


def run_script(
    module: str,
    *args: object,
    timeout: float,
    env: Mapping[str, str | None] | None = None,
    python: str = sys.executable,
    what: str = "",
) -> tuple[dict, subprocess.CompletedProcess[str]]:
    """Run ``tests.helpers.<module>`` with ``args`` from the repository root, TensorFlow
    quiet, ``env`` over this process's environment (``None`` removes a variable); its
    RESULT and the finished process. No RESULT line fails the test with the script's output
    tails, headed by ``what`` (or the module)."""
    proc = subprocess.run(
        [python, "-m", f"tests.helpers.{module}", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_environment(env),
    )
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith(PREFIX)), None)
    assert line is not None, (
        f"{what or module} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    )
    return json.loads(line[len(PREFIX) :]), proc


def answer(result: dict) -> NoReturn:
    """Print the RESULT line and leave now (no interpreter teardown to hang in)."""
    print(PREFIX + json.dumps(result), flush=True)
    os._exit(0)


def answer_timed(scenario: Callable[..., dict], *args: object) -> NoReturn:
    """Run ``scenario(*args)`` and answer its result with its wall time as ``wall_s``."""
    t0 = time.time()
    result = scenario(*args)
    result["wall_s"] = round(time.time() - t0, 2)
    answer(result)
