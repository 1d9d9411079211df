"""``op-determinism``: forced op determinism, on both sides of its thresholds (the same cause
planted in a real fit: tests/training/test_causes.py)."""

from __future__ import annotations

from gpudiag.analyze.rules import (
    op_determinism,
)
from tests.rules.kit import evidence

CPU = {"device_type": "CPU"}


def test_op_determinism_severity_by_device():
    on = {"op_determinism": True, "framework": "tensorflow"}
    assert op_determinism.detect(evidence(config={**on, **CPU})).severity == "info"
    assert op_determinism.detect(evidence(config={**on, "device_type": "GPU"})).severity == (
        "moderate"
    )
    assert op_determinism.detect(evidence(config={"op_determinism": False})) is None
