"""What changed between two runs, read from their recorded configurations. Pure.

A finding that disappears says little about why: the bottleneck may have moved, or the user
changed something else (dropping a distribution strategy makes ``exposed-collectives`` vanish
without any all-reduce being amortised). The configuration each run recorded
(``Diagnosis.config``, a ``RunConfig``) says what was done; a remedy counts as applied only
when the field it acts on changed its way, and is "unknown" when a run did not record it.

    changes = config_changes({"global_batch": 32}, {"global_batch": 128})
    status, note = remedy_status("small-batch", "Train with a 4× bigger batch", base, new)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# Fields that describe what the program does (not measured facts of the machine).
FIELDS = (
    "global_batch",
    "replicas",
    "steps_per_execution",
    "jit_compile",
    "precision",
    "prefetch",
    "sequential_maps",
    "parallel_maps",
    "cache",
    "interleave",
    "workers",
    "use_multiprocessing",
    "input_kind",
    "drop_remainder",
    "python_ops",
)


@dataclass(frozen=True)
class Change:
    field: str
    base: Any
    new: Any

    def __str__(self) -> str:
        return f"{self.field} {_show(self.base)} → {_show(self.new)}"


def _show(v: Any) -> str:
    return "unknown" if v is None else str(v).lower() if isinstance(v, bool) else str(v)


def config_changes(base: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """Fields both runs recorded, with different values (a field one run lacks is not a
    change: it is unknown)."""
    return [
        Change(f, base[f], new[f])
        for f in FIELDS
        if base.get(f) is not None and new.get(f) is not None and base[f] != new[f]
    ]


def _per_replica(cfg: dict[str, Any]) -> float | None:
    batch = cfg.get("global_batch")
    return None if not batch else batch / max(1, cfg.get("replicas") or 1)


def _num(v: Any) -> float:
    return 0.0 if v is None or v is False else 1.0 if v is True else float(v)


# A test on the two configurations per kind of remedy: True applied, False not applied,
# None unknown (a field it needs was not recorded by one of the runs).
def _up(field: str) -> Any:
    def test(b: dict[str, Any], n: dict[str, Any]) -> bool | None:
        if b.get(field) is None or n.get(field) is None:
            return None
        return _num(n[field]) > _num(b[field])

    return test


def _changed(field: str) -> Any:
    def test(b: dict[str, Any], n: dict[str, Any]) -> bool | None:
        if b.get(field) is None or n.get(field) is None:
            return None
        return b[field] != n[field]

    return test


def _down(field: str) -> Any:
    up = _up(field)
    return lambda b, n: up(n, b)


def _more_per_replica(b: dict[str, Any], n: dict[str, Any]) -> bool | None:
    """A bigger batch on each of the same replicas (fewer replicas is another change)."""
    pb, pn = _per_replica(b), _per_replica(n)
    if pb is None or pn is None:
        return None
    return pn > pb and (b.get("replicas") or 1) == (n.get("replicas") or 1)


def _parallel_map(b: dict[str, Any], n: dict[str, Any]) -> bool | None:
    seq = _down("sequential_maps")(b, n)
    par = _up("parallel_maps")(b, n)
    if seq is None and par is None:
        return None
    return bool(seq) or bool(par)


# Inputs that have no worker pool: a generator, tf.data, arrays run in the training process
# (tf.data's own threads are no Python workers), so the configuration as it is says
# "one worker, no processes" even where it records neither field.
NO_POOL = ("generator", "tf.data", "array")


def _pool(cfg: dict[str, Any]) -> dict[str, Any]:
    """workers / use_multiprocessing as the run has them, filled in where its input kind
    has no worker pool."""
    if cfg.get("input_kind") not in NO_POOL:
        return cfg
    pool = {"workers": 1, "use_multiprocessing": False}
    return {**cfg, **{k: v for k, v in pool.items() if cfg.get(k) is None}}


def _workers(b: dict[str, Any], n: dict[str, Any]) -> bool | None:
    """More workers, or worker processes where there were none: a generator or a tf.data
    py_function replaced by a PyDataset with worker processes is that remedy applied."""
    b, n = _pool(b), _pool(n)
    more = _up("workers")(b, n)
    procs = _up("use_multiprocessing")(b, n)
    if more is None and procs is None:
        return None
    return bool(more) or bool(procs)


# (pattern over the remedy's title, fields it acts on, test). The first match decides.
REMEDIES: list[tuple[re.Pattern[str], tuple[str, ...], Any]] = [
    (re.compile(r"parallel.*map|map.*parallel"), ("parallel_maps",), _parallel_map),
    (re.compile(r"prefetch"), ("prefetch",), _up("prefetch")),
    (re.compile(r"worker"), ("workers", "use_multiprocessing", "input_kind"), _workers),
    (re.compile(r"\bcache\b"), ("cache",), _up("cache")),
    (re.compile(r"read the source in parallel|interleave"), ("interleave",), _up("interleave")),
    (re.compile(r"multiple of the replica"), ("global_batch",), _changed("global_batch")),
    (re.compile(r"ragged last batch"), ("drop_remainder",), _up("drop_remainder")),
    (
        re.compile(r"more work per|bigger batch|larger batch|batch more"),
        ("global_batch", "replicas"),
        _more_per_replica,
    ),
    (re.compile(r"fewer replicas|one replica|single device"), ("replicas",), _down("replicas")),
    (re.compile(r"steps per execution"), ("steps_per_execution",), _up("steps_per_execution")),
    (re.compile(r"\bxla\b|jit"), ("jit_compile",), _up("jit_compile")),
    (re.compile(r"precision|bfloat16|float16"), ("precision",), _changed("precision")),
]


def remedy_status(title: str, base: dict[str, Any], new: dict[str, Any]) -> tuple[str, str]:
    """("applied" | "not applied" | "unknown", why) for one remedy BASE's report suggested."""
    low = title.lower()
    for pattern, fields, test in REMEDIES:
        if not pattern.search(low):
            continue
        done = test(base, new)
        names = " or ".join(fields)
        if done is None:
            return "unknown", f"the runs did not both record {names}"
        changed = [str(c) for c in config_changes(_pool(base), _pool(new)) if c.field in fields]
        if done:
            return "applied", "; ".join(changed) or f"{names} changed"
        return "not applied", (
            f"{names}: " + ("; ".join(changed) if changed else "the same in both runs")
        )
    return "unknown", "the recorded configuration does not show whether it was done"
