"""``epoch-start-wait``: each epoch's first-batch wait holds a large share of the fit."""

from __future__ import annotations

import pytest

from gpudiag.analyze.fit_account import fit_account
from gpudiag.analyze.fit_gain import PART_SHARE
from gpudiag.analyze.rules import epoch_start_wait as rule
from tests.fit_synth import fit_timeline
from tests.rules.kit import evidence, situation, titles

SHUFFLE_MAP = {
    "input_kind": "tf.data",
    "shuffle_buffer": 60000,
    "map_before_shuffle": True,
    "global_batch": 256,
}


def wait_for(share: float) -> float:
    rest = fit_account(fit_timeline()).wall_s
    return share * rest / (1 - share) / 3


def found(share: float = 0.6, config=None, **kw):
    ev = evidence(fit_timeline(first_wait_s=wait_for(share), **kw), config=config or SHUFFLE_MAP)
    f = rule.detect(ev)
    s = situation(config or SHUFFLE_MAP)
    s.fit = ev.fit
    return f, (rule.advise(f, s) if f is not None else [])


@pytest.mark.parametrize(
    ("share", "fires"), [(PART_SHARE + 0.01, True), (PART_SHARE - 0.01, False)]
)
def test_share_threshold(share, fires):
    assert (found(share)[0] is not None) is fires


def test_names_the_wait_per_epoch_and_what_fills():
    f, _ = found(0.6)
    assert f.evidence["per_epoch_s"] == pytest.approx(wait_for(0.6), abs=1e-3)
    assert f.evidence["cause"] == "shuffle-map"
    assert "a shuffle buffer of 60000 elements filled through a per-element map" in f.title
    # compilation stays with the first epoch's start-up, not counted here
    assert f.evidence["epoch_start_s"] == pytest.approx(3 * wait_for(0.6), abs=1e-3)
    assert f.evidence["with_compilation_pct"] > f.evidence["epoch_start_pct"]


def test_one_epoch_never_raises_it():
    ev = evidence(fit_timeline(epochs=1, first_wait_s=5.0), config=SHUFFLE_MAP)
    assert rule.detect(ev) is None


def test_shuffle_remedies_bounded_by_the_wait():
    _, sugs = found(0.6)
    assert titles(sugs) == [
        "Shuffle before the map, map after batching",
        "Cache after the map",
        "A smaller shuffle buffer over a shuffled source",
        "Repeat before the shuffle",
    ]
    acc = fit_account(fit_timeline(first_wait_s=wait_for(0.6)))
    bound = acc.wall_s / (acc.wall_s - acc.parts["epoch_start"])
    assert all(1.0 < s.expected_gain <= s.expected_gain_range[-1] <= bound + 0.01 for s in sugs)
    assert "shuffle(1024)" in sugs[2].detail


def test_remedies_in_place_are_not_offered():
    cfg = dict(SHUFFLE_MAP, cache=True, shuffle_buffer=2048)
    _, sugs = found(config=cfg)
    assert "Cache after the map" not in titles(sugs)
    assert "A smaller shuffle buffer over a shuffled source" not in titles(sugs)  # 2048 is small


def test_a_worker_pool_started_every_epoch():
    cfg = {"input_kind": "pydataset", "workers": 8, "use_multiprocessing": True}
    f, sugs = found(config=cfg, teardown_s=0.1)
    assert f.evidence["cause"] == "worker-pool" and f.evidence["workers"] == 8
    assert "pool of 8 worker processes started and stopped every epoch" in f.title
    assert titles(sugs) == ["Fewer, longer epochs"]


def test_an_unknown_start_gets_one_unestimated_pointer():
    f, sugs = found(config={"input_kind": "array"})
    assert f.evidence["cause"] == "unknown"
    assert titles(sugs) == ["Keep one input iterator across epochs"]
    assert sugs[0].expected_gain == 1.0 and sugs[0].expected_gain_range[-1] > 1.1
