"""``nccl-paths-off``: NCCL's fast paths turned off, on both sides of its thresholds (the same
cause planted in a real fit: tests/training/test_causes.py)."""

from __future__ import annotations

import pytest

from gpudiag.analyze.rules import (
    nccl_paths_off,
)
from tests.rules.kit import evidence

CPU = {"device_type": "CPU"}


@pytest.mark.parametrize(
    ("sync", "env", "fires"),
    [
        (0.2, "NCCL_P2P_DISABLE=1", True),
        (nccl_paths_off.SYNC_SHARE - 0.01, "NCCL_P2P_DISABLE=1", False),
        (0.2, None, False),
    ],
)
def test_nccl_paths_off_only_where_collectives_are_exposed(sync, env, fires):
    ev = evidence(config={"nccl_env": env}, sync_frac=sync, compute_frac=0.5)
    assert (nccl_paths_off.detect(ev) is not None) is fires


def test_nccl_settings_read_from_the_environment(monkeypatch):
    from gpudiag.record.runtime_facts import runtime_facts

    monkeypatch.setenv("NCCL_P2P_DISABLE", "1")
    monkeypatch.setenv("NCCL_IB_DISABLE", "0")
    assert runtime_facts(None)["nccl_env"] == "NCCL_P2P_DISABLE=1"
