"""The input ``fit`` was given, read from fit's own data adapter while fit runs.

Keras 3 gives callbacks ``params`` = {verbose, epochs, steps}: neither the batch size nor
the number of samples. Its trainers (TensorFlow, JAX, torch) hold both in the local
``epoch_iterator`` of ``fit``, whose ``data_adapter`` knows them: arrays (samples, batch
size, the short last batch), a PyDataset (its length), a tf.data dataset (its
cardinality), a generator, a DataLoader. A callback's hooks run inside ``fit`` (and the
first-batch watch of ``keras_distribution.py`` inside fit's first batch), so that frame is
on the stack: it is looked up there, read-only. Anything unexpected gives None, and the
lints go on with what ``dataset=`` told.

    facts = fit_input_facts(replicas=2)    # InputFacts, None outside fit
    fit = fit_locals()                     # fit's locals: "self" (the model), "callbacks"
"""

from __future__ import annotations

import contextlib
import sys
import types
from typing import Any

from gpudiag.record.run_facts import InputFacts, describe_input, global_rng_untouched

MAX_DEPTH = 40  # frames between a hook and fit (CallbackList, Keras's wrappers): about 5


def fit_locals() -> dict[str, Any] | None:
    """The locals of the ``fit`` running this thread (None when none is on the stack)."""
    with contextlib.suppress(Exception):
        frame: types.FrameType | None = sys._getframe(1)
        for _ in range(MAX_DEPTH):
            if frame is None:
                return None
            if frame.f_code.co_name == "fit":
                local = frame.f_locals
                if hasattr(local.get("epoch_iterator"), "data_adapter"):
                    return dict(local)
            frame = frame.f_back
    return None


def fit_input_facts(replicas: int = 1) -> InputFacts | None:
    """What the running fit was given, from its data adapter. With several replicas a
    PyDataset's last batch is fetched for its size (the short last batch they split)."""
    fit = fit_locals()
    if fit is None:
        return None
    with contextlib.suppress(Exception):
        return describe_adapter(fit["epoch_iterator"].data_adapter, replicas)
    return None


def describe_adapter(adapter: Any, replicas: int = 1) -> InputFacts | None:
    """The facts of one Keras data adapter (None for adapters not known here)."""
    name = type(adapter).__name__
    if name == "ArrayDataAdapter":
        return _arrays(adapter)
    if name == "PyDatasetAdapter":
        return _py_dataset(adapter.py_dataset, replicas)
    if name == "TFDatasetAdapter":
        return describe_input(adapter._dataset)
    if name == "TorchDataLoaderAdapter":
        return describe_input(adapter._dataloader)
    if name == "GeneratorDataAdapter":
        return InputFacts(kind="generator", python_source=True, workers=1, auto_prefetch=True)
    return None


def _arrays(adapter: Any) -> InputFacts:
    """Arrays: Keras slices each batch and never drops the short last one."""
    batch = int(adapter.batch_size)
    batches = int(adapter.num_batches)
    partial = int(adapter.partial_batch_size or 0) if adapter.has_partial_batch else 0
    samples = (batches - 1) * batch + partial if partial else batches * batch
    return InputFacts(
        kind="array",
        batch_size=batch,
        samples=samples,
        drop_remainder=False,
        sample_bytes=_row_bytes(getattr(adapter, "_inputs", None)),
        float64=_float64(getattr(adapter, "_inputs", None)),
        # TensorFlow's fit turns arrays into tf.data ending in prefetch(AUTOTUNE)
        # (ArrayDataAdapter.get_tf_dataset); JAX and torch slice them on the training thread
        auto_prefetch=True if _backend() == "tensorflow" else None,
    )


def _backend() -> str:
    with contextlib.suppress(Exception):
        import keras

        return str(keras.backend.backend())
    return ""


def _row_bytes(inputs: Any) -> int | None:
    """Bytes of one sample over the arrays (features, labels, weights) fit slices."""
    with contextlib.suppress(Exception):
        import numpy as np
        from keras import tree

        total = 0
        for leaf in tree.flatten(inputs):
            if leaf is None:
                continue
            shape = tuple(leaf.shape)
            total += int(np.prod(shape[1:], dtype=np.int64)) * int(np.dtype(leaf.dtype).itemsize)
        return total or None
    return None


def _float64(inputs: Any) -> bool | None:
    """Whether fit was given a float64 array (or DataFrame column): Keras 3 casts it to
    floatx once per fit call, a copy of the whole array (array_slicing.py)."""
    with contextlib.suppress(Exception):
        from keras import tree

        for leaf in tree.flatten(inputs):
            dtypes = getattr(leaf, "dtypes", None)  # a DataFrame: one per column
            kinds = list(dtypes) if dtypes is not None else [getattr(leaf, "dtype", None)]
            if any(str(k) == "float64" for k in kinds):
                return True
        return False
    return None


def _py_dataset(data: Any, replicas: int) -> InputFacts:
    """A PyDataset. Where replicas split its batches, its first and last batch are fetched
    once (``__getitem__`` is user code, and may be slow: only where the multi-replica lints
    need the batch and the sample count); else only what it says without a fetch."""
    if replicas <= 1:
        return InputFacts(
            kind="pydataset",
            python_source=True,
            workers=int(getattr(data, "workers", 1) or 1),
            use_multiprocessing=bool(getattr(data, "use_multiprocessing", False)),
            auto_prefetch=True,
        )
    facts = describe_input(data)
    if not facts.batch_size:
        return facts
    with contextlib.suppress(Exception):
        from keras import tree

        n = len(data)
        with global_rng_untouched():  # a user's __getitem__ may draw from np.random
            last = data[n - 1]
        rows = int(tree.flatten(last)[0].shape[0])
        facts.samples = (n - 1) * facts.batch_size + rows
        facts.drop_remainder = False  # fit trains on every batch the PyDataset gives
    return facts


FILLED = ("batch_size", "samples", "drop_remainder", "sample_bytes", "float64")


def given_input(dataset: Any, replicas: int = 1) -> InputFacts:
    """The input facts the lints judge: ``dataset=`` where the user gave it (its pipeline
    stages), with what only fit's adapter knows filled in; else fit's adapter alone."""
    fitted = fit_input_facts(replicas)
    if dataset is None:
        return fitted or InputFacts()
    facts = describe_input(dataset)
    if fitted is not None and fitted.kind == facts.kind:
        for name in FILLED:
            if getattr(facts, name) is None:
                setattr(facts, name, getattr(fitted, name))
    return facts
