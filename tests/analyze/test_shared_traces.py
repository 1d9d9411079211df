"""Verdicts on real traces recorded by other people (sample_traces/, provenance in its README)."""

from __future__ import annotations

import pytest

from gpudiag.analyze import diagnose
from gpudiag.analyze.breakdown import CATEGORIES
from gpudiag.trace.load import load_file, load_timelines
from tests.helpers.paths import sample


def _diag(rel: str):
    return diagnose(load_file(sample(rel)))


def test_resnet_workers0_is_data_starved_pointing_at_dataloader():
    d = _diag("resnet50_dataloader_workers0.pt.trace.json.gz")
    assert d.verdict == "data-starved"
    assert d.confidence >= 0.7
    assert 0.25 <= d.breakdown["input"] <= 0.45
    wait = d.finding("input-wait")
    assert wait is not None and wait.severity == "high"
    assert any("DataLoader" in name for name in wait.evidence["waiting_in"])
    dl = d.finding("dataloader-in-main-process")
    assert dl is not None and dl.evidence["num_workers"] == 0
    assert dl.evidence["dataloader_share_pct"] > 30
    top = d.suggestions[0]
    assert "worker" in top.title.lower() and "num_workers=" in top.detail
    assert top.expected_gain > 1.2


def test_resnet_workers4_is_not_data_starved():
    d = _diag("resnet50_dataloader_workers4.pt.trace.json.gz")
    assert d.verdict == "compute-bound"
    assert d.breakdown["input"] < 0.05
    assert d.finding("input-wait") is None
    assert d.finding("dataloader-in-main-process") is None


def test_nccl_128_ranks_is_sync_bound():
    d = _diag("nccl_world128_rank0.json.gz")
    assert d.verdict == "sync-bound"
    f = d.finding("exposed-collectives")
    assert f is not None and f.severity == "high"
    assert f.evidence["exposed_sync_pct"] > 15
    assert d.ranks[0].label == "rank 0"
    assert any("per-replica batch" in s.detail for s in d.suggestions)


@pytest.mark.parametrize("rel", ["cpu_only_rank34.json.gz", "no_gpu_events.json.gz"])
def test_traces_without_device_events_are_inconclusive(rel):
    d = _diag(rel)
    assert d.verdict == "inconclusive"
    assert d.confidence == 0.0
    assert "no device activity" in d.reason
    assert any("no GPU events" in lim for lim in d.limitations)


def test_overlapped_comm_counts_only_exposed_sync():
    d = _diag("a100_overlapped_comm.json.gz")
    f = d.finding("exposed-collectives")
    assert f is not None
    # collectives take ~35% of the step but much of it hides under compute
    assert f.evidence["collective_pct"] > 30
    assert f.evidence["exposed_sync_pct"] < f.evidence["collective_pct"] * 0.7
    assert d.finding("host-to-device-heavy") is not None


def test_mostly_idle_gpu_is_not_given_a_confident_verdict():
    d = _diag("a100_nccl_sparse.json.gz")
    assert d.verdict == "inconclusive"
    assert d.confidence < 0.5
    assert "idle" in d.reason
    assert d.finding("kernel-launch-bound") is not None


def test_rocm_device_names_are_read():
    tls = load_file(sample("mi250_rocm_minitoy.json.gz"))
    assert tls[0].devices == ["GPU 2"]
    assert "AMD" in tls[0].meta.device_type


def test_breakdowns_sum_to_one_everywhere():
    for rel in [
        "resnet50_dataloader_workers0.pt.trace.json.gz",
        "a100_overlapped_comm.json.gz",
        "nccl_world128_rank0.json.gz",
    ]:
        d = _diag(rel)
        assert set(CATEGORIES) <= set(d.breakdown)
        assert sum(d.breakdown.values()) == pytest.approx(1.0)
        for row in d.per_step:
            assert sum(row.values()) == pytest.approx(1.0)


def test_xplane_breakdown_matches_xprof_overview():
    pytest.importorskip("xprof")
    from gpudiag.trace.tf.xspace.by_xprof import xprof_overview

    path = sample("tf_gpu_multi_worker.xplane.pb")
    ov = xprof_overview(path)
    d = diagnose(load_file(path))
    xprof_compute = ov["device_compute"] / ov["step"]
    assert d.breakdown["compute"] == pytest.approx(xprof_compute, abs=0.05)
    # what xprof calls input + all others is, for us, input + transfer + other
    xprof_rest = (ov["other"] + ov["input"]) / ov["step"]
    ours_rest = d.breakdown["input"] + d.breakdown["other"] + d.breakdown["transfer"]
    assert ours_rest == pytest.approx(xprof_rest, abs=0.05)
    assert len(d.ranks) == 2  # two workers, each with its own step line
    # the step time we measure for the slower worker is xprof's step time
    assert max(r.step_ms for r in d.ranks) == pytest.approx(ov["step"], abs=0.1)


def test_several_files_are_ranks():
    tls = load_timelines(
        [sample("nccl_world128_rank0.json.gz"), sample("a100_overlapped_comm.json.gz")]
    )
    d = diagnose(tls)
    assert [r.label for r in d.ranks] == ["rank 0", "rank 3"]
    assert {r.verdict for r in d.ranks} == {"sync-bound"}
    assert d.verdict == "sync-bound"
