"""Keep native libraries' log lines (absl, TensorFlow, xprof) out of gpudiag's output.

    with quiet_stderr():
        noisy_native_call()

Python-level ``sys.stderr`` is not enough: C++ code writes to file descriptor 2 directly.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator


@contextlib.contextmanager
def quiet_stderr() -> Iterator[list[str]]:
    """Redirect fd 2 to a temp file for the block; yields a list filled with what was said."""
    captured: list[str] = []
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):
        yield captured
        return
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield captured
        finally:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            captured.extend(tmp.read().decode("utf-8", "replace").splitlines())


def quiet_tensorflow_env() -> None:
    """Environment that silences TensorFlow's C++ logging; set before importing it."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    os.environ.setdefault("GLOG_minloglevel", "3")
