"""Static pipeline and multi-replica lints, run the moment training begins.

They look at the objects, not at timing, so they can warn before the first step — which
matters because TensorFlow itself may fail on step one (e.g. an AddN shape error when the
global batch does not divide by the replica count), and the user must already know why.

    facts = describe_input(dataset)          # tf.data chain, PyDataset, generator, ...
    findings = lint(facts, replicas=4, params=12_000, has_batchnorm=True)
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gpudiag.trace.timeline import RecordedFinding

SMALL_MODEL_PARAMS = 1_000_000  # below this, one replica's compute cannot hide an all-reduce
SMALL_PER_REPLICA_BATCH = 16  # per-replica batches this small starve each device
FILE_SOURCES = ("TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset")


@dataclass
class InputFacts:
    """What the input pipeline is, as far as it can be told without running it."""

    kind: str = "unknown"  # tf.data | pydataset | generator | array | unknown
    chain: list[str] = field(default_factory=list)  # tf.data stages, outermost first
    batch_size: int | None = None
    drop_remainder: bool | None = None
    samples: int | None = None  # before batching, when finite and known
    sequential_maps: int = 0
    parallel_maps: int = 0
    prefetch: bool = False
    cache: bool = False
    python_source: bool = False  # generator / py_function inside tf.data
    file_source: str | None = None
    interleave: bool = False
    workers: int | None = None
    use_multiprocessing: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, [], False, 0)}


def _int(x: Any) -> int | None:
    try:
        return int(x.numpy()) if hasattr(x, "numpy") else int(x)
    except (TypeError, ValueError, AttributeError):
        return None


def _graph_ops(ds: Any) -> set[str]:
    """Op types in the dataset's graph and its functions (GeneratorDataset, PyFunc, ...)."""
    try:
        import tensorflow as tf

        graph = tf.compat.v1.GraphDef()
        graph.ParseFromString(ds._as_serialized_graph().numpy())
        ops = {n.op for n in graph.node}
        for fn in graph.library.function:
            ops.update(n.op for n in fn.node_def)
        return ops
    except Exception:
        return set()


def describe_tf_dataset(ds: Any) -> InputFacts:
    facts = InputFacts(kind="tf.data")
    node = ds
    depth = 0
    while node is not None and depth < 64:
        name = type(node).__name__.lstrip("_")
        facts.chain.append(name)
        if name in ("BatchDataset", "PaddedBatchDataset", "ParallelBatchDataset") and (
            facts.batch_size is None
        ):
            facts.batch_size = _int(getattr(node, "_batch_size", None))
            dr = getattr(node, "_drop_remainder", None)
            facts.drop_remainder = bool(_int(dr)) if dr is not None else None
            inner = getattr(node, "_input_dataset", None)
            if inner is not None:
                n = _int(inner.cardinality())
                facts.samples = n if n is not None and n >= 0 else None
        elif name == "MapDataset":
            facts.sequential_maps += 1
        elif name == "ParallelMapDataset":
            facts.parallel_maps += 1
        elif name == "PrefetchDataset":
            facts.prefetch = True
        elif name.startswith("Cache"):
            facts.cache = True
        elif "Interleave" in name:
            facts.interleave = True
        elif any(src in name for src in FILE_SOURCES):
            facts.file_source = name
        node = getattr(node, "_input_dataset", None)
        depth += 1
    ops = _graph_ops(ds)
    if ops & {"GeneratorDataset", "PyFunc", "EagerPyFunc", "PyFuncStateless"}:
        facts.python_source = True
    if not facts.file_source:
        facts.file_source = next((s for s in FILE_SOURCES if any(s in op for op in ops)), None)
    return facts


@contextlib.contextmanager
def global_rng_untouched() -> Iterator[None]:
    """Run user code (a PyDataset's ``__getitem__``) without changing the global NumPy and
    ``random`` states the user's training draws from."""
    import random

    import numpy as np

    np_state, py_state = np.random.get_state(), random.getstate()
    try:
        yield
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)


