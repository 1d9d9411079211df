"""What the input pipeline and the model already do, read from the objects before the first
step: the facts of the run's ``RunConfig`` that the rules (``gpudiag.analyze.rules``) lint
and choose remedies against.

They look at the objects, not at timing, so they can warn before the first step — which
matters because TensorFlow itself may fail on step one (e.g. an AddN shape error when the
global batch does not divide by the replica count), and the user must already know why.

    facts = describe_input(dataset)          # tf.data chain, PyDataset, generator, ...
    config = run_config(facts, model, replicas=4, framework="tensorflow")
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gpudiag.record.host import available_cores
from gpudiag.trace.model.runconfig import RunConfig

FILE_SOURCES = ("TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset")


@dataclass
class InputFacts:
    """What the input pipeline is, as far as it can be told without running it."""

    kind: str = "unknown"  # tf.data | pydataset | generator | dataloader | array | unknown
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
    auto_prefetch: bool | None = None  # TF injects a root prefetch / Keras prefetches for us
    sample_bytes: int | None = None  # one element (features and labels) as copied to the GPU
    # what refills at each epoch's start (analyze/rules/epoch_start_wait.py)
    shuffle_buffer: int | None = None
    map_before_shuffle: bool = False  # a map runs per element into the buffer, uncached
    repeat_before_shuffle: bool = False  # the buffer never drains: filled once per fit
    float64: bool | None = None  # an input or label array of float64 (pandas' default)

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


def _auto_prefetch(ds: Any) -> bool | None:
    """TF appends a prefetch to the pipeline's root unless autotuning or the
    ``inject_prefetch`` optimisation is switched off."""
    try:
        opts = ds.options()
        autotune = opts.autotune.enabled is not False
        inject = opts.experimental_optimization.inject_prefetch is not False
        return bool(autotune and inject)
    except Exception:
        return None


def element_bytes(spec: Any, batched: bool) -> int | None:
    """Bytes of one sample of a dataset's ``element_spec`` (nested tuples, lists, dicts of
    TensorSpecs; the batch dimension left out when ``batched``). None when a dimension is
    unknown (ragged or variable-size elements) or a spec has no fixed-size dtype."""
    if isinstance(spec, dict):
        parts = list(spec.values())
    elif isinstance(spec, tuple | list):
        parts = list(spec)
    else:
        try:
            dims = list(spec.shape)[1 if batched else 0 :]
            size = int(spec.dtype.size)
        except (AttributeError, TypeError, ValueError):
            return None
        if any(d is None for d in dims) or size <= 0:
            return None
        n = size
        for d in dims:
            n *= int(d)
        return n
    total = 0
    for part in parts:
        b = element_bytes(part, batched)
        if b is None:
            return None
        total += b
    return total


def has_float64(spec: Any) -> bool | None:
    """Whether a nested structure of specs or arrays holds a float64 one (None: no dtype
    could be read)."""
    if isinstance(spec, dict):
        parts = list(spec.values())
    elif isinstance(spec, tuple | list):
        parts = list(spec)
    else:
        name = str(getattr(getattr(spec, "dtype", None), "name", getattr(spec, "dtype", "")))
        return (name == "float64") if name else None
    seen = [has_float64(p) for p in parts]
    return True if any(seen) else (False if any(s is False for s in seen) else None)


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
        elif name == "ShuffleDataset" and facts.shuffle_buffer is None:
            facts.shuffle_buffer = _int(getattr(node, "_buffer_size", None))
        node = getattr(node, "_input_dataset", None)
        depth += 1
    _shuffle_facts(facts)
    facts.auto_prefetch = _auto_prefetch(ds)
    facts.sample_bytes = element_bytes(ds.element_spec, batched=facts.batch_size is not None)
    facts.float64 = has_float64(ds.element_spec)
    ops = _graph_ops(ds)
    if ops & {"GeneratorDataset", "PyFunc", "EagerPyFunc", "PyFuncStateless"}:
        facts.python_source = True
    if not facts.file_source:
        facts.file_source = next((s for s in FILE_SOURCES if any(s in op for op in ops)), None)
    return facts


def _shuffle_facts(facts: InputFacts) -> None:
    """Stages under the (outermost) shuffle, walking inward from it: a map before any cache
    fills the buffer at every epoch's start; a repeat keeps it filled across epochs."""
    if "ShuffleDataset" not in facts.chain:
        return
    for name in facts.chain[facts.chain.index("ShuffleDataset") + 1 :]:
        if name.startswith("Cache"):
            return  # the buffer refills from the cache
        if name in ("MapDataset", "ParallelMapDataset"):
            facts.map_before_shuffle = True
        elif name == "RepeatDataset":
            facts.repeat_before_shuffle = True


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
    if inspect.isgenerator(data) or (
        hasattr(data, "__next__")
        and hasattr(data, "__iter__")
        and not hasattr(data, "element_spec")
    ):
        # Keras wraps a generator in its own prefetching iterator
        return InputFacts(kind="generator", python_source=True, workers=1, auto_prefetch=True)
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
        return InputFacts(
            kind="pydataset",
            python_source=True,
            batch_size=batch,
            workers=int(getattr(data, "workers", 1) or 1),
            use_multiprocessing=bool(getattr(data, "use_multiprocessing", False)),
            auto_prefetch=True,
        )
    if hasattr(data, "num_workers") and hasattr(data, "dataset"):  # torch.utils.data.DataLoader
        workers = int(getattr(data, "num_workers", 0) or 0)
        return InputFacts(
            kind="dataloader",
            batch_size=_int(getattr(data, "batch_size", None)),
            workers=workers,
            use_multiprocessing=workers > 0,
        )
    if hasattr(data, "shape"):
        return InputFacts(kind="array", samples=int(data.shape[0]) if data.shape else None)
    return InputFacts()


