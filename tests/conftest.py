"""Shared fixtures: where the real traces are, and a quiet TensorFlow environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

REPO = Path(__file__).resolve().parents[1]
SHARED_TRACES = REPO.parent / "shared" / "traces"
SAMPLES = REPO / "sample_traces"


def shared(rel: str) -> str:
    """A trace from ../shared/traces (CI has shared/ beside the checkout)."""
    p = SHARED_TRACES / rel
    if not p.exists():
        pytest.skip(f"shared trace {rel} not present")
    return str(p)


@pytest.fixture
def shared_trace():
    return shared
