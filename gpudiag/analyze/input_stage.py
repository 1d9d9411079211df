"""The tf.data stage where a starved step's input time goes, and the remedy aimed at it.

A TF profile names each stage (``Iterator::Model::Map::ParallelMapV2::Zip``) and the reader
keeps each stage's self time (``trace/tf/viewer/pipeline.py``). The stage with the most self time is
where the time goes; the remedy targets that stage (a sequential map elsewhere in the
pipeline is not where a 2-second wait comes from). Kinds, from the stage's last name:

* ``source``: reading records (TFRecord, TextLine, FixedLengthRecord, files): interleave and
  cache. ``python``: a Python source (``Generator``, ``py_function``/``numpy_function``):
  worker processes. ``map`` / ``map-sequential``, ``batch``, ``interleave``: parallelise it.
  ``cache``: the cache is being filled (the first epoch reads the source).
* ``device-iterator``: a ``Generator`` right under the root prefetch is TensorFlow's own
  multi-device iterator (MirroredStrategy), not user Python (``from_generator`` puts its
  Generator inside a ``FlatMap``).
* ``producer``: a ``Prefetch`` holds the time with nothing traced beneath it: it waits for a
  producer whose thread the profile did not trace. A ``Prefetch`` whose producer is traced is
  not ranked: its time is its wait for that producer. (A parallel map's or interleave's own
  time is its function's work, done in background threads: it stays theirs.)
  Keras wraps a Python generator or ``Sequence`` in ``prefetch(1)``, so a one-element
  prefetch with nothing traced beneath is read as Python input.

    stage = input_stage(timeline.pipeline)   # ("producer", "Iterator::…::Prefetch", 0.99) or None
"""

from __future__ import annotations

import re
from typing import Any

# a stage holds the input time when it has at least this share of all stages' self time:
# below, the time is spread and no single stage is "where it goes"
DOMINANT_SHARE = 0.5

KIND_TABLE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(?:Generator|PyFunc|EagerPyFunc|FromGenerator)"), "python"),
    (re.compile(r"^(?:TFRecord|TextLine|FixedLengthRecord|ListFiles|SSTable)"), "source"),
    (re.compile(r"^Map$"), "map-sequential"),
    # TF's fused map and batch runs in parallel unless its parallelism is 1 (the reader
    # then notes a sequential map: ``pipeline["sequential_map"]``)
    (re.compile(r"^(?:ParallelMap|MapAndBatch)"), "map"),
    (re.compile(r"^(?:Batch|BatchV2|PaddedBatch|PaddedBatchV2|ParallelBatch)$"), "batch"),
    (re.compile(r"^(?:Interleave|FlatMap)$"), "interleave-sequential"),
    (re.compile(r"^(?:ParallelInterleave|LegacyParallelInterleave)"), "interleave"),
    (re.compile(r"^(?:Cache|MemoryCache|CacheDataset)"), "cache"),
    (re.compile(r"^Prefetch$"), "producer"),
)


def stage_kind(stage: str) -> str:
    parent, _, last = stage.rpartition("::")
    kind = next((kind for pattern, kind in KIND_TABLE if pattern.match(last)), "other")
    if kind == "python" and last.startswith("Generator") and not _from_generator(parent):
        # TensorFlow's multi-device iterator (MirroredStrategy) feeds each replica through
        # a Generator dataset of its own, right under the root prefetch: no user Python
        return "device-iterator"
    return kind


def _from_generator(parent: str) -> bool:
    """``Dataset.from_generator`` builds its Generator inside a FlatMap (TF 2.x)."""
    return parent.rpartition("::")[2].startswith("FlatMap")


