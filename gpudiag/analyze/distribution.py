"""What a Keras ModelParallel run is, said beside the figures it changes. Pure.

A ``keras.distribution.ModelParallel`` splits the batch over the mesh's batch axis only and
shards the variables its ``LayoutMap`` names over the other axes: the replicas the lints
count are the batch axis, and a device's collectives are not only the gradient all-reduce
(sharded weights are gathered, partial results reduced). The recorder writes the mesh and
what is sharded into the RunConfig (``record/keras_distribution.py``); this turns them into
the report's caveat, including the common slip of a LayoutMap that matches no variable.

    note = model_parallel_note(config)     # None for any other run
"""

from __future__ import annotations

from gpudiag.trace.model.runconfig import RunConfig


def model_parallel_note(cfg: RunConfig) -> str | None:
    if cfg.strategy != "keras-model-parallel" or not cfg.mesh:
        return None
    note = (
        f"keras.distribution.ModelParallel on the mesh {cfg.mesh}: the batch splits "
        f"{cfg.replicas or 1} ways"
    )
    if cfg.sharded and cfg.sharded.startswith("none of"):
        return (
            f"{note}; its LayoutMap shards no variable ({cfg.sharded}): every device holds "
            "the whole model. Each key is a regular expression matched against the whole "
            "variable path (e.g. '.*/dense/kernel')"
        )
    if cfg.sharded:
        note += f"; sharded: {cfg.sharded}"
    return (
        f"{note}. Exposed sync holds the model-parallel collectives (gathering sharded "
        "weights, reducing partial results) as well as the gradient all-reduce"
    )
