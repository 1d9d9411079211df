"""Shared fixtures: where the real traces are, and a quiet TensorFlow environment."""

from __future__ import annotations

import os

import pytest

from tests.helpers.paths import sample

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")


@pytest.fixture
def shared_trace():
    """``shared_trace("kineto/x.json.gz")``: the real trace ``x.json.gz`` from sample_traces/
    (the folder part is the one the traces had in the shared collection)."""
    return lambda rel: sample(rel.rsplit("/", 1)[-1])
