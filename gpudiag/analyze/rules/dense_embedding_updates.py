"""``dense-embedding-updates`` (lint): the optimizer updates every row of a large embedding
table at every step, although a batch looks up only a few of them.

Why it costs time: an ``Embedding``'s gradient holds only the rows the batch looked up, but
Adam, AdamW, Nadam, Adamax, Lion, Ftrl, RMSprop and SGD with momentum turn it into a dense
update of the whole table and of each of its slots (their moments decay every row at every
step: Keras's own sparse-gradient tests, record/model_facts.py; tensorflow/tensorflow#23558,
DeepCTR#278). The step's cost then grows with the vocabulary, not the batch: a 300k-row
table trained ~25x slower than a 3k-row one here (docs/remedies.md).

Example: "Adam updates all 300,000 rows of embedding (19.2 M values) every step; a batch
looks up at most 1,280". Fix: an optimizer that updates only the looked-up rows for the
table (Keras >= 3.15: ``MultiOptimizer`` with ``SGD`` for it, its key matched in full
against the variable's path; else SGD for the model; Adagrad is sparse in its update but
still reads its accumulator over the whole table each step), or a smaller vocabulary
(hashing, a frequency cut-off). Each gain is bounded by the table's share of the
optimizer's work: measured from the optimizer's own ops in a TensorFlow profile where
recorded (``optimizer_us``), else at most the compute share times the table's share of the
parameters (every parameter costs the optimizer the same; the rest also runs forward and
backward).
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.gain import Gain, at_most, removed
from gpudiag.analyze.needs import Needs, OneOf
from gpudiag.trace.model.runconfig import RunConfig

ID = "dense-embedding-updates"
KIND = "lint"
NEEDS = {
    "sparse-embedding-updates": Needs(requires={"training": OneOf(True)}),
    "smaller-vocabulary": Needs(requires={"training": OneOf(True)}),
}
# A table below a million values costs a dense optimizer pass of a few MB per step: under a
# millisecond on a CPU core; above it the pass is tens of MB (Adam reads and writes the
# values, two moments and the densified gradient)
MIN_VALUES = 1_000_000
# a batch that looks up at most a tenth of the rows leaves 90% of the dense update wasted
TOUCHED_MAX = 0.1
# the table's share of the step below which the finding is withdrawn by the profile
MIN_SHARE = 0.05
HIGH_SHARE = 0.5


def touched(cfg: RunConfig) -> float | None:
    """The share of the table's rows one step can look up (None: not known)."""
    rows, lookups, batch = cfg.embedding_rows, cfg.embedding_lookups, cfg.per_replica_batch
    if not rows or not lookups or not batch:
        return None
    return min(1.0, batch * lookups / rows)


def check(cfg: RunConfig) -> Finding | None:
    if cfg.optimizer_sparse is not False or (cfg.embedding_values or 0) < MIN_VALUES:
        return None
    share = touched(cfg)
    if share is not None and share > TOUCHED_MAX:
        return None
    rows = cfg.embedding_rows or 0
    most = f"; a batch looks up at most {round(share * rows):,}" if share is not None else ""
    evidence: dict[str, object] = {
        "optimizer": cfg.optimizer or "unknown",
        "embedding": cfg.embedding_layer or "embedding",
        "embedding_rows": rows,
        "embedding_values": cfg.embedding_values,
    }
    if share is not None:
        evidence["rows_touched_pct"] = pct(share)
    if cfg.params:
        evidence["table_params_pct"] = pct((cfg.embedding_values or 0) / cfg.params)
    return Finding(
        ID,
        "moderate",
        f"{cfg.optimizer or 'The optimizer'} updates all {rows:,} rows of "
        f"{cfg.embedding_layer or 'the embedding'} ({(cfg.embedding_values or 0) / 1e6:.1f} M "
        f"values) every step{most}",
        evidence,
        "lint",
    )


