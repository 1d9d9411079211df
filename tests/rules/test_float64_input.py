"""``float64-input``: float64 input, on both sides of its thresholds (the same cause planted in
a real fit: tests/training/test_causes.py)."""

from __future__ import annotations

import pytest

from gpudiag.analyze.rules import (
    float64_input,
)
from tests.rules.kit import situation

CPU = {"device_type": "CPU"}


def _cfg(d):
    from gpudiag.trace.model.runconfig import RunConfig

    return RunConfig(**d)


def test_float64_lint_and_its_gain_bounded_by_the_copies():
    assert float64_input.check(_cfg({"input_float64": False})) is None
    f = float64_input.check(_cfg({"input_float64": True, "input_kind": "array"}))
    (sug,) = float64_input.advise(f, situation(config={"input_kind": "array"}, transfer=0.3))
    assert sug.expected_gain_range[-1] == pytest.approx(1 / (1 - 0.15), rel=0.01)
    (none,) = float64_input.advise(f, situation(config={"input_kind": "array"}))
    assert none.expected_gain == 1.0