def describe_input(data: Any) -> InputFacts:
    """Facts about whatever the user passes to ``fit`` (or to ``DiagnoseCallback(dataset=)``)."""
    if data is None:
        return InputFacts()
    if inspect.isgenerator(data) or (hasattr(data, "__next__") and hasattr(data, "__iter__")
                                     and not hasattr(data, "element_spec")):
        return InputFacts(kind="generator", python_source=True, workers=1)
    if hasattr(data, "element_spec") and hasattr(data, "_variant_tensor"):
        return describe_tf_dataset(data)
    if hasattr(data, "__getitem__") and hasattr(data, "use_multiprocessing"):
        # keras.utils.PyDataset (or legacy Sequence)
        batch = None
        try:
            with global_rng_untouched():  # a user's __getitem__ may draw from np.random
                first = data[0]
            x = first[0] if isinstance(first, tuple | list) else first
            batch = len(x) if hasattr(x, "__len__") else None
        except Exception:
            batch = None
        return InputFacts(kind="pydataset", python_source=True, batch_size=batch,
                          workers=int(getattr(data, "workers", 1) or 1),
                          use_multiprocessing=bool(getattr(data, "use_multiprocessing", False)))
    if hasattr(data, "shape"):
        return InputFacts(kind="array", samples=int(data.shape[0]) if data.shape else None)
    return InputFacts()


def lint(
    facts: InputFacts,
    replicas: int = 1,
    params: int | None = None,
    has_batchnorm: bool = False,
    batch_size: int | None = None,
) -> list[RecordedFinding]:
    """Findings that follow from the objects alone."""
    out: list[RecordedFinding] = []
    batch = facts.batch_size or batch_size
    if facts.sequential_maps:
        out.append(RecordedFinding(
            "sequential-map", "moderate",
            f"{facts.sequential_maps} tf.data map(s) without num_parallel_calls",
            {"sequential_maps": facts.sequential_maps, "parallel_maps": facts.parallel_maps,
             "chain": " <- ".join(facts.chain)},
            "ds.map(fn, num_parallel_calls=tf.data.AUTOTUNE)"))
    if facts.kind == "tf.data" and not facts.prefetch:
        costly = facts.sequential_maps + facts.parallel_maps > 0 or facts.python_source
        out.append(RecordedFinding(
            "no-prefetch", "moderate" if costly else "info",
            "Input pipeline does not end with prefetch",
            {"chain": " <- ".join(facts.chain)},
            "ds = ds.prefetch(tf.data.AUTOTUNE) as the last stage"))
    if facts.python_source:
        single = facts.kind != "pydataset" or (facts.workers or 1) <= 1 or not (
            facts.use_multiprocessing)
        if single:
            out.append(RecordedFinding(
                "python-generator", "moderate",
                {"generator": "Input comes from a Python generator (one thread, holds the GIL)",
                 "pydataset": "PyDataset without worker processes (runs under the GIL)",
                 }.get(facts.kind, "Python code inside tf.data (from_generator / py_function)"),
                {"kind": facts.kind, "workers": facts.workers or 1,
                 "use_multiprocessing": bool(facts.use_multiprocessing)},
                "keras.utils.PyDataset(workers=N, use_multiprocessing=True) or tf.data ops"))
    if facts.file_source and not facts.cache and not facts.interleave:
        out.append(RecordedFinding(
            "slow-source", "info", f"{facts.file_source} read sequentially, not cached",
            {"source": facts.file_source},
            "ds.interleave(..., num_parallel_calls=AUTOTUNE) over files; ds.cache()"))
    if replicas > 1 and batch:
        if batch % replicas:
            out.append(RecordedFinding(
                "batch-not-multiple-of-replicas", "high",
                f"Global batch {batch} does not divide by {replicas} replicas",
                {"global_batch": batch, "replicas": replicas,
                 "remainder": batch % replicas},
                f"Use a global batch of {max(replicas, batch // replicas * replicas)} or "
                f"{(batch // replicas + 1) * replicas} (per-replica batch × {replicas}); "
                "TensorFlow may fail on the first step with a shape error otherwise"))
        if facts.samples and facts.samples % batch and facts.drop_remainder is False:
            last = facts.samples % batch
            per_replica = last / replicas
            out.append(RecordedFinding(
                "partial-last-batch", "high" if has_batchnorm else "moderate",
                f"Last batch has {last} samples ({per_replica:.1f} per replica)"
                + (" and the model has BatchNormalization" if has_batchnorm else ""),
                {"samples": facts.samples, "global_batch": batch, "last_batch": last,
                 "replicas": replicas, "batchnorm": has_batchnorm},
                "ds.batch(global_batch, drop_remainder=True)"))
        per_replica_batch = batch / replicas
        small_params = params is not None and params < SMALL_MODEL_PARAMS
        if small_params or per_replica_batch < SMALL_PER_REPLICA_BATCH:
            out.append(RecordedFinding(
                "small-model-multi-gpu", "moderate",
                f"{replicas} replicas for {params or '?'} parameters at "
                f"{per_replica_batch:g} samples per replica",
                {"replicas": replicas, "params": params,
                 "per_replica_batch": round(per_replica_batch, 2)},
                "Fewer replicas, or a larger per-replica batch"))
    return out
