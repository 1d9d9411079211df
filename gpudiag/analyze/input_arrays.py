"""Arrays given to ``fit``: Keras slices each batch and converts it on the training thread
(the JAX and torch backends; TensorFlow's wraps them in tf.data with its own prefetch). There
is no pipeline to tune and nothing for ``dataset=`` to show: the remedies are a pipeline that
prepares the next batch during the step, and a bigger batch where slicing and dispatch are
most of the step. Pure; the input plan (``input_plan.py``) asks here for arrays.

    sugs = array_remedies(situation, "input-wait")
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Suggestion
from gpudiag.analyze.evidence import Situation
from gpudiag.analyze.gain import Gain, at_most, batch_scaled, removed
from gpudiag.analyze.needs import Needs, OneOf

# arrays are sliced by Keras's fit; a training batch carries its learning rate
NEEDS = {
    "array-pipeline": Needs(requires={"keras": OneOf(True)}),
    "bigger-batch": Needs(requires={"training": OneOf(True)}),
}

# the pipeline a user passes instead, per backend
_ARRAY_PIPELINE = {
    "jax": "tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x)).batch(B)"
    ".prefetch(tf.data.AUTOTUNE), which fit iterates on the JAX backend too (needs "
    "TensorFlow installed), or a grain DataLoader with worker processes",
    "torch": "torch.utils.data.DataLoader(TensorDataset(x, y), batch_size=B, shuffle=True, "
    "num_workers=2, pin_memory=True)",
    "tensorflow": "tf.data.Dataset.from_tensor_slices((x, y)).shuffle(len(x)).batch(B)"
    ".prefetch(tf.data.AUTOTUNE)",
}


# A bigger batch over arrays: slicing and dispatch are paid per step. Measured on an H100
# (Keras 3 on JAX, 32->64->1 MLP at batch 32): a 4x batch gave 4.61x and 3.95x samples/s (two
# sessions) where the
# per-step share (input + host) was 99%, more than the 3.9x of amortising it alone, since a
# larger contiguous slice also costs less per sample; the high end claims the factor itself.
ARRAY_BATCH_FACTOR = 4
ARRAY_SLICE_BONUS = 1.25  # the high end: per-sample slicing cost falls too (4.61x for 4x)


def array_remedies(s: Situation, finding: str) -> list[Suggestion]:
    """NumPy arrays given to fit: no pipeline to tune, and nothing for dataset= to show.
    Prefetching overlaps the slicing with compute: the step becomes the longer of the two;
    where the step is nearly all slicing and dispatch, a bigger batch amortises them."""
    return _array_prefetch(s, finding) + _array_batch(s, finding)


def _array_batch(s: Situation, finding: str) -> list[Suggestion]:
    fixed = s.shares["input"] + s.shares["other"]
    k = ARRAY_BATCH_FACTOR
    g = Gain.of(
        batch_scaled(fixed, k),
        batch_scaled(fixed / 2, k),
        k * ARRAY_SLICE_BONUS,
        f"slicing and dispatch {fixed:.0%} of a step, paid once per {k}× the samples "
        "(per sample; memory for the bigger batch not checked)",
    )
    batch = s.config.per_replica_batch
    size = f"batch_size={int(batch) * k}" if batch else f"a {k}× batch_size"
    return [
        g.suggestion(
            f"Train with a {k}× bigger batch",
            f"fit({size}) (scale the learning rate with it): Keras pays the slicing and the "
            "step's dispatch once per batch, whatever its size.",
            finding,
            "bigger-batch",
            batch_factor=k,
        )
    ]


def _array_prefetch(s: Situation, finding: str) -> list[Suggestion]:
    if s.config.root_prefetch:
        return []  # fit's own pipeline prefetches (TensorFlow's Keras makes tf.data of arrays)
    inp = s.shares["input"]
    overlap = min(inp, 1.0 - inp)
    g = at_most(
        overlap,
        f"not measured: slicing overlapped with compute is worth up to {removed(overlap):.2f}× "
        f"(input wait {inp:.0%} of the step), less where it competes with the step for the CPU",
    )
    fw = s.config.framework or "tensorflow"
    pipeline = _ARRAY_PIPELINE.get(fw, _ARRAY_PIPELINE["tensorflow"])
    return [
        g.suggestion(
            "Feed the arrays through a prefetching pipeline",
            "fit was given in-memory arrays: Keras slices each batch and converts it on the "
            f"training thread while the device waits. Pass a pipeline that prepares the next "
            f"batch during the step instead: {pipeline}.",
            finding,
            "array-pipeline",
        )
    ]
