"""``untraced-time``: a large part of the step holds no traced host or device activity."""

from __future__ import annotations

import pytest

from gpudiag.analyze.rules import untraced_time as rule
from gpudiag.trace.model.timeline import HOST_ACTIVITY, Intervals, Kind, Timeline
from tests.rules.kit import evidence, situation


def _timeline(traced: float, steps: int = 4, step_us: float = 10_000.0) -> Timeline:
    """Steps whose first ``traced`` share holds host work then device work, the rest
    nothing at all."""
    tl = Timeline()
    starts = [i * step_us for i in range(steps)]
    tl.add_steps(range(steps), starts, [s + step_us for s in starts])
    half = traced * step_us / 2
    tl.meta.extra[HOST_ACTIVITY] = Intervals(starts, [s + half for s in starts])
    tl.add_activity(
        "GPU 0", Kind.COMPUTE, [s + half for s in starts], [s + 2 * half for s in starts]
    )
    return tl.freeze()


@pytest.mark.parametrize(
    ("traced", "found_as"),
    [
        (1 - rule.UNTRACED_SHARE + 0.01, None),
        (1 - rule.UNTRACED_SHARE - 0.01, "moderate"),
        (1 - rule.UNTRACED_HIGH + 0.01, "moderate"),
        (1 - rule.UNTRACED_HIGH - 0.01, "high"),
    ],
)
def test_thresholds(traced, found_as):
    f = rule.detect(evidence(_timeline(traced)))
    assert (f.severity if f else None) == found_as


def test_says_how_much_per_step():
    f = rule.detect(evidence(_timeline(0.1, step_us=2_000_000.0)))
    assert f is not None
    assert f.evidence["untraced_per_step_s"] == pytest.approx(1.8)
    assert f.evidence["untraced_share_pct"] == pytest.approx(90.0)
    assert "callbacks" in f.title and "profiler" in f.title


def test_silent_without_a_record_of_host_activity():
    tl = _timeline(0.1)
    del tl.meta.extra[HOST_ACTIVITY]  # gpudiag's own traces keep no host record
    assert rule.detect(evidence(tl)) is None


def test_host_activity_known_only_up_to_a_cut():
    tl = _timeline(0.1)
    tl.meta.extra["host_activity_until_us"] = 5_000.0  # before the first step ends
    assert rule.detect(evidence(tl)) is None


def test_no_remedy_is_claimed():
    f = rule.detect(evidence(_timeline(0.1)))
    assert f is not None and rule.advise(f, situation()) == []
