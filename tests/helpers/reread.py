"""A trained run's trace read back from disk."""

from __future__ import annotations

import json

from gpudiag.analyze import diagnose
from gpudiag.trace.load import load_file


def same_from_file(result: dict) -> None:
    """The trace on disk gives exactly the diagnosis given at the end of training (``result``
    as a scenario script answers it: ``trace_path`` and ``diagnosis``)."""
    again = diagnose(load_file(result["trace_path"])).to_dict()
    assert json.loads(json.dumps(again)) == result["diagnosis"]