def _model_config(model: Any) -> dict[str, Any]:
    """Compile options Keras resolved: jit_compile, steps_per_execution, dtype policy."""
    out: dict[str, Any] = {}
    if model is None:
        return out
    for key, get in (
        ("jit_compile", lambda: model.jit_compile),
        ("run_eagerly", lambda: model.run_eagerly),
        ("steps_per_execution", lambda: model.steps_per_execution),
        ("precision", lambda: model.dtype_policy.name),
        # a mixed_float16 model's LossScaleOptimizer wraps the one whose slots count
        ("optimizer", lambda: _optimizer_name(model)),
    ):
        try:
            value = get()
        except Exception:
            continue
        if isinstance(value, bool | int | str) and value != "auto":
            out[key] = value
    return out


def _optimizer_name(model: Any) -> str:
    """The optimizer's class name; under mixed_float16 the one LossScaleOptimizer wraps."""
    opt = model.optimizer
    return str(type(getattr(opt, "inner_optimizer", opt)).__name__)


def model_facts(model: Any) -> tuple[int | None, bool]:
    """The model's parameter count (None: unknown) and whether it has BatchNormalization."""
    if model is None:
        return None, False
    params: int | None = None
    has_bn = False
    with contextlib.suppress(Exception):
        params = int(model.count_params())
    with contextlib.suppress(Exception):
        has_bn = any(
            "BatchNormalization" in type(layer).__name__
            for layer in model._flatten_layers(include_self=False)
        )
    return params, has_bn


def run_config(
    facts: InputFacts,
    model: Any = None,
    replicas: int = 1,
    framework: str | None = None,
    params: int | None = None,
    batchnorm: bool | None = None,
    batch_size: int | None = None,
) -> RunConfig:
    """The run's configuration from the input facts and the (compiled) model."""
    cfg = RunConfig(
        framework=framework,
        training=True,
        params=params,
        batchnorm=batchnorm,
        input_kind=facts.kind,
        replicas=replicas,
        cores=available_cores(),
        global_batch=facts.batch_size or batch_size,
        sample_bytes=facts.sample_bytes,
        samples=facts.samples,
        drop_remainder=facts.drop_remainder,
        file_source=facts.file_source,
        workers=facts.workers,
        use_multiprocessing=facts.use_multiprocessing,
        root_prefetch=facts.auto_prefetch,
        python_ops=facts.python_source or None,
        input_float64=facts.float64,
    )
    if facts.kind == "tf.data":
        cfg.prefetch = facts.prefetch
        cfg.sequential_maps = facts.sequential_maps
        cfg.parallel_maps = facts.parallel_maps
        cfg.cache = facts.cache
        cfg.interleave = facts.interleave
        cfg.shuffle_buffer = facts.shuffle_buffer
        cfg.map_before_shuffle = facts.map_before_shuffle
        cfg.repeat_before_shuffle = facts.repeat_before_shuffle
        cfg.python_ops = facts.python_source
    cfg.update(_model_config(model))
    return cfg
