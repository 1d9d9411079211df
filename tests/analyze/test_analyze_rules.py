"""Analyzer rules pinned on both sides of each threshold (docs/thresholds.md)."""

from __future__ import annotations

import pytest

from gpudiag.analyze import diagnose
from gpudiag.analyze import thresholds as T
from gpudiag.analyze.gain import batch_scaled, pipelined, removed, spread
from gpudiag.analyze.verdict import decide
from tests.helpers.synth import periodic


def shares(**kw: float) -> dict[str, float]:
    base = {"input": 0.0, "transfer": 0.0, "compute": 0.0, "sync": 0.0, "other": 0.0}
    base.update(kw)
    base["other"] = 1.0 - sum(v for k, v in base.items() if k != "other")
    return base


def test_breakdown_recovers_known_shares():
    d = diagnose([periodic(input_frac=0.3, transfer_frac=0.05, compute_frac=0.5, sync_frac=0.1)])
    b = d.breakdown
    assert b["input"] == pytest.approx(0.30)
    assert b["transfer"] == pytest.approx(0.05)
    assert b["compute"] == pytest.approx(0.50)
    assert b["sync"] == pytest.approx(0.10)
    assert b["other"] == pytest.approx(0.05)


def test_collectives_hidden_under_compute_are_not_sync():
    d = diagnose([periodic(compute_frac=0.8, overlap_sync_frac=0.5)])
    assert d.breakdown["sync"] == pytest.approx(0.0)
    assert d.verdict == "compute-bound"
    assert d.finding("exposed-collectives") is None


@pytest.mark.parametrize(
    ("inp", "verdict"),
    [
        (T.INPUT_HIGH + 0.01, "data-starved"),
        (T.INPUT_DOMINANT + 0.01, "data-starved"),  # largest stall
        (T.INPUT_DOMINANT - 0.01, "compute-bound"),
    ],
)
def test_input_thresholds(inp, verdict):
    assert decide(shares(input=inp, compute=0.6))[0] == verdict


def test_moderate_input_that_is_not_the_largest_stall_is_not_starved():
    v, _, _ = decide(shares(input=0.12, sync=0.16, compute=0.6))
    assert v == "sync-bound"


@pytest.mark.parametrize(
    ("sync", "verdict"), [(T.SYNC_HIGH + 0.01, "sync-bound"), (T.SYNC_HIGH - 0.01, "compute-bound")]
)
def test_sync_threshold(sync, verdict):
    assert decide(shares(sync=sync, compute=0.7))[0] == verdict


def test_unexplained_idle_is_inconclusive_with_low_confidence():
    v, conf, why = decide(shares(compute=0.3))
    assert v == "inconclusive" and conf < 0.5 and "idle" in why


def test_confidence_grows_with_margin():
    _, low, _ = decide(shares(input=0.21, compute=0.6))
    _, high, _ = decide(shares(input=0.45, compute=0.5))
    assert 0.5 <= low < high <= 0.95


def test_input_finding_severity_follows_anchors():
    mod = diagnose([periodic(input_frac=0.08, compute_frac=0.85)]).finding("input-wait")
    high = diagnose([periodic(input_frac=0.25, compute_frac=0.7)]).finding("input-wait")
    none = diagnose([periodic(input_frac=0.03, compute_frac=0.9)]).finding("input-wait")
    assert mod is not None and mod.severity == "moderate"
    assert high is not None and high.severity == "high"
    assert none is None


def test_gaps_at_step_boundaries():
    d = diagnose([periodic(input_frac=0.3, compute_frac=0.7)])
    g = d.finding("gpu-idle-gaps")
    assert g is not None
    assert g.evidence["gaps_per_step"] == pytest.approx(1.0, abs=0.15)
    assert g.evidence["at_step_boundary_pct"] == pytest.approx(100.0)
    assert g.evidence["longest_gap_ms"] == pytest.approx(0.3, abs=0.01)


def test_straggler_rank_found():
    # the others wait for rank 3 in the all-reduce: more exposed sync, same step time
    ranks = [periodic(rank=r, compute_frac=0.5, sync_frac=0.3) for r in range(3)]
    ranks.append(periodic(rank=3, compute_frac=0.5, sync_frac=0.15, slow=1.3))
    d = diagnose(ranks)
    f = d.finding("straggler")
    assert f is not None and f.evidence["straggler"] == "rank 3"
    # work (step minus waiting for the last rank): 1000 µs against 850 µs
    assert f.evidence["median_slowdown_pct"] == pytest.approx(17.6, abs=1)
    assert f.evidence["others_wait_ms"] == pytest.approx(0.15, abs=0.01)
    assert len(d.ranks) == 4


