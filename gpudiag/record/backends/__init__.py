"""What differs per Keras backend while recording, chosen once when training begins.

One small adapter per backend (``tensorflow.py``, ``jax.py``, ``torch.py``) answers the same
questions: how to start and stop its profiler, how to mark a step so the profile can be
matched to the callback's steps, how to decode what the profiler wrote, which replicas train
the model, and which worker of which run this process is. Any other backend (numpy,
openvino) gets the base class: no profiler window, one replica, ranks from the launcher's
variables only.

    backend = for_name(keras.backend.backend())
    replicas, devices = backend.replicas(model)
    info = backend.rank_info(model)
    session = backend.start_profiler(logdir)      # None: this backend has no profiler
"""

from __future__ import annotations

from gpudiag.record.backends.base import STEP_MARKER, ProfilerSession, RecordBackend

__all__ = ["STEP_MARKER", "ProfilerSession", "RecordBackend", "for_name"]


def for_name(name: str) -> RecordBackend:
    """The adapter of a Keras backend name (``keras.backend.backend()``)."""
    from gpudiag.record.backends.jax import JaxBackend
    from gpudiag.record.backends.tensorflow import TensorFlowBackend
    from gpudiag.record.backends.torch import TorchBackend

    table: dict[str, type[RecordBackend]] = {
        "tensorflow": TensorFlowBackend,
        "jax": JaxBackend,
        "torch": TorchBackend,
    }
    backend = table.get(name, RecordBackend)()
    backend.name = name
    return backend
