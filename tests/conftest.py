"""Shared fixtures: where the real traces are, and a quiet TensorFlow environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_traces"


def sample(name: str) -> str:
    """A real trace copied into sample_traces/ (provenance in its README). Missing is a
    failure, not a skip: these files ship with the repository."""
    p = SAMPLES / name
    if not p.exists():
        raise FileNotFoundError(f"sample trace {name} is missing from sample_traces/")
    return str(p)


@pytest.fixture
def shared_trace():
    """``shared_trace("kineto/x.json.gz")``: the real trace ``x.json.gz`` from sample_traces/
    (the folder part is the one the traces had in the shared collection)."""
    return lambda rel: sample(rel.rsplit("/", 1)[-1])
