"""``whole-batch-per-replica``: host-to-device bytes per replica per step against the
replica's share of the global batch."""

from __future__ import annotations

import pytest

from gpudiag.analyze.rules import whole_batch_per_replica as rule
from gpudiag.trace.load import load_file
from gpudiag.trace.model.runconfig import RunConfig
from tests.helpers.multi_gpu import BATCH, SAMPLE, rank_evidence, situation, tf_conv_run


@pytest.mark.parametrize("per_replica, fires", [(BATCH, True), (BATCH // 2, False)])
def test_whole_batch_copied_to_each_gpu(tmp_path, per_replica, fires):
    path = tf_conv_run(tmp_path / "host.trace.json", 500.0, gpus=2, copy_bytes=per_replica * SAMPLE)
    tl = load_file(path)[0]
    assert tl.meta.extra["h2d_bytes"] == {"GPU 0": 8 * per_replica * SAMPLE} | {
        "GPU 1": 8 * per_replica * SAMPLE
    }
    cfg = RunConfig(replicas=2, global_batch=BATCH, sample_bytes=SAMPLE)
    f = rule.detect(rank_evidence(tl, cfg))
    assert (f is not None) is fires
    if f is not None:
        mib = BATCH * SAMPLE / (1 << 20)
        assert f.evidence["copied_per_replica_step_mib"] == pytest.approx(mib, 1e-3)
        assert f.evidence["share_per_replica_step_mib"] == pytest.approx(mib / 2, 1e-3)
        s = rule.advise(f, situation(cfg, compute=0.6, transfer=0.2))
        assert s[0].title == "Let the strategy distribute the dataset"
        assert s[0].expected_gain == pytest.approx(1 / (1 - 0.2 * 0.5), rel=1e-3)


def test_hand_rolled_split_under_no_strategy(tmp_path):
    """make_parallel / tf.split across GPUs: Keras sees one replica, two GPUs get the batch."""
    path = tf_conv_run(tmp_path / "host.trace.json", 500.0, gpus=2, copy_bytes=BATCH * SAMPLE)
    cfg = RunConfig(replicas=1, global_batch=BATCH, sample_bytes=SAMPLE)
    f = rule.detect(rank_evidence(load_file(path)[0], cfg))
    assert f is not None and f.evidence["replicas"] == 2


def test_one_gpu_receiving_its_whole_batch_is_silent(tmp_path):
    path = tf_conv_run(tmp_path / "host.trace.json", 500.0, gpus=1, copy_bytes=BATCH * SAMPLE)
    cfg = RunConfig(replicas=1, global_batch=BATCH, sample_bytes=SAMPLE)
    assert rule.detect(rank_evidence(load_file(path)[0], cfg)) is None


@pytest.mark.parametrize(
    ("fraction", "fires"),
    [(rule.WHOLE_FRACTION + 0.05, True), (rule.WHOLE_FRACTION - 0.05, False)],
)
def test_whole_fraction_threshold(tmp_path, fraction, fires):
    path = tf_conv_run(
        tmp_path / "h.json", 500.0, gpus=2, copy_bytes=int(fraction * BATCH * SAMPLE)
    )
    cfg = RunConfig(replicas=2, global_batch=BATCH, sample_bytes=SAMPLE)
    assert (rule.detect(rank_evidence(load_file(path)[0], cfg)) is not None) is fires


@pytest.mark.parametrize("missing", ["global_batch", "sample_bytes"])
def test_silent_without_the_batch_or_sample_size(tmp_path, missing):
    path = tf_conv_run(tmp_path / "h.json", 500.0, gpus=2, copy_bytes=BATCH * SAMPLE)
    facts = {"replicas": 2, "global_batch": BATCH, "sample_bytes": SAMPLE, missing: None}
    assert rule.detect(rank_evidence(load_file(path)[0], RunConfig(**facts))) is None
