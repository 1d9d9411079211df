"""``rnn-without-cudnn``: recurrent layers off the cuDNN path, on both sides of its thresholds
(the same cause planted in a real fit: tests/training/test_causes.py)."""

from __future__ import annotations

import pytest

from gpudiag.analyze.rules import (
    rnn_without_cudnn,
)
from tests.rules.kit import evidence

CPU = {"device_type": "CPU"}


def test_rnn_off_cudnn_on_a_gpu_only():
    why = {"rnn_without_cudnn": "lstm (LSTM): recurrent_dropout=0.2"}
    assert rnn_without_cudnn.detect(evidence(config={**why, "device_type": "GPU"})) is not None
    assert rnn_without_cudnn.detect(evidence(config={**why, **CPU})) is None
    assert rnn_without_cudnn.detect(evidence(config={"device_type": "GPU"})) is None


def test_rnn_layers_off_cudnn_are_read_from_keras_settings():
    keras = pytest.importorskip("keras")
    from gpudiag.record.model_facts import model_run_facts

    def facts(layer):
        m = keras.Sequential([keras.Input((10, 4)), layer, keras.layers.Dense(1)])
        m.compile("adam", "mse")
        return model_run_facts(m)

    assert "rnn_without_cudnn" not in facts(keras.layers.LSTM(4))
    assert (
        "recurrent_dropout=0.2"
        in facts(keras.layers.LSTM(4, recurrent_dropout=0.2))["rnn_without_cudnn"]
    )
    assert "activation=relu" in facts(keras.layers.GRU(4, activation="relu"))["rnn_without_cudnn"]
