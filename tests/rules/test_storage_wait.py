"""``storage-wait``: storage waits (iowait) during input wait, on both sides of its thresholds
(the same cause planted in a real fit: tests/training/test_causes.py)."""

from __future__ import annotations

import pytest

from gpudiag.analyze.evidence import HostFacts
from gpudiag.analyze.rules import (
    storage_wait,
)
from tests.rules.kit import evidence

CPU = {"device_type": "CPU"}


@pytest.mark.parametrize(
    ("iowait", "input_frac", "fires"),
    [
        (storage_wait.IOWAIT_PCT + 1, 0.4, True),
        (storage_wait.IOWAIT_PCT - 1, 0.4, False),
        (storage_wait.IOWAIT_PCT + 1, storage_wait.INPUT_SHARE - 0.02, False),
    ],
)
def test_storage_wait_thresholds(iowait, input_frac, fires):
    ev = evidence(host=HostFacts(iowait=iowait), input_frac=input_frac, compute_frac=0.3)
    assert (storage_wait.detect(ev) is not None) is fires