def test_no_straggler_among_equal_ranks():
    d = diagnose([periodic(rank=r, compute_frac=0.5, sync_frac=0.2) for r in range(4)])
    assert d.finding("straggler") is None


def test_no_steps_is_inconclusive():
    tl = periodic()
    tl.steps = type(tl.steps)()
    d = diagnose([tl])
    assert d.verdict == "inconclusive" and "no training steps" in d.reason


def test_expected_gain_formulas():
    assert removed(0.5) == pytest.approx(2.0)
    assert spread(0.4, 4) == pytest.approx(1 / (1 - 0.4 * 0.75))
    assert batch_scaled(0.4, 4) == pytest.approx(1 / (0.6 + 0.1))
    assert pipelined(0.4, 4) == pytest.approx(1 / 0.6)  # the rest of the step bounds it
    assert pipelined(0.8, 2) == pytest.approx(2.0)  # the workers bound it
    # input work unknown (no config): no estimate is claimed, only what removal would be worth
    d = diagnose([periodic(input_frac=0.4, compute_frac=0.55)])
    (only,) = d.suggestions
    assert only.expected_gain == 1.0 and only.expected_gain_range == [1.0, 1.67]
    # a sequential map of TF ops on 4 cores: the producer spread over them
    tl = periodic(input_frac=0.4, compute_frac=0.55)
    tl.meta.config.update(
        {"input_kind": "tf.data", "sequential_maps": 1, "cores": 4, "root_prefetch": True}
    )
    d = diagnose([tl])
    assert [s.title for s in d.suggestions] == ["Parallelise the tf.data map"]
    assert d.suggestions[0].expected_gain == pytest.approx(pipelined(0.4, 4), abs=0.01)


def test_to_dict_contract_keys():
    d = diagnose([periodic(input_frac=0.3)]).to_dict()
    assert {"verdict", "confidence", "breakdown", "findings", "suggestions"} <= set(d)
    assert {"input", "transfer", "compute", "sync", "other"} <= set(d["breakdown"])
    for f in d["findings"]:
        assert {"id", "severity", "evidence"} <= set(f)
    for s in d["suggestions"]:
        assert {"title", "detail", "expected_gain"} <= set(s)


def _with_host_counters(tl, gil_p95, ref_p95, gil_p50, cpu):
    ts = [float(i) * 1e6 for i in range(6)]
    tl.add_counter("gil_lateness", "host", ts, [gil_p95] * 6)
    tl.add_counter("gil_reference_lateness", "host", ts, [ref_p95] * 6)
    tl.add_counter("gil_lateness_p50", "host", ts, [gil_p50] * 6)
    tl.add_counter("cpu_total", "host", ts, [cpu] * 6)
    return tl


@pytest.mark.parametrize(
    ("gil", "ref", "p50", "cpu", "inp", "expected"),
    [
        (6.0, 0.3, 0.2, 50.0, 0.0, True),  # GIL contention on an idle-ish CPU
        (1.5, 0.1, 0.1, 50.0, 0.0, False),  # below the 2 ms p95 threshold
        (6.0, 3.0, 0.2, 50.0, 0.0, False),  # reference as late: CPU contention, not the GIL
        (8.0, 0.4, 0.3, 99.0, 0.0, False),  # saturated CPU, compute-bound: descheduled holder
        (8.0, 0.4, 0.3, 99.0, 0.3, True),  # saturated CPU but the device waits for input
        (8.0, 0.4, 4.5, 99.0, 0.0, True),  # saturated CPU, Python thread running non-stop
    ],
)
def test_gil_pressure_rule(gil, ref, p50, cpu, inp, expected):
    tl = _with_host_counters(periodic(input_frac=inp, compute_frac=0.6), gil, ref, p50, cpu)
    assert (diagnose([tl]).finding("gil-pressure") is not None) is expected


def test_cpu_saturated_finding():
    tl = _with_host_counters(periodic(), 0.1, 0.1, 0.1, 97.0)
    f = diagnose([tl]).finding("cpu-saturated")
    assert f is not None and f.evidence["cpu_total_p50_pct"] == 97.0
    assert (
        diagnose([_with_host_counters(periodic(), 0.1, 0.1, 0.1, 85.0)]).finding("cpu-saturated")
        is None
    )
