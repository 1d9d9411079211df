"""``partial-last-batch`` (lint, refined by the trace): the last batch of an epoch is short and
kept, so some replicas get few or no samples.

Why it matters: with BatchNormalization the statistics of those replicas are computed over a
handful of samples (or none), which corrupts them; high severity then, moderate without it.
On JAX (``keras.distribution``) the short batch is a new input shape: the step compiles
again the first time it comes, and where the replicas cannot split it evenly JAX fails on
it (``IndivisibleError``) at the end of the first epoch — high severity whatever the model.

Where it is known: from the configuration (arrays given to ``fit``, a PyDataset's length and
last batch, a tf.data cardinality), before the first step; else seen in the trace (``refine``):
the train step compiled for exactly two batch sizes, the full one and a smaller one.

Example: "Last batch has 16 samples for 2 replicas (8 each) and the model has
BatchNormalization". Fix, for the input the run was given: ``ds.batch(B,
drop_remainder=True)``; arrays trimmed to whole batches; a PyDataset whose ``__len__`` leaves
the short batch out. Not raised when ``drop_remainder`` is on or unknown.
"""

from __future__ import annotations

import re

from gpudiag.analyze.compile_time import varying_dims
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation
from gpudiag.analyze.needs import Needs
from gpudiag.trace.model.compiles import CompileEvent
from gpudiag.trace.model.runconfig import RunConfig
from gpudiag.trace.model.timeline import Timeline

ID = "partial-last-batch"
NEEDS = {"drop-remainder": Needs()}
KIND = "lint"  # reads only the RunConfig: judged once, before the first step
SHOWN_FIRST = "correctness"  # uneven or failing last steps: its fix leads, whatever the gain
# compiled functions that are not the training step (their batch is the evaluation's)
NOT_TRAINING = ("test", "predict", "eval")
JIT_WRAPPER = re.compile(r"^(?:p?jit|pmap)\((.*)\)$")  # JAX's "jit(train_step)": train_step


def check(cfg: RunConfig) -> Finding | None:
    batch, replicas, samples = cfg.global_batch, cfg.replicas or 1, cfg.samples
    if replicas <= 1 or not batch or not samples or samples % batch == 0:
        return None
    if cfg.drop_remainder is not False:
        return None
    if cfg.framework == "jax" and batch % replicas:
        return None  # JAX fails on the first batch (batch-not-multiple-of-replicas)
    return _finding(cfg, batch, samples % batch, replicas, "lint", samples)


def _finding(
    cfg: RunConfig, batch: int, last: int, replicas: int, source: str, samples: int | None = None
) -> Finding:
    bn = bool(cfg.batchnorm)
    jax = cfg.framework == "jax"
    fails = jax and last % replicas != 0  # only where the batch itself divides (check)
    title = f"Last batch has {last} samples for {replicas} replicas ({_split(last, replicas)})"
    if fails:
        title += ": JAX cannot split it and fails on it at the end of the first epoch"
    elif bn:
        title += " and the model has BatchNormalization"
    evidence: dict[str, object] = {
        "global_batch": batch,
        "last_batch": last,
        "replicas": replicas,
        "batchnorm": bn,
    }
    if samples is not None:
        evidence = {"samples": samples, **evidence}
    if fails:
        evidence["fails"] = True
    elif jax:
        evidence["recompiles"] = True  # a new input shape: the step compiles again for it
    return Finding(ID, "high" if bn or fails else "moderate", title, evidence, source)


def refine(f: Finding | None, ev: RankEvidence) -> Finding | None:
    """The trace side: a step compiled for a short batch besides the full one shows the
    ragged last batch where the configuration did not know the sample count, and what
    compiling for it cost."""
    seen = short_batch_compiles(ev.timeline)
    if seen is None:
        return f
    full, short, seconds = seen
    if f is None:
        cfg = ev.config
        if (cfg.replicas or 1) <= 1 or cfg.drop_remainder:
            return None
        f = _finding(cfg, full, short, cfg.replicas or 1, "trace")
    evidence = {**f.evidence, "last_batch_compile_s": round(seconds, 3)}
    return Finding(f.id, f.severity, f.title, evidence, f.source)


def short_batch_compiles(tl: Timeline) -> tuple[int, int, float] | None:
    """(full batch, short batch, seconds spent compiling for the short one) where one
    training function was compiled for exactly two batch sizes and nothing else changed;
    None otherwise."""
    by_function: dict[str, list[CompileEvent]] = {}
    for ev in tl.compiles.events:
        name = ev.what.lower()
        if ev.shapes and not any(word in name for word in NOT_TRAINING):
            by_function.setdefault(JIT_WRAPPER.sub(r"\1", ev.what), []).append(ev)
    for events in by_function.values():
        dims = varying_dims([ev.shapes for ev in events if ev.shapes])
        if not dims or any(d.axis != 0 for d in dims) or len(dims[0].values) != 2:
            continue
        short, full = dims[0].values
        leaf = dims[0].leaf
        seconds = sum(
            ev.end - ev.start
            for ev in events
            if ev.shapes and len(ev.shapes) > leaf and ev.shapes[leaf][:1] == [short]
        )
        return full, short, seconds / 1e6
    return None


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    bn = bool(f.evidence.get("batchnorm"))
    why = (
        "a short last batch gives some replicas few or no samples, corrupting "
        "BatchNormalization statistics"
        if bn
        else "a short last batch leaves some replicas with less work than the others"
    )
    if f.evidence.get("fails"):
        why = (
            f"JAX cannot shard a batch of {f.evidence.get('last_batch')} over "
            f"{f.evidence.get('replicas')} devices and fails on it"
        )
    elif f.evidence.get("recompiles"):
        why += ", and JAX compiles the step again for its shape"
    return [
        Suggestion(
            "Drop the ragged last batch",
            f"{_how(s.config, f)}: {why}.",
            1.0,
            "correctness of BatchNormalization statistics" if bn else "even work per replica",
            ID,
            remedy="drop-remainder",
        )
    ]


def _how(cfg: RunConfig, f: Finding) -> str:
    """How to drop it, for the input the run was given."""
    batch = f.evidence.get("global_batch") or "B"
    if cfg.input_kind == "array":
        return (
            f"fit keeps the short last batch of arrays: trim them to whole batches, n = "
            f"len(x) // {batch} * {batch}; fit(x[:n], y[:n], batch_size={batch}) (shuffle "
            "them first if their order is not random)"
        )
    if cfg.input_kind == "pydataset":
        return (
            "let the PyDataset's __len__ count whole batches only (samples // batch_size), "
            "so it never yields the short one"
        )
    if cfg.input_kind == "generator":
        return f"let the generator yield whole batches of {batch} only, not the short last one"
    if cfg.input_kind == "dataloader":
        return f"DataLoader(..., batch_size={batch}, drop_last=True)"
    return f"ds.batch({batch}, drop_remainder=True)"


def _split(samples: int, replicas: int) -> str:
    """How a batch falls on the replicas, in whole samples: "3 each", "3–4 each"."""
    low, extra = divmod(samples, replicas)
    if low == 0:
        return f"{samples} of them get 1 sample, the others none"
    return f"{low} each" if not extra else f"{low}–{low + 1} each"
