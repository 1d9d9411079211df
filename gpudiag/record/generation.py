"""What differs between Keras generations while recording, chosen once from the model fit.

Keras 3 (the ``keras`` package, 3.x, on any backend) and Keras 2 (``tf_keras``: the
``tf.keras`` of TensorFlow 2.16+ under ``TF_USE_LEGACY_KERAS=1``, or ``import tf_keras``;
and the ``keras`` 2.x package, the ``tf.keras`` of TensorFlow up to 2.15) call the same
callback hooks in the same order. They differ in a few things the recorder reads, answered
here by one adapter per generation, as ``record/backends/`` answers per backend:

    gen = generation_of(model)             # from the package the model's class comes from
    gen.problem(model)                     # None, or one line: why this fit is not recorded
    backend = gen.backend()                # Keras 2: TensorFlow, whose fit marks steps itself
    gen.config_fields(model)               # RunConfig fields read this generation's way
    gen.steps_per_execution(model)         # batches per train-function call
    gen.header()                           # {"keras": "2.21.0", "keras_package": "tf_keras"}

The callback itself speaks both callback protocols: Keras 3's hooks from its base class,
and what Keras 2's ``CallbackList`` asks beyond them from ``Keras2Hooks``.
"""

from __future__ import annotations

import sys
from typing import Any

from gpudiag.record.backends import RecordBackend, for_name

KERAS_PACKAGES = ("keras", "tf_keras")


class Keras2Hooks:
    """What Keras 2's ``CallbackList`` asks of a callback besides its hooks
    (``tf_keras/src/callbacks.py``). Keras 3 reads none of these names.

    ``_supports_tf_logs``: the hooks never read their logs, so Keras 2 need not convert
    them to numbers on the training thread each batch (that conversion waits for the
    device). Only train batches are hooked: Keras 2 then calls no hook per evaluation or
    prediction batch.
    """

    _supports_tf_logs = True

    def __init__(self) -> None:
        super().__init__()
        self._supports_tf_logs = True  # Keras 2's own Callback.__init__ sets it False

    def _implements_train_batch_hooks(self) -> bool:
        return True

    def _implements_test_batch_hooks(self) -> bool:
        return False

    def _implements_predict_batch_hooks(self) -> bool:
        return False


class Keras3:
    """Keras 3: the backend ``keras.backend.backend()`` names, options as Keras reports them."""

    name = "keras3"

    def __init__(self, package: Any = None) -> None:
        self.package = package if package is not None else sys.modules.get("keras")

    @property
    def version(self) -> str:
        return str(getattr(self.package, "__version__", ""))

    def backend(self) -> RecordBackend:
        import keras

        return for_name(keras.backend.backend())

    def problem(self, model: Any) -> str | None:
        """Why this fit cannot be recorded (one line), or None."""
        return None

    def config_fields(self, model: Any) -> dict[str, Any]:
        """RunConfig fields read in this generation's own way (``record/run_facts.py`` reads the
        rest from the model's attributes, as Keras 3 names them)."""
        return {}

    def steps_per_execution(self, model: Any) -> int:
        """The batches Keras runs per train-function call (``compile(steps_per_execution=)``)."""
        try:
            return max(1, int(getattr(model, "steps_per_execution", 1) or 1))
        except (TypeError, ValueError):
            return 1

    def header(self) -> dict[str, Any]:
        """What the trace header says of the Keras that ran."""
        return {"keras": self.version}


class Keras2(Keras3):
    """Keras 2 (tf_keras, or the keras 2.x package): always TensorFlow; its fit wraps each
    step in ``tf.profiler.experimental.Trace("train", step_num=batch)`` itself; its model
    keeps ``steps_per_execution`` in a ``tf.Variable`` and ``jit_compile`` None when off."""

    name = "keras2"

    def backend(self) -> RecordBackend:
        from gpudiag.record.backends.tensorflow import KerasMarkedTensorFlowBackend

        backend = KerasMarkedTensorFlowBackend()
        backend.name = "tensorflow"
        return backend

    def problem(self, model: Any) -> str | None:
        tf = sys.modules.get("tensorflow")
        if tf is not None and not tf.compat.v1.executing_eagerly_outside_functions():
            return (
                "gpudiag: recording off: Keras 2 in TF1 graph mode (eager execution "
                "disabled) is not supported; training goes on untouched"
            )
        strategy = getattr(model, "distribute_strategy", None)
        if getattr(strategy, "_should_use_with_coordinator", False):
            return (
                "gpudiag: recording off: Keras 2 under ParameterServerStrategy is not "
                "supported (its steps are dispatched to remote workers); training goes on "
                "untouched"
            )
        return None

    def config_fields(self, model: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"keras_generation": 2}  # the remedies name Keras 2's API
        if model is None or not getattr(model, "_is_compiled", False):
            return out
        out["steps_per_execution"] = self.steps_per_execution(model)
        jit = getattr(model, "_jit_compile", None)
        out["jit_compile"] = bool(jit)  # None: not asked for, i.e. off
        return out

    def steps_per_execution(self, model: Any) -> int:
        value = getattr(model, "_steps_per_execution", None)  # a tf.Variable, once compiled
        try:
            return max(1, int(value.numpy())) if value is not None else 1
        except (AttributeError, TypeError, ValueError):
            return 1

    def header(self) -> dict[str, Any]:
        return {"keras": self.version, "keras_package": getattr(self.package, "__name__", "")}


class Unsupported(Keras3):
    """A model of a Keras gpudiag does not record (Keras 1, ``tensorflow.python.keras``)."""

    name = "unsupported"

    def __init__(self, package: Any, what: str) -> None:
        super().__init__(package)
        self.what = what

    def problem(self, model: Any) -> str | None:
        return (
            f"gpudiag: recording off: the model is a {self.what} model; gpudiag records "
            "Keras 3 and Keras 2 (tf_keras, or tf.keras of TensorFlow 2.x); training goes on "
            "untouched"
        )


def keras_package(model: Any) -> tuple[str, Any] | None:
    """The top-level package of the first Keras class the model is an instance of, and the
    module (None: the model is no Keras model, or not given)."""
    if model is None:
        return None
    for cls in type(model).__mro__:
        module = getattr(cls, "__module__", "") or ""
        top = module.partition(".")[0]
        if top in KERAS_PACKAGES:
            return top, sys.modules.get(top)
        if top == "tensorflow" and ".keras" in module:  # TensorFlow's built-in Keras (<2.6)
            return module, None
    return None


def _major(package: Any) -> int | None:
    try:
        return int(str(package.__version__).split(".")[0])
    except (AttributeError, ValueError):
        return None


def generation_of(model: Any) -> Keras3:
    """The adapter of the Keras the model comes from; with no Keras model (before fit, no
    ``model=``), that of the ``keras`` package this program imports."""
    found = keras_package(model)
    if found is None:
        package = sys.modules.get("keras")
        return Keras2(package) if _major(package) == 2 else Keras3(package)
    name, package = found
    major = _major(package)
    if major == 3:
        return Keras3(package)
    if major == 2:
        return Keras2(package)
    version = getattr(package, "__version__", "of unknown version")
    return Unsupported(package, f"{name} {version}")
