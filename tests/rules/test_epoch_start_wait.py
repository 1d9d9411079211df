"""``epoch-start-wait``: each epoch's first-batch wait holds a large share of the fit."""

from __future__ import annotations

import pytest

from gpudiag.analyze.fit_account import fit_account
from gpudiag.analyze.fit_gain import EPOCH_START_SHARE
from gpudiag.analyze.rules import epoch_start_wait as rule
from tests.helpers.fit_synth import fit_timeline
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
    ("share", "fires"), [(EPOCH_START_SHARE + 0.01, True), (EPOCH_START_SHARE - 0.01, False)]
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
    # the share a timer of each epoch's first batch reads: the first epoch's compilation in
    acc = fit_account(fit_timeline(first_wait_s=wait_for(0.6)))
    assert f.evidence["compilation_s"] == pytest.approx(0.5, abs=1e-3)
    first = 100 * (acc.parts["epoch_start"] + 0.5) / acc.wall_s
    assert f.evidence["first_batch_wait_pct"] == pytest.approx(first, abs=0.1)
    assert f"({first:.1f}% of the fit; the first epoch's compilation 0.50 s of it)" in f.title


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
    assert all(s.expected_gain <= s.expected_gain_range[-1] + 0.005 <= bound + 0.01 for s in sugs)
    assert "shuffle(1024)" in sugs[2].detail
    # the map's work goes with the first two; the last two keep it, beside the steps
    assert min(sugs[0].expected_gain, sugs[1].expected_gain) > 1.5
    assert max(sugs[2].expected_gain, sugs[3].expected_gain) < 1.2


def overlap_gains(device: str, steps_s: float) -> list[float]:
    cfg = dict(SHUFFLE_MAP, device_type=device, samples=60000)
    tl = fit_timeline(step_s=steps_s / 50, first_wait_s=0.2)
    ev = evidence(tl, config=cfg)
    s = situation(cfg)
    s.fit = ev.fit
    sugs = rule.advise(rule.detect(ev), s)
    return [x.expected_gain for x in sugs if "buffer" in x.title or "Repeat" in x.title]


def test_a_fill_hidden_beside_long_steps_is_saved_on_an_accelerator_only():
    # 0.2 s of fill against 1 s of steps an epoch: beside the steps, it vanishes
    small, repeat = overlap_gains("GPU", 1.0)
    acc = fit_account(fit_timeline(step_s=1.0 / 50, first_wait_s=0.2))
    assert small == pytest.approx(acc.wall_s / (acc.wall_s - 3 * 0.2), rel=1e-3)
    assert repeat == pytest.approx(acc.wall_s / (acc.wall_s - 2 * 0.2), rel=1e-3)
    # on a CPU-only run the map shares the cores with the steps: nothing overlaps
    assert overlap_gains("CPU", 1.0) == [1.0, 1.0]


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


@pytest.mark.parametrize("kind", ["array", "generator"])
def test_other_starts_get_one_unestimated_pointer(kind):
    f, sugs = found(config={"input_kind": kind})
    assert f.evidence["cause"] == ("array" if kind == "array" else "unknown")
    assert titles(sugs) == ["Keep one input iterator across epochs"]
    assert sugs[0].expected_gain == 1.0 and sugs[0].expected_gain_range[-1] > 1.1