def table_share(ev: RankEvidence) -> tuple[float, bool] | None:
    """The share of the step the table's dense update takes, and whether it was measured
    (the optimizer's ops in the profile) or is the bound (compute × the table's share of the
    parameters). None without a breakdown or the parameter count."""
    cfg, b = ev.config, ev.breakdown
    if b is None or not cfg.params or not cfg.embedding_values:
        return None
    part = min(1.0, cfg.embedding_values / cfg.params)
    extra = ev.timeline.meta.extra
    opt, ops = extra.get("optimizer_us"), extra.get("op_us")
    if isinstance(opt, int | float) and isinstance(ops, int | float) and ops > 0:
        return b.shares["compute"] * min(1.0, opt / ops) * part, True
    return b.shares["compute"] * part, False


def refine(f: Finding | None, ev: RankEvidence) -> Finding | None:
    """The table's share of the step, from the profile: withdrawn where it is small."""
    if f is None:
        return None
    got = table_share(ev)
    if got is None:
        return f
    share, measured = got
    if share < MIN_SHARE:
        return None
    key = "table_update_pct" if measured else "table_update_bound_pct"
    return Finding(
        ID,
        "high" if share >= HIGH_SHARE else "moderate",
        f.title + (f" (the update takes {pct(share):.0f}% of the step)" if measured else ""),
        {**f.evidence, key: pct(share), "compute_share_pct": pct(ev.shares["compute"])},
        f.source,
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    ev = f.evidence
    measured = "table_update_pct" in ev
    share = float(ev.get("table_update_pct", ev.get("table_update_bound_pct", 0.0))) / 100
    wasted = 1.0 - float(ev.get("rows_touched_pct", 0.0)) / 100
    cut = share * wasted  # the update of the rows no batch looked up
    if measured:
        # the point between half and all of it removed (geometric mean): the sparse update
        # of the touched rows and the gradient's gather stay (measured 7.0x per step for a
        # 15.6x bound, Adam against SGD on a 300k-row table: docs/remedies.md)
        g = Gain.of(
            (removed(cut) * removed(cut / 2)) ** 0.5,
            removed(cut / 2),
            removed(cut),
            f"the table's dense update is {share:.0%} of the step (the optimizer's ops in the "
            f"profile × the table's share of the parameters); {wasted:.0%} of its rows are "
            "not looked up by a batch",
        )
    else:
        g = at_most(
            cut,
            f"not measured: at most the table's share of the compute ({share:.0%} of the "
            "step) for the rows no batch looks up",
        )
    cfg = s.config
    name, opt = cfg.embedding_layer or "embedding", cfg.optimizer or "the optimizer"
    new = _keras_at_least(cfg.keras_version, 3, 15)
    how = (
        "keras.optimizers.MultiOptimizer(keras.optimizers.OptimizerMap(default_optimizer="
        f"keras.optimizers.{opt}(), optimizer_map={{'(.*/)?{name}/.*': "
        "keras.optimizers.SGD()})) (a key is matched in full against each variable's path, "
        f"such as 'sequential/{name}/embeddings')"
        if new
        else "SGD without momentum for the model (Keras 3.15 adds MultiOptimizer to keep "
        f"{opt} for the other layers)"
    )
    rows = int(ev.get("embedding_rows", 0) or 0)
    return [
        g.suggestion(
            f"Update only the looked-up rows of {name}",
            f"{how}: SGD without momentum applies the embedding's sparse gradient to the rows "
            f"it holds; {opt} updates all {rows:,} rows and their slots each step. Adagrad "
            "keeps the update sparse too but reads its accumulator over the whole table each "
            "step (about the low end of the gain).",
            ID,
            "sparse-embedding-updates",
        ),
        at_most(
            share,
            f"not estimated: the dense update ({share:.0%} of the step) shrinks with the rows kept",
        ).suggestion(
            f"Shrink the vocabulary of {name}",
            f"Fewer rows ({rows:,} now): keep the frequent tokens and hash the rest "
            "(keras.layers.StringLookup(max_tokens=...), keras.layers.Hashing(num_bins=...)); "
            "the dense update shrinks with the table.",
            ID,
            "smaller-vocabulary",
        ),
    ]


def _keras_at_least(version: str | None, major: int, minor: int) -> bool:
    parts = (version or "").split(".")
    try:
        return (int(parts[0]), int(parts[1])) >= (major, minor)
    except (ValueError, IndexError):
        return False
