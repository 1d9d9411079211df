"""``gpus-held-idle``: GPUs this process holds memory on (NVML, replayed) but does not train
on."""

from __future__ import annotations

import pytest

from gpudiag.analyze import ranking
from gpudiag.analyze.rules import gpus_held_idle as rule
from gpudiag.trace.model.runconfig import RunConfig
from tests.helpers.multi_gpu import nvml_replay, rank_evidence, situation
from tests.rules.kit import lint


def test_one_gpu_run_holding_four(tmp_path):
    tl = nvml_replay(tmp_path, [78_000, 78_000, 78_000, 78_000], [97, 0, 0, 0])
    f = rule.detect(rank_evidence(tl, RunConfig(train_gpus="0", training=True)))
    assert f is not None and f.severity == "high"
    assert f.evidence["idle_gpus"] == ["GPU 1", "GPU 2", "GPU 3"]
    found = [f]
    shown = ranking.advise(found, situation(RunConfig(training=True)))
    assert [s.title for s in shown] == [
        "Train on every GPU the process holds",
        "Hide the GPUs you do not train on",  # no gain claimed, still shown
    ]
    assert shown[0].expected_gain_range == [1.0, 4.0]  # 4 GPUs held, 1 trained on: at most
    assert shown[1].expected_gain_range == []


def test_strategy_over_every_held_gpu_is_silent(tmp_path):
    tl = nvml_replay(tmp_path, [78_000, 78_000], [97, 95])
    assert rule.detect(rank_evidence(tl, RunConfig(train_gpus="0,1"))) is None


def test_other_processes_on_other_gpus_are_not_ours(tmp_path):
    tl = nvml_replay(tmp_path, [78_000, 0], [97, 60])  # GPU 1: someone else's job only
    assert rule.detect(rank_evidence(tl, RunConfig(train_gpus="0"))) is None
    assert rule.detect(rank_evidence(tl, RunConfig())) is None


def test_without_the_strategy_utilisation_tells(tmp_path):
    tl = nvml_replay(tmp_path, [78_000, 500], [97, 0])
    f = rule.detect(rank_evidence(tl, RunConfig()))
    assert f is not None and f.evidence["idle_gpus"] == ["GPU 1"]
    assert f.severity == "moderate"  # a bare context, not the allocator's grab
    assert f.evidence["told_by"] == "utilisation"
    hide = rule.advise(f, situation(RunConfig()))[0]
    assert "CUDA_VISIBLE_DEVICES=0 " in hide.detail  # the GPU that works, by NVML's number


def test_numbering_that_does_not_match_nvml_is_not_guessed(tmp_path):
    tl = nvml_replay(tmp_path, [0, 78_000], [0, 97])  # trains on "0" but holds only GPU 1
    assert rule.detect(rank_evidence(tl, RunConfig(train_gpus="0"))) is None


@pytest.mark.parametrize(
    ("mib", "severity"),
    [
        (rule.HELD_MIB - 1, None),  # less than any CUDA context: not held
        (rule.HELD_MIB + 1, "moderate"),  # a context
        (rule.HIGH_MIB + 1, "high"),  # the allocator's grab
    ],
)
def test_held_thresholds(tmp_path, mib, severity):
    tl = nvml_replay(tmp_path, [78_000, mib], [97, 0])
    f = rule.detect(rank_evidence(tl, RunConfig(train_gpus="0")))
    assert (f.severity if f else None) == severity


def test_lint_sees_nothing_held():
    assert rule.detect(lint(train_gpus="0")) is None
