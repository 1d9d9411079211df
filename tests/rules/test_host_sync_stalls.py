"""``host-sync-stalls``: the device idles after the host synchronises with it."""

from __future__ import annotations

import pytest

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.rules import host_sync_stalls as rule
from tests.helpers.synth import periodic
from tests.rules.kit import evidence, situation


def found(idle: float, call: str = "cudaStreamSynchronize", **config):
    """Each 1 ms step computes, the host waits for it to finish (free: the device works),
    then launches nothing until the next step: the device idles ``idle`` of the step."""
    tl = periodic(compute_frac=1 - idle)
    for i in range(10):
        end = i * 1000.0 + (1 - idle) * 1000
        tl.add_host_call(call, [end - 100], [end])
    return rule.detect(evidence(tl, config))


@pytest.mark.parametrize(
    ("idle", "found_as"),
    [
        (T.SYNC_NOTE + 0.01, "moderate"),
        (T.SYNC_NOTE - 0.01, None),
        (T.SYNC_HIGH + 0.01, "high"),
        (T.SYNC_HIGH - 0.01, "moderate"),
    ],
)
def test_thresholds_on_the_idle_after_the_sync(idle, found_as):
    f = found(idle)
    assert (f.severity if f else None) == found_as


def test_evidence_per_step():
    f = found(0.2)
    assert f.evidence["syncs_per_step"] == 1.0
    assert f.evidence["idle_after_sync_pct"] == pytest.approx(20.0)
    assert f.evidence["calls"] == {"cudaStreamSynchronize": 10}


def test_a_device_kept_busy_after_the_sync_costs_nothing():
    tl = periodic(compute_frac=0.9)
    for i in range(10):  # the sync returns mid-compute: work is still queued
        tl.add_host_call("cudaDeviceSynchronize", [i * 1000.0], [i * 1000.0 + 300])
    assert rule.detect(evidence(tl)) is None


@pytest.mark.parametrize(
    ("framework", "words"),
    [("pytorch", ".item()"), ("jax", "block_until_ready"), ("tensorflow", "steps_per_execution")],
)
def test_the_remedy_names_the_syncs_of_the_framework(framework, words):
    (sug,) = rule.advise(found(0.2), situation({"framework": framework}))
    assert words in sug.detail
