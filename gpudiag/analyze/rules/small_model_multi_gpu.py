"""``small-model-multi-gpu`` (lint): several replicas for a model or per-replica batch too
small to hide the all-reduce.

What it detects: a distribution strategy with more than one replica for a model under a
million parameters, or fewer than 16 samples per replica.
Why it costs time: every step synchronises the gradients and dispatches the step once per
replica, while each device gets too little work to hide either.
Example: ``MirroredStrategy`` over 2 devices for an 8,449-parameter MLP at 32 samples per
replica (tests/helpers/compare_pairs.py records such a run with and without the strategy); Keras's
``DataParallel`` over 2 JAX devices for a 609-parameter MLP at 16.
Fix: train on one device (or fewer), or give each replica more work per all-reduce.
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import Situation
from gpudiag.analyze.gain import Gain
from gpudiag.analyze.needs import Needs
from gpudiag.analyze.rules.exposed_collectives import more_work_per_allreduce
from gpudiag.trace.model.runconfig import RunConfig

ID = "small-model-multi-gpu"
NEEDS = {"fewer-replicas": Needs()}
KIND = "lint"  # reads only the RunConfig: judged once, before the first step
SMALL_MODEL_PARAMS = 1_000_000  # below this, one replica's compute cannot hide an all-reduce
SMALL_PER_REPLICA_BATCH = 16  # per-replica batches this small starve each device


def check(cfg: RunConfig) -> Finding | None:
    replicas, per = cfg.replicas or 1, cfg.per_replica_batch
    if replicas <= 1 or per is None:
        return None
    small_params = cfg.params is not None and cfg.params < SMALL_MODEL_PARAMS
    if not small_params and per >= SMALL_PER_REPLICA_BATCH:
        return None
    return Finding(
        ID,
        "moderate",
        f"{replicas} replicas for {cfg.params or '?'} parameters at {per:g} samples per replica",
        {"replicas": replicas, "params": cfg.params, "per_replica_batch": round(per, 2)},
        "lint",
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    out = [_fewer_replicas(f, s)]
    if s.shares["sync"] > 0.02:
        out += more_work_per_allreduce(
            s, ID, "; a model this small may train faster on fewer devices"
        )
    return out


def _fewer_replicas(f: Finding, s: Situation) -> Suggestion:
    """One replica: the exposed sync goes; the replicas' compute adds up on one device (×R,
    the pessimistic end: a model this small rarely fills a device); the host's per-step
    dispatch, paid once per replica, is paid once (÷R)."""
    r = max(2, int(f.evidence.get("replicas") or 2))
    sh = s.shares
    rest = sh["input"] + sh["transfer"]
    compute, sync, other = sh["compute"], sh["sync"], sh["other"]
    point = 1.0 / max(1e-6, rest + compute * r + other / r)
    low = 1.0 / max(1e-6, 1.0 - sync + compute * (r - 1))  # host dispatch unchanged
    high = 1.0 / max(1e-6, rest + compute + other / r)  # the device was under-filled
    g = Gain.of(
        point,
        low,
        high,
        f"exposed sync {sync:.0%} removed; compute {compute:.0%} × {r} replicas on one device "
        f"(× 1 at the high end); host-side step work {other:.0%} paid once instead of {r}×",
    )
    return g.suggestion(
        "Train on one replica (fewer devices)",
        f"{_fewer(s.config)}: {f.evidence.get('params') or 'this few'} parameters at "
        f"{f.evidence.get('per_replica_batch')} samples per replica cannot hide the per-replica "
        "dispatch and the gradient all-reduce. Scale out again when the model or batch grows.",
        ID,
        "fewer-replicas",
    )


def _fewer(cfg: RunConfig) -> str:
    """How to train on fewer devices, in the words of the distribution the run used."""
    if cfg.strategy in ("keras-data-parallel", "keras-model-parallel"):
        return (
            "Fit without keras.distribution.set_distribution(...), or give the distribution "
            "fewer devices (DataParallel(devices=jax.devices()[:n]))"
        )
    return (
        "Build and fit the model without the distribution strategy, or give the strategy "
        "fewer devices"
    )
