"""Keras's own multi-device API (``keras.distribution``: DataParallel and ModelParallel, on
the JAX backend): how many ways the batch splits, the device mesh, and what a
ModelParallel shards; and a watch on the first batch Keras lays out on the devices.

The batch splits over the mesh's batch axis only (``batch_dim_name``): a DataParallel over
4 devices splits it 4 ways, a ModelParallel on a (2, 2) mesh of ("batch", "model") 2 ways,
its variables sharded over "model". Those are the replicas the lints count (per process,
where several processes each give ``fit`` their own batch).

Why a watch: on the JAX backend ``fit`` builds the model from its first batch
(``Trainer._symbolic_build``) and shards that batch over the devices before any callback
hook runs, so a global batch the devices cannot split fails (``IndivisibleError``) where
``on_train_begin`` would have been too late. Keras asks the distribution for that batch's
layout (``get_data_layout(shape)``) just before; the watch hears the shape there and
lets the callback speak first. It wraps that one method of the user's distribution object
(an instance attribute, removed when fit's first hook comes), and returns Keras's own
layout unchanged: it never alters what Keras does, and a fault in it is swallowed.

    facts = mesh_facts(keras.distribution.distribution(), model)
    facts.replicas, facts.config()          # {"mesh": "batch=2 × model=2", "sharded": ...}
    watch = FirstBatchWatch.install(on_batch=lambda rows: ...)   # None without a distribution
    watch.remove()
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

KERAS_DISTRIBUTIONS = {
    "DataParallel": "keras-data-parallel",
    "ModelParallel": "keras-model-parallel",
}
MAX_NAMED = 4  # sharded variables named in the description (then "and N more")


@dataclass
class MeshFacts:
    """What a keras.distribution does with the devices and the model."""

    strategy: str
    devices: list[str] = field(default_factory=list)
    axes: dict[str, int] = field(default_factory=dict)  # mesh axis -> size, in order
    batch_axis: str = "batch"
    sharded: str | None = None  # ModelParallel: which variables are split, over which axes
    processes: int = 1  # multi-process JAX: each process feeds its own part of the batch

    @property
    def replicas(self) -> int:
        """Ways the batch ``fit`` is given splits: the size of the mesh's batch axis, or
        its share per process where several processes each feed their own batch (Keras
        gives each process's batch to ``jax.make_array_from_process_local_data``)."""
        ways = self.axes.get(self.batch_axis) or max(1, len(self.devices))
        if self.processes > 1 and ways % self.processes == 0:
            return max(1, ways // self.processes)
        return ways

    @property
    def mesh(self) -> str:
        return " × ".join(f"{axis}={size}" for axis, size in self.axes.items())

    def config(self) -> dict[str, str]:
        """The RunConfig fields this adds (``mesh``, ``sharded``)."""
        out = {"mesh": self.mesh} if self.axes else {}
        if self.sharded:
            out["sharded"] = self.sharded
        return out


def current() -> Any:
    """The distribution Keras trains under now (None: none set, or no keras.distribution)."""
    with contextlib.suppress(Exception):
        import keras

        return keras.distribution.distribution()
    return None


def mesh_facts(dist: Any, model: Any = None) -> MeshFacts | None:
    """The facts of ``dist`` (None when there is none, or it cannot be read)."""
    if dist is None:
        return None
    try:
        mesh = dist.device_mesh
        devices = [str(d) for d in mesh.devices.flatten()]
        axes = {str(a): int(s) for a, s in zip(mesh.axis_names, mesh.shape, strict=True)}
        batch_axis = str(getattr(dist, "batch_dim_name", None) or next(iter(axes), "batch"))
    except Exception:
        return None
    name = type(dist).__name__
    facts = MeshFacts(KERAS_DISTRIBUTIONS.get(name, name), devices, axes, batch_axis)
    with contextlib.suppress(Exception):
        facts.processes = max(1, int(dist.num_processes))
    if name != "DataParallel":
        with contextlib.suppress(Exception):
            facts.sharded = _sharded(model)
    return facts


def _spec(variable: Any) -> tuple[Any, ...]:
    """The partition spec of a variable's value as placed (a JAX NamedSharding's)."""
    sharding = getattr(getattr(variable, "value", None), "sharding", None)
    return tuple(getattr(sharding, "spec", ()) or ())


def _sharded(model: Any) -> str | None:
    """Which of the model's variables are split over a mesh axis, as they are placed."""
    if model is None:
        return None
    variables = list(model.variables)
    split = [(v, [a for a in _spec(v) if a is not None]) for v in variables]
    split = [(v, axes) for v, axes in split if axes]
    if not variables:
        return None
    if not split:
        return f"none of {len(variables)} variables (all replicated)"
    total = sum(_size(v) for v in variables) or 1
    part = sum(_size(v) for v, _ in split)
    axes = sorted({str(a) for _, spec in split for a in spec})
    named = ", ".join(str(getattr(v, "path", v.name)) for v, _ in split[:MAX_NAMED])
    more = f" and {len(split) - MAX_NAMED} more" if len(split) > MAX_NAMED else ""
    return (
        f"{len(split)} of {len(variables)} variables ({part / total:.0%} of the parameters) "
        f"over {', '.join(repr(a) for a in axes)}: {named}{more}"
    )


def _size(variable: Any) -> int:
    n = 1
    for d in getattr(variable, "shape", ()):
        n *= int(d or 1)
    return n


class FirstBatchWatch:
    """Tells ``on_batch(rows)`` the leading dimension of the first array Keras lays out on
    the devices in each fit (fit's epoch iterator tells fits apart), until removed."""

    def __init__(self, dist: Any, on_batch: Callable[[int], None]) -> None:
        self.dist = dist
        self.on_batch = on_batch
        self.heard: weakref.ref[Any] | None = None  # the last fit heard (its epoch iterator)
        original = dist.get_data_layout
        watch = self

        def get_data_layout(data_shape: Any) -> Any:
            with contextlib.suppress(Exception):
                watch._hear(data_shape)
            return original(data_shape)

        self.wrapper = get_data_layout
        dist.get_data_layout = get_data_layout

    @classmethod
    def install(cls, on_batch: Callable[[int], None]) -> FirstBatchWatch | None:
        dist = current()
        if dist is None or not callable(getattr(dist, "get_data_layout", None)):
            return None
        try:
            return cls(dist, on_batch)
        except Exception:
            return None

    def _hear(self, data_shape: Any) -> None:
        from gpudiag.record.fit_input import fit_locals

        fit = fit_locals()
        it = fit.get("epoch_iterator") if fit is not None else None
        if it is None or not data_shape or (self.heard is not None and self.heard() is it):
            return
        self.heard = weakref.ref(it)  # not the iterator itself: it holds the user's data
        self.on_batch(int(data_shape[0]))

    def remove(self) -> None:
        """Give the distribution its own method back (idempotent)."""
        with contextlib.suppress(Exception):
            if vars(self.dist).get("get_data_layout") is self.wrapper:
                del self.dist.get_data_layout
