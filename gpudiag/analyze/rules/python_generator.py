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

ID = "python-generator"

TITLES = {
    "generator": "Input comes from a Python generator (one thread, holds the GIL)",
    "pydataset": "PyDataset without enough worker processes (Python runs under the GIL)",
}


def detect(ev: RankEvidence) -> Finding | None:
    cfg = ev.config
    python = bool(cfg.python_ops) or cfg.input_kind in ("generator", "pydataset")
    if not python:
        return None
    if (
        cfg.input_kind == "pydataset"
        and cfg.use_multiprocessing
        and (cfg.workers or 1) >= max(2, cfg.cores or 2)
    ):
        return None  # as many worker processes as cores: the GIL is not shared
    share = ev.input_share
    evidence: dict[str, object] = {
        "input": cfg.input_kind or "tf.data",
        "workers": cfg.workers or 1,
        "use_multiprocessing": bool(cfg.use_multiprocessing),
    }
    if share is not None:
        evidence["input_share_pct"] = pct(share)
    return Finding(
        id=ID,
        severity="high" if share is not None and share >= T.INPUT_HIGH else "moderate",
        title=TITLES.get(
            cfg.input_kind or "", "Python code inside tf.data (from_generator / py_function)"
        ),
        evidence=evidence,
        source="lint" if share is None else "trace",
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    return input_remedies(s) if s.shares["input"] >= T.INPUT_MODERATE else []
