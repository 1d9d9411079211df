"""Keep native libraries' log lines (absl, TensorFlow, xprof, Kineto) out of gpudiag's output.

    with quiet_stderr():
        noisy_native_call()

Python-level ``sys.stderr`` is not enough: C++ code writes to file descriptor 2 directly, so
fd 2 is pointed at a temp file for the block. That is process-wide: other threads (the
user's) write there too meanwhile. Their lines are not lost: when the block ends, every line
that is not a native log line (absl/glog format: ``I0000 00:00:… file.cc:12] …``) is written
back to the real stderr — only the noise of what gpudiag called is dropped.
"""

from __future__ import annotations

import contextlib
import os
import re
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
            # what others said meanwhile goes out first (in order), then fd 2 comes back,
            # then whatever was said between the two
            # pread: fd 2 shares the temp file's offset, which must not move under writers
            fd = tmp.fileno()
            raw = os.pread(fd, os.fstat(fd).st_size, 0)
            _replay(raw, saved)
            os.dup2(saved, 2)
            os.close(saved)
            late = os.pread(fd, os.fstat(fd).st_size - len(raw), len(raw))
            _replay(late, 2)
            raw += late
            captured.extend(raw.decode("utf-8", "replace").splitlines())


# absl / glog: "I0000 00:00:1795447606.505280    4152 profiler_session.cc:117] ..."; and
# Kineto (torch.profiler): "USDT:2026-11-27 02:21:41 27671:27671 SyncActivityProfilerHandler
# .cpp:39] profiler_start", "ERROR:... DeviceProperties.cpp:56] gpuGetDeviceCount failed ..."
_NATIVE_LOG = re.compile(
    rb"^(?:[IWEF]\d{4} [\d:.]+\s+\d+ "
    rb"|[A-Z]+:\d{4}-\d\d-\d\d [\d:.]+ \d+:\d+ )[\w./-]+:\d+\] "
)
_NATIVE_PREAMBLE = (b"WARNING: All log messages before absl::InitializeLog()",)


def _replay(raw: bytes, fd: int) -> None:
    """Write back what other threads said while fd 2 was redirected (native log lines of
    the quieted call excepted)."""
    keep = [
        line
        for line in raw.splitlines(keepends=True)
        if not _NATIVE_LOG.match(line) and not line.startswith(_NATIVE_PREAMBLE)
    ]
    data = b"".join(keep)
    while data:
        try:
            n = os.write(fd, data)
        except OSError:
            return
        data = data[n:]


def quiet_tensorflow_env() -> None:
    """Environment that silences TensorFlow's C++ logging; set before importing it."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
    os.environ.setdefault("GLOG_minloglevel", "3")
