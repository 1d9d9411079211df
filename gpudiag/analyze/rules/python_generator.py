"""``python-generator``: Python code produces the input under the GIL (a generator,
py_function/numpy_function in tf.data, a PyDataset without worker processes).

Why it costs time: Python holds the GIL, so the producer runs on one thread whatever the
cores; threads (a parallel map, thread workers) cannot spread it, processes can.

Example: "Input comes from a Python generator (one thread, holds the GIL)". Fix (through
analyze/input_plan.py, once input wait is moderate): ``PyDataset(workers=N,
use_multiprocessing=True)``; not raised when a PyDataset already runs a worker process per
core.
"""

from __future__ import annotations

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.input_plan import input_remedies
from gpudiag.trace.model.runconfig import RunConfig

ID = "python-generator"
KIND = "lint"  # judged once from the RunConfig; ``refine`` adds what the trace measured

TITLES = {
    "generator": "Input comes from a Python generator (one thread, holds the GIL)",
    "pydataset": "PyDataset without enough worker processes (Python runs under the GIL)",
}


def check(cfg: RunConfig) -> Finding | None:
    """The lint: Python input, from the configuration alone."""
    python = bool(cfg.python_ops) or cfg.input_kind in ("generator", "pydataset")
    if not python:
        return None
    if (
        cfg.input_kind == "pydataset"
        and cfg.use_multiprocessing
        and (cfg.workers or 1) >= max(2, cfg.cores or 2)
    ):
        return None  # as many worker processes as cores: the GIL is not shared
    return Finding(
        id=ID,
        severity="moderate",
        title=TITLES.get(
            cfg.input_kind or "", "Python code inside tf.data (from_generator / py_function)"
        ),
        evidence={
            "input": cfg.input_kind or "tf.data",
            "workers": cfg.workers or 1,
            "use_multiprocessing": bool(cfg.use_multiprocessing),
        },
        source="lint",
    )


def refine(f: Finding | None, ev: RankEvidence) -> Finding | None:
    """The trace side: a py_function stage in a TF profile raises it where the configuration
    did not show it; the measured input share sets its severity."""
    if f is None and ev.timeline.pipeline.get("py_function"):
        f = check(ev.config)
    share = ev.input_share
    if f is None or share is None:
        return f
    return Finding(
        f.id,
        "high" if share >= T.INPUT_HIGH else "moderate",
        f.title,
        {**f.evidence, "input_share_pct": pct(share)},
        "trace",
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    return input_remedies(s) if s.shares["input"] >= T.INPUT_MODERATE else []
