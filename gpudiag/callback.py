"""DiagnoseCallback: add one line to ``model.fit`` and learn why training is slow.

It sits at the package top because it runs the whole flow (record → trace → analyze →
show); ``record/`` itself holds only the recorders and imports nothing from ``show/``.

    from gpudiag import DiagnoseCallback
    cb = DiagnoseCallback(dataset=train_ds)      # dataset= enables the pipeline lints
    model.fit(train_ds, epochs=3, callbacks=[cb])
    cb.diagnosis.verdict, cb.trace_path

The callback only holds its arguments and hooks of a few lines each: the lints
come from ``analyze/lints.py``, one ``record.session.RecordingSession`` per fit records
(writer, samplers, profiler windows, decode thread), ``record/watchdog.py`` notices a fit
left by an exception, the Keras backend's differences live in ``record/backends/`` and the
Keras generation's (3 or 2) in ``record/generation.py``, and ``show/run_end.py`` shows the
result. At the end the trace's summary is diagnosed by the same code as ``gpudiag analyze``
— so both always agree.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Any

import keras

from gpudiag.analyze.lints import Lints, judge
from gpudiag.analyze.thresholds import GIL_BURST_S
from gpudiag.fit_loop import SeriesHooks
from gpudiag.record import fit_series
from gpudiag.record.fit_clock import find_callback_list
from gpudiag.record.fit_config import fit_config
from gpudiag.record.fit_input import fit_locals
from gpudiag.record.generation import Keras2Hooks, Keras3, generation_of
from gpudiag.record.keras_distribution import FirstBatchWatch
from gpudiag.record.profiler import plan_windows
from gpudiag.record.ranks import RankInfo, claim_trace_path, discover
from gpudiag.record.run_facts import InputFacts
from gpudiag.record.samplers import SamplerSet
from gpudiag.record.session import RecordingSession, now_us
from gpudiag.record.session_start import start_session, steps_per_execution
from gpudiag.record.watchdog import FitWatchdog
from gpudiag.record.window_facts import WindowFacts, nvml_indices, visible_gpu_indices
from gpudiag.record.writer import TraceWriter
from gpudiag.show import run_end
from gpudiag.trace.model.runconfig import RunConfig
from gpudiag.trace.model.timeline import Metadata, RecordedLint

DEFAULT_PROFILE_STEPS = 5
DEFAULT_PROFILE_WINDOWS = 8
# The GIL probe runs in bursts (thresholds.GIL_BURST_S long): one from the second step (after
# tracing and compilation, which hold the GIL by themselves), one during each profiler
# window, and one every period.
GIL_PERIOD_S = 10.0


class DiagnoseCallback(SeriesHooks, Keras2Hooks, keras.callbacks.Callback):
    """Record a Keras run and print a diagnosis when it ends.

    Args:
        trace_path: where the streamed trace goes (default ``./gpudiag-trace-<time>.json``,
            one per rank on multi-worker runs); ``{rank}`` is replaced by the worker's rank.
            Resolved when each run starts; an existing file is never overwritten (``-2``...).
        dataset: the input you pass to ``fit`` (tf.data.Dataset, PyDataset, generator);
            enables static pipeline lints before the first step.
        profile: record short profiler windows (exact input/compute/sync split). Default:
            on, except under TensorFlow multi-worker strategies (docs/multi-worker.md).
        profile_start: first step of the first window (default: after 5 warm-up steps, or
            a third of a short epoch). Later windows are spread over the fit (one in each
            early epoch, then spaced out; see docs/callback.md).
        profile_steps: how many steps each window covers.
        profile_windows: at most this many profiler windows per fit.
        sample_interval: seconds between host/GPU samples.
        quiet: do not print lints and the report (``cb.diagnosis`` is still set).
        report: print the report at the end; by default it follows ``fit(verbose=...)``
            (``verbose=0``: no report; lints still print, they warn of failures). On
            multi-worker runs only rank 0 prints it by default; the others say where their
            trace is (``report=True`` makes every rank print its own).
        html: also write the report as a self-contained HTML page to this path.
        gpu: sample GPUs through NVML (when a driver is present).
        profile_dir: keep the raw profiler output there (open it in TensorBoard / xprof),
            with a copy of the trace: ``gpudiag analyze profile_dir`` is this run.
        model: the model, if you want the lints to know its replicas and layers even when
            TensorFlow fails before training begins (see docs/callback.md).

    After ``fit``: ``diagnosis`` (a ``Diagnosis``, also after an exception inside ``fit``),
    ``trace_path`` (the file written), ``lint_findings`` (the lints, with their
    fixes), ``windows_taken`` (first step of each profiler window) and ``overhead``
    (seconds the callback spent at begin, in windows and at the end).

    Per batch only ``on_train_batch_begin`` is overridden: overriding a batch-end hook would
    make Keras convert the logs on the training thread every batch, waiting for the device
    each step (docs/callback.md, "What happens when").
    Keras 2's callback list asks for more than the hooks: ``Keras2Hooks`` (docs/callback.md).
    """

    def __init__(
        self,
        trace_path: str | None = None,
        dataset: Any = None,
        profile: bool | None = None,
        profile_start: int | None = None,
        profile_steps: int = DEFAULT_PROFILE_STEPS,
        profile_windows: int = DEFAULT_PROFILE_WINDOWS,
        sample_interval: float = 0.5,
        quiet: bool = False,
        gpu: bool = True,
        nvml_lib: Any = None,
        profile_dir: str | None = None,
        model: Any = None,
        report: bool | None = None,
        html: str | None = None,
    ) -> None:
        super().__init__()
        self.trace_path = trace_path
        self._path_template = trace_path
        self.rank_info = RankInfo()
        self.dataset = dataset
        self.profile = profile
        self.profile_start = profile_start
        self.profile_steps = profile_steps
        self.profile_windows = profile_windows
        self.sample_interval = sample_interval
        self.quiet = quiet
        self.gpu = gpu
        self.nvml_lib = nvml_lib
        self.profile_dir = profile_dir
        self.report = report
        self.html = html
        self._init_series()  # fits in a loop (fit_loop.py); the diagnosis made when asked
        self._tensorboard: list[Any] = []  # the fit's callback list, where it has TensorBoard
        self.lints = Lints(RunConfig())
        self.config = self.lints.config  # what the run already does; in the trace header
        self._window_facts = WindowFacts()  # kernel time and copied bytes, all windows
        self.overhead: dict[str, float] = {}
        self.windows_taken: list[int] = []  # first step of each profiler window
        self._say = run_end.Say(quiet)
        self._lock = threading.RLock()
        self._session: RecordingSession | None = None
        self._watchdog: FitWatchdog | None = None
        self._run_token = 0
        self._watch: FirstBatchWatch | None = None
        self._batch_rows: int | None = None  # fit's first batch, as the watch heard it
        self._warned_disk = False
        if dataset is not None:
            # TensorFlow can fail before fit calls any callback (an uneven global batch
            # fails while Keras builds the model): check what can be checked now.
            with contextlib.suppress(Exception):
                gen = generation_of(model)
                if not self._refuses(gen, model):
                    self._run_lints(model, gen.backend().replicas(model)[0], gen)
        # JAX shards fit's first batch before any hook runs: hear it there (first_batch)
        self._watch = FirstBatchWatch.install(self._first_batch)

    @property
    def lint_findings(self) -> list[RecordedLint]:
        return self.lints.recorded()

    @property
    def _samplers(self) -> SamplerSet | None:
        return self._session.samplers if self._session is not None else None

    @property
    def _writer(self) -> TraceWriter | None:
        return self._session.writer if self._session is not None else None

    # ---- keras hooks ---------------------------------------------------------------------
    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        t0 = time.perf_counter()
        if self._watch is not None:  # from here on the hooks speak before any step
            self._watch.remove()
        began_us = now_us()
        with self._lock:
            if self._session is not None:  # fit called again without the previous one ending
                self._finish(abnormal=True)
            self._run_token += 1
            self.windows_taken = []
        try:
            if not self._resume():  # the next fit of a series continues its recording
                self._begin()
            self._time_callbacks(began_us)
        except Exception as e:  # gpudiag must never break training
            self._say(f"gpudiag: recording disabled ({type(e).__name__}: {e})")
            if self._session is not None:
                self._session.teardown()
            self._session = None
        self.overhead["begin_s"] = time.perf_counter() - t0

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if self._session is not None:
            self._session.batch_begin(batch)

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if self._session is not None:
            self._session.epoch_begin(epoch)

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if self._session is not None:
            self._session.epoch_end(epoch)

    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        if self._session is not None:
            self._session.test_begin()

    def on_test_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if self._session is not None:
            self._session.test_batch()

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        if self._session is not None:
            self._session.test_end()

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        with self._lock:
            if self._session is not None and self._series is not None:
                self._pause()  # a fit of a series: the next one continues the recording
            elif self._session is not None:
                self._finish(abnormal=False)

    # ---- begin ---------------------------------------------------------------------------
    def _begin(self) -> None:
        gen = generation_of(self.model)
        if self._refuses(gen, self.model):
            return
        backend = gen.backend()
        replicas, devices = backend.replicas(self.model)
        facts, params = self._run_lints(self.model, replicas, gen)
        trained = devices or backend.default_devices()
        self.config.train_gpus = nvml_indices(trained, os.environ.get("CUDA_VISIBLE_DEVICES"))
        info = self.rank_info = discover(self.model, backend)
        self.trace_path = claim_trace_path(self._path_template, info)
        extra: dict[str, Any] = {
            "cpu_count": self.config.cores,
            "params": params,
            **gen.header(),
            "input": facts.kind,
        }
        if info.multi_worker:  # started_us tells apart two runs on one cluster
            extra.update(cluster=info.cluster, rank_source=info.source, started_us=round(now_us()))
        meta = Metadata(
            producer="gpudiag",
            framework=backend.name,
            replicas=replicas,
            devices=list(devices),
            batch_size=facts.batch_size,
            device_type="",
            hostname=info.host,
            rank=info.rank,
            world_size=info.world_size,
            run_id=info.run_id,
            extra=extra,
            config=self.config,
        )
        steps = (self.params or {}).get("steps")
        per_epoch = steps if isinstance(steps, int) else None
        in_loop = fit_series.recent(self.model)  # fit called again on this model
        schedule, in_epoch, note = plan_windows(
            self.profile,
            self.profile_start,
            self.profile_steps,
            self.profile_windows,
            per_epoch,
            backend.profile_off_reason(info.multi_worker),
            steps_per_execution(self.model),
            self._fit_steps() if in_loop else None,
        )
        self._session = start_session(
            self.trace_path,
            meta,
            backend,
            self._make_samplers,
            model=self.model,
            findings=self.lint_findings,
            input_facts=facts.to_dict() if facts.kind != "unknown" else None,
            schedule=schedule,
            notes=[note] if note else [],
            profile_steps=self.profile_steps,
            profile_dir=self.profile_dir,
            in_epoch_start=in_epoch,
            steps_per_epoch=per_epoch,
            on_disk_error=self._disk_problem,
        )
        self._session.decoder.facts = self._window_facts
        self.windows_taken = self._session.windows_taken
        if in_loop:  # fit in a loop: one recording from here on
            self._start_series(self._session)
        token = self._run_token
        self._watchdog = FitWatchdog(
            self,
            finish=lambda cb: cb._lost(token),
            running=lambda cb: cb._session is not None and cb._run_token == token,
        )
        self._watchdog.start()

    def _time_callbacks(self, began_us: float) -> None:
        """When the fit began, and the other callbacks' hooks timed (fit_clock.py)."""
        session = self._session
        if session is None:
            return
        found = find_callback_list(self)
        if found is not None:
            cbs, sync = found
            facts = session.clock.attach(cbs, me=self, model=self.model, batch_end_sync=sync)
            session.clock.write_facts(facts)
            self._tensorboard = [cbs] if any(f["class"] == "TensorBoard" for f in facts) else []
        session.fit_begin(began_us)

    def _disk_problem(self, why: str) -> None:
        if not self._warned_disk:
            self._warned_disk = True
            self._say(
                f"gpudiag: cannot write the trace to {self.trace_path} ({why}); "
                "training goes on and the report is built from what was recorded in memory"
            )

    def _make_samplers(self, writer: TraceWriter) -> SamplerSet:
        """The samplers of this run (one seam: the overhead benchmark turns parts off)."""
        return SamplerSet.default(
            writer.counter,
            gpu=self.gpu,
            gpu_interval=self.sample_interval,
            host_interval=max(self.sample_interval, 0.5),
            gil_interval=1.0,
            nvml_lib=self.nvml_lib,
            gpu_indices=visible_gpu_indices(),
            gil_bursts=(GIL_BURST_S, GIL_PERIOD_S),
        )

    def _refuses(self, gen: Keras3, model: Any) -> bool:
        """Whether this fit's Keras cannot be recorded; says why, once."""
        problem = gen.problem(model)
        if problem:
            self._say.once(problem)
        return problem is not None

    def _first_batch(self, rows: int) -> None:
        """The first batch of a fit this callback is part of, about to be laid out on the
        devices (keras.distribution on JAX): the lints now, before JAX can fail on it."""
        fit = fit_locals() or {}
        callbacks = fit.get("callbacks")
        if self in list(getattr(callbacks, "callbacks", callbacks) or []):
            model = fit.get("self")
            gen = generation_of(model)
            self._batch_rows = rows  # the batch, for inputs that do not say it
            self._run_lints(model, gen.backend().replicas(model)[0], gen)

    def _run_lints(self, model: Any, replicas: int, gen: Keras3) -> tuple[InputFacts, int | None]:
        """Judge the lints of this configuration (once per configuration) and
        print those not printed before. Returns the input facts and the parameter count."""
        config, facts, params = fit_config(model, self.dataset, replicas, gen, self._batch_rows)
        if config != self.lints.config or not self.lints.config.to_dict():
            self.lints = judge(config)
        self.config = self.lints.config
        self._say.lints(self.lint_findings)
        return facts, params

    # ---- the end -------------------------------------------------------------------------
    def _lost(self, token: int) -> None:
        """The watchdog's call: fit was left without on_train_end (exception, Ctrl-C)."""
        with self._lock:
            if self._session is not None and self._run_token == token:
                self._finish(abnormal=True)

    def _finish(self, abnormal: bool) -> None:
        """Stop recording, diagnose, show. Called once per run, on whichever path."""
        session, self._session = self._session, None
        if session is None:
            return
        if self._watchdog is not None:
            self._watchdog.cancel()
        t0 = time.perf_counter()
        try:
            summary = session.finish(abnormal)
            self.overhead.update(session.overhead())
            path = str(self.trace_path)
            if not session.writer.failed and not os.path.exists(path):
                self._say(
                    f"gpudiag: {path} vanished during the run; the report below is "
                    "from what was recorded in memory"
                )
            self._show_end(summary, path, abnormal, t0)
        except Exception as e:
            self._say(f"gpudiag: could not finish the diagnosis ({type(e).__name__}: {e})")
        finally:
            session.teardown()
