"""``repeated-fit``: ``fit`` called again and again in a loop, each call paying fit's own start
and end; on both sides of its thresholds (fits in the loop, the share the calls' start and end
take), and the gain bounded by the time one fit would not pay (the same cause planted in real
fits: tests/training/test_causes.py)."""

from __future__ import annotations

import pytest

from gpudiag.analyze.fit_account import FitAccount
from gpudiag.analyze.fit_gain import PART_NOTE
from gpudiag.analyze.rules import repeated_fit
from tests.rules.kit import evidence, situation


def _loop(fits: int, fixed_share: float, between_s: float = 0.0) -> FitAccount:
    """A loop of 10 s wall time whose fits' own start-up and epoch starts take
    ``fixed_share`` of it (0.2 s of the start-up a one-off compilation)."""
    wall = 10.0
    fixed = fixed_share * wall
    parts = {
        "steps": wall - fixed - between_s,
        "startup": 0.2 + fixed * 0.6,
        "epoch_start": fixed * 0.4,
        "between_fits": between_s,
    }
    return FitAccount(True, wall_s=wall, parts=parts, compile_s=0.2, fits=fits)


def _detect(acc: FitAccount):
    ev = evidence()
    ev.__dict__["fit"] = acc  # the account a series of fits records (cached_property)
    return repeated_fit.detect(ev)


@pytest.mark.parametrize(
    ("fits", "share", "fires"),
    [
        (repeated_fit.MIN_FITS, PART_NOTE + 0.01, True),
        (repeated_fit.MIN_FITS - 1, PART_NOTE + 0.01, False),  # a fit resumed once
        (40, PART_NOTE - 0.01, False),  # the calls' start and end too small a part
    ],
)
def test_a_loop_of_fits_is_named_from_its_count_and_its_share(fits, share, fires):
    assert (_detect(_loop(fits, share)) is not None) is fires


def test_the_finding_says_the_count_the_share_and_the_time_between_calls():
    f = _detect(_loop(40, 0.18, between_s=0.9))
    assert f is not None
    assert f.evidence["fits"] == 40 and f.evidence["fit_overhead_pct"] == 18.0
    assert f.evidence["between_fits_pct"] == 9.0
    assert "40 times" in f.title


def test_one_fit_gains_the_calls_start_and_end_bounded_by_what_one_call_keeps():
    acc = _loop(40, 0.18, between_s=0.9)
    f = _detect(acc)
    s = situation()
    s.fit = acc
    (sug,) = repeated_fit.advise(f, s)
    assert sug.remedy == "one-fit"
    removed = 10.0 * 0.18 * (1 - 1 / 40)  # one call's start and end remain
    assert sug.expected_gain_range[0] == pytest.approx(10.0 / (10.0 - removed), rel=0.02)
    # at most also the time between the calls
    high = 10.0 / (10.0 - removed - 0.9 * (1 - 1 / 40))
    assert sug.expected_gain_range[-1] == pytest.approx(high, rel=0.02)


def test_no_gain_without_a_measured_loop():
    f = _detect(_loop(40, 0.18))
    s = situation()
    s.fit = FitAccount(False, reason="no fit span")
    assert repeated_fit.advise(f, s) == []
