"""``float64-input`` (lint): the input holds float64 arrays (pandas' and NumPy's default),
which the model computes in float32.

Why it costs time: every float64 value is twice the bytes of the float32 the model uses. On
a GPU the host-to-device copies double; inside the step a cast converts them (tf.data,
PyDataset and generator input); Keras 3 casts float64 arrays given to ``fit`` once per call,
a copy of the whole array each time (keras/src/trainers/data_adapters/array_slicing.py),
which a ``fit`` in a loop pays again and again (d2l-ai/d2l-en#1059, keras-team/keras#18648).

Example: "The input holds float64 arrays (the model computes in float32)". Fix:
``x.astype("float32")`` once, before ``fit`` (a DataFrame: ``df.astype("float32")``); in
tf.data cast in the pipeline's first map. Gain bounded by the copies' share of the step
where a GPU trace measures them (half of the transfer time); not estimated elsewhere.
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import Situation
from gpudiag.analyze.gain import Gain, removed
from gpudiag.analyze.needs import Needs
from gpudiag.trace.model.runconfig import RunConfig

ID = "float64-input"
KIND = "lint"
NEEDS = {"float32-input": Needs()}


def check(cfg: RunConfig) -> Finding | None:
    if cfg.input_float64 is not True:
        return None
    return Finding(
        ID,
        "info",
        "The input holds float64 arrays (the model computes in float32)",
        {"input_kind": cfg.input_kind or "unknown"},
        "lint",
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    t = s.shares["transfer"]
    g = Gain.of(
        removed(t / 2),
        1.0,
        removed(t / 2),
        f"half of the host-to-device copies ({t:.0%} of the step) saved"
        if t > 0
        else "not estimated: no copies measured on this run",
    )
    where = (
        "cast in the pipeline's first map (tf.cast(x, tf.float32))"
        if s.config.input_kind == "tf.data"
        else 'x.astype("float32") once, before fit (a DataFrame: df.astype("float32"))'
    )
    return [
        g.suggestion(
            "Give the model float32 input",
            f"{where}: half the bytes to copy, no cast in every step"
            + (" or at every fit call." if s.config.input_kind == "array" else "."),
            ID,
            "float32-input",
        )
    ]
