"""TensorFlow: ``tf.profiler.experimental`` windows, ``Trace`` step markers, strategies.

Keras 3 emits no step markers; ``Trace("train", step_num=n, _r=1)`` around each step lets
xprof attribute time to steps (CPU-only included). Keras 2's fit emits that marker itself
(``step_num``: the batch), so under Keras 2 the callback adds none
(``KerasMarkedTensorFlowBackend``). The profile is an ``.xplane.pb`` read by
``trace/tf/xspace/reader.py``. Replicas come from the model's strategy, the strategy in scope, or —
before ``fit`` with no model given — the multi-replica strategy the program created.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import sys
from typing import Any

from gpudiag.record.backends.base import STEP_MARKER, ProfilerSession, RecordBackend
from gpudiag.record.backends.xspace import decode_xspace
from gpudiag.record.compile_watch import CompileWatch, Emit
from gpudiag.record.memory import DeviceMemory, tf_memory
from gpudiag.record.rank_info import RankInfo, from_tf_cluster
from gpudiag.trace.model.timeline import Timeline


class _TfSession(ProfilerSession):
    def stop(self) -> None:
        import tensorflow as tf

        tf.profiler.experimental.stop()


# tf.distribute classes -> RunConfig.strategy (a default strategy outside any scope: none)
_TF_STRATEGIES = {
    "MirroredStrategy": "mirrored",
    "MultiWorkerMirroredStrategy": "multi-worker-mirrored",
    "CollectiveAllReduceStrategy": "multi-worker-mirrored",
    "TPUStrategy": "tpu",
    "ParameterServerStrategy": "parameter-server",
    "ParameterServerStrategyV2": "parameter-server",
    "OneDeviceStrategy": "none",
    "_DefaultDistributionStrategy": "none",
}


class TensorFlowBackend(RecordBackend):
    def start_profiler(self, logdir: str) -> ProfilerSession:
        import tensorflow as tf

        tf.profiler.experimental.start(logdir)
        return _TfSession()

    def step_marker(self, step: int) -> Any:
        import tensorflow as tf

        return tf.profiler.experimental.Trace(STEP_MARKER, step_num=step, _r=1)

    def decode(self, logdir: str) -> tuple[Timeline | None, str | None]:
        return decode_xspace(logdir)

    def device_memory(self) -> list[DeviceMemory]:
        return tf_memory()

    def compile_watch(self, model: Any, emit: Emit) -> CompileWatch | None:
        """The train function's traces; under jit_compile, XLA's compilations by their
        call time. Run eagerly nothing is traced."""
        if model is None or getattr(model, "run_eagerly", False):
            return None
        from gpudiag.record.compile_tf import TfCompileWatch

        return TfCompileWatch(emit, model, jit=bool(getattr(model, "jit_compile", False)))

    def user_profiler_running(self) -> str:
        mod = sys.modules.get("tensorflow.python.profiler.profiler_v2")
        if mod is not None and getattr(mod, "_profiler", None) is not None:
            return "a tf.profiler session of the program's own is running"
        return ""

    def replicas(self, model: Any) -> tuple[int, list[str]]:
        tf = sys.modules.get("tensorflow")
        candidates: list[Any] = []
        if model is not None:
            candidates.append(lambda: getattr(model, "distribute_strategy", None))
        if tf is not None:
            candidates.append(
                lambda: tf.distribute.get_strategy() if tf.distribute.has_strategy() else None
            )
        if model is None and tf is not None:
            candidates.append(lambda: _created_strategy(tf))
        for get in candidates:
            with contextlib.suppress(Exception):
                strategy = get()
                if strategy is not None and strategy.num_replicas_in_sync >= 1:
                    return (
                        int(strategy.num_replicas_in_sync),
                        [str(d) for d in strategy.extended.worker_devices],
                    )
        return super().replicas(model)

    def strategy(self, model: Any) -> str:
        """The tf.distribute strategy the model was built under ("none": the default)."""
        with contextlib.suppress(Exception):
            found = getattr(model, "distribute_strategy", None)
            tf = sys.modules.get("tensorflow")
            if found is None and tf is not None and tf.distribute.has_strategy():
                found = tf.distribute.get_strategy()
            if found is not None:
                return _TF_STRATEGIES.get(type(found).__name__, type(found).__name__)
        return "none"

    def default_devices(self) -> list[str]:
        """TensorFlow places ops on its first GPU."""
        tf = sys.modules.get("tensorflow")
        if tf is None:
            return []
        try:
            return [str(d.name) for d in tf.config.list_logical_devices("GPU")][:1]
        except Exception:  # a TensorFlow that cannot list devices: unknown
            return []

    def rank_info(self, model: Any) -> RankInfo | None:
        strategy = getattr(model, "distribute_strategy", None)
        resolver = getattr(strategy, "cluster_resolver", None)
        if resolver is not None:
            with contextlib.suppress(Exception):
                info = from_tf_cluster(
                    resolver.cluster_spec().as_dict(),
                    resolver.task_type,
                    resolver.task_id,
                    "TensorFlow cluster resolver",
                )
                if info is not None:
                    return info
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            config = json.loads(os.environ.get("TF_CONFIG") or "{}")
            task = config.get("task") or {}
            return from_tf_cluster(
                config.get("cluster") or {}, task.get("type"), task.get("index"), "TF_CONFIG"
            )
        return None

    def profile_off_reason(self, multi_worker: bool) -> str | None:
        if not multi_worker:
            return None
        return (
            "profiler window off under a TensorFlow multi-worker strategy (TF's profiler "
            "stop crashed about 1 in 12 such jobs): per-rank step and wait times come from "
            "the callback's timing; pass profile=True to force the window"
        )


class KerasMarkedTensorFlowBackend(TensorFlowBackend):
    """TensorFlow under Keras 2, whose fit wraps each step in ``Trace("train",
    step_num=batch)`` itself (entered before the batch hooks: the first step of a window,
    whose hook starts the profiler, has no marker in the profile; the others align it)."""

    def step_marker(self, step: int) -> Any:
        return None

    def profile_step(self, step: int, batch: int) -> int:
        return batch


def _created_strategy(tf: Any) -> Any:
    """Before fit there may be no model to ask: the multi-replica strategy the user made."""
    return max(
        (
            o
            for o in gc.get_objects()
            if isinstance(o, tf.distribute.Strategy) and o.num_replicas_in_sync > 1
        ),
        key=lambda o: o.num_replicas_in_sync,
        default=None,
    )
