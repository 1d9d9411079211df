"""No default advice (analyze/batch_gate.py): the bigger batch withheld where a named cause
holds the step, offered where none does."""

from __future__ import annotations

from gpudiag.analyze import batch_gate
from gpudiag.analyze.diagnosis import Finding
from tests.rules.kit import situation

CPU = {"device_type": "CPU"}


def test_a_bigger_batch_is_withheld_where_a_cause_holds_the_step():
    cause = Finding("slow-mixed-precision", "high", "", {})
    s = situation(compute=0.9)
    assert batch_gate.held_by(s) is None
    s.findings["slow-mixed-precision"] = cause
    assert "slow-mixed-precision" in (batch_gate.held_by(s) or "")
    s.findings["slow-mixed-precision"] = Finding("slow-mixed-precision", "info", "", {})
    assert batch_gate.held_by(s) is None  # named for information only: not what holds it
