"""``memory-growth``: memory held at epoch ends that keeps growing."""

from __future__ import annotations

import pytest

from gpudiag.analyze.rules import memory_growth as rule
from gpudiag.trace.model.timeline import Metadata, Timeline
from tests.rules.kit import evidence, situation


def epochs(levels: list[float], name: str = "mem_host_rss", epoch_s: float = 60.0) -> Timeline:
    tl = Timeline(meta=Metadata(producer="gpudiag"))
    spans = [(i * epoch_s * 1e6, (i + 1) * epoch_s * 1e6 - 1e6) for i in range(len(levels))]
    tl.spans["epoch"] = spans
    tl.add_steps(range(len(spans)), [s for s, _ in spans], [e for _, e in spans])
    ts = [e + 1e3 for _, e in spans]
    tl.add_counter(name, "host", ts, levels)
    tl.add_counter("mem_host_available", "host", ts, [8000.0] * len(levels))
    return tl.freeze()


def test_growth_over_the_threshold_after_the_first_epoch():
    first = 1000.0
    step = rule.MIN_GROWTH_MIB / 2 + 1  # two steps: just over the floor
    f = rule.detect(evidence(epochs([500.0, first, first + step, first + 2 * step])))
    assert f is not None and f.evidence["per_epoch_mib"] == pytest.approx(step)
    assert f.evidence["reading"] == "mem_host_rss" and f.title.startswith("Host memory")


def test_growth_under_the_threshold_is_not_a_leak():
    step = rule.MIN_GROWTH_MIB / 2 - 1
    assert rule.detect(evidence(epochs([500.0, 1000.0, 1000 + step, 1000 + 2 * step]))) is None


def test_growth_small_against_what_is_held_is_not_a_leak():
    held = 20_000.0  # 5% of 20 GB is 1 GB; 3 x 100 MiB is less
    assert rule.detect(evidence(epochs([held, held, held + 100, held + 200, held + 300]))) is None


def test_runway_sets_the_severity():
    fast = rule.detect(evidence(epochs([500, 1000, 2000, 3000], epoch_s=600.0)))
    assert fast is not None and fast.severity == "high"  # 8 GB left at 1 GB an epoch
    slow = rule.detect(evidence(epochs([500, 1000, 1070, 1140], epoch_s=3600.0)))
    assert slow is not None and slow.severity == "moderate"  # over 100 epochs, 100 h
    assert slow.evidence["epochs_left"] > rule.RUNWAY_HIGH_EPOCHS


def test_advice_names_the_retracing_when_found():
    f = rule.detect(evidence(epochs([500, 1000, 2000, 3000])))
    (sug,) = rule.advise(f, situation(findings=("recompilation",)))
    assert sug.remedy == "find-memory-growth" and "retraces" in sug.detail
    assert "tracemalloc" in sug.detail  # host memory: Python's tools
