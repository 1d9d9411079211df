"""The adapter every backend starts from: what Keras alone can tell (no profiler window, one
replica unless Keras's own distribution says more, ranks from the launcher's variables).

    class JaxBackend(RecordBackend): ...
"""

from __future__ import annotations

from typing import Any

from gpudiag.record.compile_watch import CompileWatch, Emit
from gpudiag.record.keras_distribution import current, mesh_facts
from gpudiag.record.memory import DeviceMemory
from gpudiag.record.rank_info import RankInfo
from gpudiag.trace.model.timeline import Timeline

STEP_MARKER = "train"


class ProfilerSession:
    """A running profiler; ``stop`` ends it and leaves its files in the log dir."""

    def stop(self) -> None:
        raise NotImplementedError


class RecordBackend:
    """The defaults: what every backend can do through Keras alone."""

    name = ""

    def start_profiler(self, logdir: str) -> ProfilerSession | None:
        """Start this backend's profiler writing under ``logdir``; None when it has none."""
        return None

    def step_marker(self, step: int) -> Any:
        """A context manager that marks one training step in the profile (None: no marker)."""
        return None

    def profile_step(self, step: int, batch: int) -> int:
        """The number the profile gives the step the callback counts as ``step`` (its
        first batch: ``batch``): that of ``step_marker``'s marker, by default."""
        return step

    def wait_for(self, result: Any) -> bool:
        """Wait until the device has computed ``result`` (a train-function call's), where
        the backend dispatches steps asynchronously. Only inside profiler windows: the
        profiled steps' markers must hold their device work; elsewhere the run keeps its
        pipeline. False: it did not wait (the profile links device work to its step by
        itself), and the step's end is taken as outside windows (``completion``)."""
        return True

    def completion(self, result: Any) -> Any:
        """Called on the training thread right after each train-function call, without
        blocking: a function that waits until the device has computed ``result``, for the
        step's end (``record/completion.py``); None where the call's return already means
        the step is done (Keras converts TensorFlow's logs on the training thread)."""
        return None

    def decode(self, logdir: str) -> tuple[Timeline | None, str | None]:
        """What the profiler wrote, as one Timeline on the profiler's clock, or a problem."""
        return None, f"no profiler for the {self.name!r} backend"

    def user_profiler_running(self) -> str:
        """A sentence naming a profiler session the program itself runs now ("" if none): a
        second session cannot start, and stopping it would cut the user's profile short."""
        return ""

    def replicas(self, model: Any) -> tuple[int, list[str]]:
        """Ways the batch splits and the devices, from Keras's distribution (JAX's
        DataParallel: every device; ModelParallel: the mesh's batch axis)."""
        facts = mesh_facts(current(), model)
        if facts is not None:
            return facts.replicas, facts.devices
        return 1, []

    def strategy(self, model: Any) -> str:
        """The distribution the model trains under, in RunConfig.strategy's words: Keras's
        own (JAX's DataParallel, ModelParallel), else "none"."""
        facts = mesh_facts(current(), model)
        return facts.strategy if facts is not None else "none"

    def layout(self, model: Any) -> dict[str, str]:
        """RunConfig's ``mesh`` and ``sharded`` under a keras.distribution ({}: none)."""
        facts = mesh_facts(current(), model)
        return facts.config() if facts is not None else {}

    def default_devices(self) -> list[str]:
        """The devices a run without a distribution strategy trains on ([]: unknown)."""
        return []

    def rank_info(self, model: Any) -> RankInfo | None:
        """This process's rank from the backend's own distribution layer (None: unknown)."""
        return None

    def compile_watch(self, model: Any, emit: Emit) -> CompileWatch | None:
        """What counts the step's compilations during fit, writing each to ``emit``
        (``record/compile_watch.py``); None where the backend compiles nothing."""
        return None

    def device_memory(self) -> list[DeviceMemory]:
        """The framework allocator's memory per device (record/memory.py); [] where the
        backend cannot say (a CPU-only run: the host's memory is read instead)."""
        return []

    def profile_off_reason(self, multi_worker: bool) -> str | None:
        """Why the profiler window is off by default on this run (None: it is on)."""
        return None
