"""What a fit already does, read before its first step: the ``RunConfig`` the
findings are judged on and the remedies checked against.

The input given to fit (``record/fit_input.py``), the model's facts and compile options
(``record/run_facts.py``, ``record/model_facts.py``), the runtime's settings
(``record/runtime_facts.py``), what the Keras generation reads its own way
(``record/generation.py``), and what the backend says of the distribution: its strategy
and, on JAX, the mesh.

    config, facts, params = fit_config(model, dataset, replicas, gen, batch_rows)
"""

from __future__ import annotations

import contextlib
from typing import Any

from gpudiag.record.fit_input import given_input
from gpudiag.record.generation import Keras3
from gpudiag.record.model_facts import model_run_facts
from gpudiag.record.run_facts import InputFacts, model_facts, run_config
from gpudiag.record.runtime_facts import runtime_facts
from gpudiag.trace.model.runconfig import RunConfig


def fit_config(
    model: Any, dataset: Any, replicas: int, gen: Keras3, batch_rows: int | None = None
) -> tuple[RunConfig, InputFacts, int | None]:
    """The fit's configuration, the input facts and the model's parameter count.
    ``batch_rows``: the first batch's rows where fit's input does not say its batch."""
    facts = given_input(dataset, replicas)
    params, has_bn = model_facts(model)
    config = run_config(
        facts,
        model,
        replicas=replicas,
        framework=gen.backend().name,
        params=params,
        batchnorm=has_bn,
        batch_size=batch_rows,
    )
    config.update(gen.config_fields(model))
    config.update(model_run_facts(model))  # optimizer, embeddings, RNN layers off cuDNN
    config.update(runtime_facts(config.framework))  # threads, determinism, GPUs listed
    # the facts remedies are checked against (analyze/needs.py): Keras drives this loop
    config.api, config.keras_version = "keras", gen.version
    with contextlib.suppress(Exception):
        backend = gen.backend()
        config.strategy = backend.strategy(model)
        config.update(backend.layout(model))
    return config, facts, params
