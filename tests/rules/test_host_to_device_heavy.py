"""``host-to-device-heavy``: host<->device copies take a large share and are not hidden."""

from __future__ import annotations

import pytest

from gpudiag.analyze.gain import removed
from gpudiag.analyze.rules import host_to_device_heavy as rule
from tests.rules.kit import evidence, situation


def found(exposed: float):
    return rule.detect(evidence(transfer_frac=exposed, compute_frac=0.5))


@pytest.mark.parametrize(
    ("exposed", "found_as"),
    [
        (rule.TRANSFER_HIGH / 2 + 0.01, "moderate"),
        (rule.TRANSFER_HIGH / 2 - 0.01, None),
        (rule.TRANSFER_HIGH + 0.01, "high"),
        (rule.TRANSFER_HIGH - 0.01, "moderate"),
    ],
)
def test_exposed_copy_thresholds(exposed, found_as):
    f = found(exposed)
    assert (f.severity if f else None) == found_as


def test_hidden_copies_count_from_ten_percent_of_the_step():
    from gpudiag.trace.model.timeline import Kind
    from tests.helpers.synth import periodic

    def hidden(total: float):
        tl = periodic(compute_frac=0.6)
        for i in range(10):  # copies under compute: not exposed
            tl.add_activity("GPU 0", Kind.H2D, [i * 1000.0], [i * 1000.0 + total * 1000])
        return rule.detect(evidence(tl))

    assert hidden(rule.TRANSFER_HIGH + 0.01).severity == "moderate"
    assert hidden(rule.TRANSFER_HIGH - 0.01) is None


def test_the_remedy_is_worded_for_the_framework_and_halves_the_copies_at_the_point():
    f = found(0.2)
    (keras,) = rule.advise(f, situation({"framework": "tensorflow"}, transfer=0.2))
    (torch,) = rule.advise(f, situation({"framework": "pytorch"}, transfer=0.2))
    assert "prefetch_to_device" in keras.detail
    assert "pin_memory=True" in torch.detail
    assert keras.expected_gain == pytest.approx(removed(0.1))
    assert keras.expected_gain_range == [1.0, round(removed(0.2), 2)]
