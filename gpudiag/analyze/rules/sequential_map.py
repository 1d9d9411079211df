"""``sequential-map``: a tf.data map without ``num_parallel_calls`` (a lint from the run
config, or a ``Map`` stage seen in a TF profile).

Why it costs time: the map runs on one core while the device waits for its batch; TF ops run
outside the GIL, so a parallel map spreads over the cores.

Example: "1 tf.data map(s) run sequentially (no num_parallel_calls)". Fix (through
analyze/input_plan.py, once input wait is moderate): ``ds.map(fn,
num_parallel_calls=tf.data.AUTOTUNE)``; not offered when every map is already parallel. Not
raised where the profile shows another stage holding the input time (analyze/input_stage.py):
that stage's remedy is the one.
"""

from __future__ import annotations

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.input_plan import input_remedies
from gpudiag.trace.model.runconfig import RunConfig

ID = "sequential-map"
KIND = "lint"  # judged once from the RunConfig; ``refine`` adds what the trace showed


def check(cfg: RunConfig) -> Finding | None:
    """The lint: sequential maps, from the configuration alone."""
    if not cfg.sequential_maps:
        return None
    return Finding(
        id=ID,
        severity="moderate",
        title=f"{cfg.sequential_maps} tf.data map(s) run sequentially (no num_parallel_calls)",
        evidence={
            "sequential_maps": cfg.sequential_maps,
            "parallel_maps": cfg.parallel_maps or 0,
        },
        source="lint",
    )


def refine(f: Finding | None, ev: RankEvidence) -> Finding | None:
    """The trace side: a sequential ``Map`` stage in a TF profile raises it where the
    configuration did not show it; a profile that shows the input time in another stage
    withdraws it; the measured input share sets its severity."""
    cfg = ev.config
    if f is None and ev.timeline.pipeline.get("sequential_map"):
        f = check(cfg)
    if f is None:
        return None
    if cfg.input_stage is not None and cfg.input_stage != "map-sequential":
        return None  # the input time goes elsewhere: that stage's remedy is the one
    share = ev.input_share
    evidence = dict(f.evidence)
    if share is not None:
        evidence["input_share_pct"] = pct(share)
    chain = ev.timeline.pipeline.get("iterator_chains") or ev.timeline.pipeline.get(
        "input", {}
    ).get("chain")
    if chain:
        evidence["pipeline"] = (
            chain[0]
            if isinstance(chain, list) and chain and isinstance(chain[0], str) and "::" in chain[0]
            else " <- ".join(map(str, chain))
        )
    return Finding(
        f.id,
        "high" if share is not None and share >= T.INPUT_HIGH else "moderate",
        f.title,
        evidence,
        "lint" if share is None else "trace",
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    return input_remedies(s) if s.shares["input"] >= T.INPUT_MODERATE else []
