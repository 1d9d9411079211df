"""``no-prefetch`` (lint): nothing overlaps input with compute.

Why it costs time: without a prefetch the next batch is produced only after the step ends,
so input and compute take turns instead of overlapping. TensorFlow injects a root prefetch by
itself (and Keras prefetches generators and PyDatasets), so this fires only when the
configuration shows the automatic one is off too.

Example: "Input pipeline has no prefetch and TensorFlow's automatic one is off". Fix:
``ds.prefetch(tf.data.AUTOTUNE)`` last; not offered when either prefetch is on (or unknown).
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import Situation
from gpudiag.analyze.input_plan import input_remedies
from gpudiag.trace.model.runconfig import RunConfig

ID = "no-prefetch"
KIND = "lint"  # reads only the RunConfig: judged once, before the first step


def check(cfg: RunConfig) -> Finding | None:
    if cfg.input_kind != "tf.data" or cfg.prefetch or cfg.root_prefetch is not False:
        return None
    return Finding(
        id=ID,
        severity="moderate" if cfg.maps or cfg.python_ops else "info",
        title="Input pipeline has no prefetch and TensorFlow's automatic one is off",
        evidence={"prefetch": False, "automatic_prefetch": False},
        source="lint",
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    return input_remedies(s)