def input_stage(pipeline: dict[str, Any]) -> tuple[str, str, float] | None:
    """(kind, stage, its share of the stages' self time) of the stage holding most of the
    input time; None without stage times or when no stage holds most of it. A ``Prefetch``
    whose producer is traced (a stage beneath it has time) only waits for it: its own time
    is the producer's, counted there."""
    times = pipeline.get("stage_self_us")
    if not isinstance(times, dict) or not times:
        return None

    def traced_beneath(stage: str) -> bool:
        return any(s.startswith(stage + "::") for s in times)

    own = {
        s: float(us)
        for s, us in times.items()
        if not (stage_kind(s) == "producer" and traced_beneath(s))
    }
    total = sum(own.values())
    if total <= 0:
        return None
    stage, us = max(own.items(), key=lambda kv: kv[1])
    if us / total < DOMINANT_SHARE:
        return None
    kind = stage_kind(stage)  # a Prefetch ranked here has no traced producer beneath it
    if kind == "producer" and pipeline.get("py_function"):
        kind = "python"
    if kind == "map" and stage.endswith("MapAndBatch") and pipeline.get("sequential_map"):
        kind = "map-sequential"
    return kind, stage, us / total


# (kind) -> (title, detail, workers model): "cores" = spread over the host's cores,
# "processes" = Python moved to worker processes, "" = not estimated
STAGE_REMEDIES: dict[str, tuple[str, str, str]] = {
    "python": (
        "Run the Python input stage in worker processes",
        "The time goes to Python code producing the data ({stage}): it holds the GIL, so "
        "threads cannot spread it. Build batches in a keras.utils.PyDataset (Sequence) with "
        "workers=N, use_multiprocessing=True, or rewrite the step as TF ops.",
        "processes",
    ),
    "producer": (
        "Speed up the producer under the prefetch",
        "The step waits in {stage} for a producer this profile does not trace. With "
        "fit(generator or Sequence), that producer is your Python code on one thread: use a "
        "keras.utils.PyDataset/Sequence with workers=N, use_multiprocessing=True, or a "
        "tf.data pipeline of TF ops with map(num_parallel_calls=tf.data.AUTOTUNE) and "
        "prefetch(tf.data.AUTOTUNE).",
        "processes",
    ),
    "source": (
        "Read the source in parallel, and cache it",
        "The time goes to reading records ({stage}): ds.interleave(..., "
        "num_parallel_calls=tf.data.AUTOTUNE) over several files, and ds.cache() when the "
        "data fits in memory or on local disk.",
        "cores",
    ),
    "map-sequential": (
        "Parallelise the tf.data map",
        "The time goes to a sequential map ({stage}): ds.map(fn, "
        "num_parallel_calls=tf.data.AUTOTUNE) spreads it over the cores (TF ops run outside "
        "the GIL).",
        "cores",
    ),
    "map": (
        "Make the parallel map cheaper",
        "The time goes to a map that already runs in parallel ({stage}): batch before the "
        "map so it runs vectorised, cache what does not change before it, or move "
        "augmentation into the model (Keras preprocessing layers).",
        "",
    ),
    "batch": (
        "Batch in parallel, map after batching",
        "The time goes to batching ({stage}): ds.batch(n, num_parallel_calls="
        "tf.data.AUTOTUNE), and vectorised maps after the batch.",
        "cores",
    ),
    "interleave-sequential": (
        "Parallelise the interleave",
        "The time goes to a sequential interleave ({stage}): ds.interleave(..., "
        "num_parallel_calls=tf.data.AUTOTUNE, deterministic=False).",
        "cores",
    ),
    "device-iterator": (
        "Speed up the pipeline behind the replicas' iterator",
        "The step waits in TensorFlow's multi-device iterator ({stage}), which pulls every "
        "replica's batch from your tf.data pipeline: that pipeline is the bottleneck, not "
        "Python. Parallelise its maps (num_parallel_calls=tf.data.AUTOTUNE), cache what does "
        "not change, end it with prefetch(tf.data.AUTOTUNE).",
        "",
    ),
    "interleave": (
        "Read more files at once",
        "The time goes to a parallel interleave ({stage}): raise cycle_length, cache the "
        "records, or store fewer, larger files.",
        "",
    ),
}
