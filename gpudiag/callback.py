"""DiagnoseCallback: add one line to ``model.fit`` and learn why training is slow.

It sits at the package top because it runs the whole flow (record → trace → analyze →
show); ``record/`` itself holds only the recorders and imports nothing from ``show/``.

    from gpudiag import DiagnoseCallback
    cb = DiagnoseCallback(dataset=train_ds)      # dataset= enables the pipeline lints
    model.fit(train_ds, epochs=3, callbacks=[cb])
    cb.diagnosis.verdict, cb.trace_path

The callback only orchestrates: ``lint`` checks the pipeline when training begins, the
samplers (NVML, psutil, GIL probe) stream counters, ``ProfilerWindow`` records a few steps
exactly, ``TraceWriter`` streams everything to disk, and at the end the trace is read back
and diagnosed by the same code as ``gpudiag analyze`` — so both always agree.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import queue
import sys
import threading
import time
import types
import weakref
from typing import Any

import keras

from gpudiag.record.lint import InputFacts, describe_input, run_config
from gpudiag.record.profiler import ProfilerWindow, WindowSchedule
from gpudiag.record.ranks import CallTimer, RankInfo, default_trace_template, discover
from gpudiag.record.samplers import SamplerSet
from gpudiag.record.window_facts import WindowFacts, default_gpus, nvml_indices
from gpudiag.record.writer import TraceWriter, claim_path
from gpudiag.trace.runconfig import RunConfig
from gpudiag.trace.timeline import Metadata, RecordedFinding

DEFAULT_WARMUP_STEPS = 5
DEFAULT_PROFILE_STEPS = 5
DEFAULT_PROFILE_WINDOWS = 8
# The GIL probe runs in bursts (a probe waking every 5 ms for the whole run costs several %
# of step time on 2 cores): one from the second step (after tracing and compilation, which
# hold the GIL by themselves), one during each profiler window, and one every period.
GIL_BURST_S = 0.5
GIL_PERIOD_S = 10.0


def _now_us() -> float:
    return time.time() * 1e6


def visible_gpu_indices() -> list[int] | None:
    """The GPUs this process may use (CUDA_VISIBLE_DEVICES as integers), for NVML, which
    ignores the variable; None means all. UUID lists are not mapped: all GPUs are sampled."""
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if not all(p.isdigit() for p in parts):
        return None
    return [int(p) for p in parts]


class DiagnoseCallback(keras.callbacks.Callback):
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
        profile_dir: keep the raw profiler output there (open it in TensorBoard / xprof).
        model: the model, if you want the lints to know its replicas and layers even when
            TensorFlow fails before training begins (see docs/callback.md).
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
        self.diagnosis: Any = None
        self.lint_findings: list[RecordedFinding] = []
        self.config = RunConfig()  # what the run already does; recorded in the trace header
        self._window_facts = WindowFacts()  # kernel time and copied bytes, all windows
        self.overhead: dict[str, float] = {}
        self._lock = threading.RLock()
        self._printed_lints: set[str] = set()
        self._reset()
        if dataset is not None:
            # TensorFlow can fail before fit calls any callback (an uneven global batch
            # fails while Keras builds the model): check what can be checked now.
            with contextlib.suppress(Exception):
                self._run_lints(model, self._replicas(model)[0])

    def _reset(self) -> None:
        self._writer: TraceWriter | None = None
        self._samplers: SamplerSet | None = None
        self._window: ProfilerWindow | None = None  # the open window
        self._windows: list[ProfilerWindow] = []  # every window of this fit
        self._schedule: WindowSchedule | None = None
        self._backend = ""
        self._decode_queue: queue.Queue[ProfilerWindow | None] = queue.Queue()
        self._collector: threading.Thread | None = None
        self.windows_taken: list[int] = []  # first step of each window
        self._epoch = 0
        self._epoch_step = 0
        self._in_epoch_start = DEFAULT_WARMUP_STEPS
        self._epoch_begin_us = 0.0
        self._test_begin_us = 0.0
        self._batch_begin = 0
        self._t0 = 0.0
        self._watchdog: threading.Thread | None = None
        self._running = False
        self._step = 0
        self._begin_us = 0.0
        self._fit_frame: Any = None
        self._train_thread = 0
        self._calls: CallTimer | None = None
        self._warned_disk = False

    # ---- keras hooks ---------------------------------------------------------------------
    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        t0 = time.perf_counter()
        with self._lock:
            if self._running:  # fit called again without the previous one ending
                self._finish(abnormal=True)
            self._reset()
            self._running = True
            self._run_token = getattr(self, "_run_token", 0) + 1
        try:
            self._begin()
        except Exception as e:  # gpudiag must never break training
            self._say(f"gpudiag: recording disabled ({type(e).__name__}: {e})")
            self._teardown()
            self._running = False
        self.overhead["begin_s"] = time.perf_counter() - t0

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if not self._running:
            return
        self._begin_us = _now_us()
        self._batch_begin = batch
        if self._step == 1:  # the first step traced and compiled: probe the GIL from here on
            self._gil_burst()
        sch = self._schedule
        if (
            sch is not None
            and self._window is None
            and sch.due(
                self._step,
                self._epoch,
                self._epoch_step,
                self._in_epoch_start,
                time.monotonic(),
                self._t0,
            )
        ):
            self._open_window()
        w = self._window
        if w is not None:
            w.on_step_begin(self._step)
            if w.problem:  # could not start (a profiler of the user's own is running, ...)
                self._window = None
                if self._writer is not None:
                    self._writer.detail(False)
                    self._writer.update_meta(limitations=[w.problem])

    def _open_window(self) -> None:
        assert self._schedule is not None
        self._schedule.open(self._step, self._epoch, time.monotonic())
        w = ProfilerWindow(
            self._backend,
            first_step=self._step,
            steps=self.profile_steps,
            keep_dir=self.profile_dir,
        )
        if self._writer is not None:
            self._writer.detail(True)  # full resolution while the window is open
        self._window = w
        self._windows.append(w)
        self.windows_taken.append(self._step)
        self._gil_burst()

    def _gil_burst(self) -> None:
        gil = self._samplers.gil if self._samplers is not None else None
        if gil is not None:
            gil.request_burst(GIL_BURST_S)

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if not self._running or self._writer is None:
            return
        end = _now_us()
        step = self._step
        self._step += 1
        self._epoch_step += 1
        w = self._window
        in_window = w is not None and w.active
        call = self._calls.take() if self._calls is not None else None
        self._writer.step(
            step,
            self._begin_us,
            end,
            profiled=in_window,
            call=call,
            batches=max(1, batch - self._batch_begin + 1),
        )
        if w is not None and w.active:
            w.on_step_end(step, self._begin_us, end)
            if w.done:
                self._window = None
                self._writer.detail(False)
                self._collect_in_background(w)

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._epoch = epoch
        self._epoch_step = 0
        self._epoch_begin_us = _now_us()

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if self._running and self._writer is not None:
            self._writer.span("epoch", self._epoch_begin_us, _now_us(), epoch=epoch)

    def on_test_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._test_begin_us = _now_us()

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        if self._running and self._writer is not None and self._test_begin_us:
            self._writer.span("evaluation", self._test_begin_us, _now_us())

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        with self._lock:
            if self._running:
                self._finish(abnormal=False)

    # ---- begin ---------------------------------------------------------------------------
    def _begin(self) -> None:
        backend = keras.backend.backend()
        replicas, devices = self._replicas(self.model)
        facts, params = self._run_lints(self.model, replicas)
        trained = devices or default_gpus(backend)
        self.config.train_gpus = nvml_indices(trained, os.environ.get("CUDA_VISIBLE_DEVICES"))
        info = self.rank_info = discover(self.model, backend)
        self.trace_path = self._claim_trace_path(info)
        extra: dict[str, Any] = {
            "cpu_count": self.config.cores,
            "params": params,
            "keras": keras.__version__,
            "input": facts.kind,
        }
        if info.multi_worker:  # started_us tells apart two runs on one cluster
            extra.update(cluster=info.cluster, rank_source=info.source, started_us=round(_now_us()))
        meta = Metadata(
            producer="gpudiag",
            framework=backend,
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
        self._writer = TraceWriter(self.trace_path, meta, on_error=self._disk_problem)
        self._calls = CallTimer(self.model)
        for f in self.lint_findings:
            self._writer.finding(f)
        if facts.kind != "unknown":
            self._writer.pipeline({"input": facts.to_dict()})
        self._samplers = self._make_samplers(self._writer)
        if self._samplers.gpu is not None and self._samplers.gpu.available:
            self._writer.update_meta(device_type="GPU", devices=self._samplers.gpu.sources)
        self._samplers.start_all()
        limitations = self._samplers.limitations()
        self._backend = backend
        self._t0 = time.monotonic()
        steps = (self.params or {}).get("steps")
        if isinstance(steps, int) and steps >= 4 * self.profile_steps:
            self._in_epoch_start = steps // 2  # later windows: mid-epoch
        profile = self.profile
        if profile is None and info.multi_worker and backend == "tensorflow":
            profile = False
            limitations.append(
                "profiler window off under a TensorFlow multi-worker strategy (TF's profiler "
                "stop crashed about 1 in 12 such jobs): per-rank step and wait times come from "
                "the callback's timing; pass profile=True to force the window"
            )
        if profile is None or profile:
            start = self.profile_start if self.profile_start is not None else self._auto_start()
            self._schedule = WindowSchedule(
                start, self.profile_steps, max_windows=self.profile_windows
            )
        elif self.profile is False:
            limitations.append(
                "profiler window off (profile=False): no per-step input/"
                "compute/sync split, host signals only"
            )
        if limitations:
            self._writer.update_meta(limitations=limitations)
        self._writer.flush()
        self._start_watchdog()

    def _find_tensorboard(self) -> list[tuple[str, int | None]]:
        """Log dirs of a Keras TensorBoard callback in the same fit, each with the steps per
        epoch when it logs per epoch (our scalars then use its epoch axis). The callback list
        that holds us is found among our referrers, once, when training has ended (reading
        the fit frame's locals instead disturbs a running generator input on Python 3.11)."""
        from gpudiag.show.tensorboard import tensorboard_targets

        steps = (self.params or {}).get("steps")
        per_epoch = steps if isinstance(steps, int) else None
        for ref in gc.get_referrers(self):
            if isinstance(ref, list) and any(type(c).__name__ == "TensorBoard" for c in ref):
                return tensorboard_targets(ref, per_epoch)
        return []

    def _claim_trace_path(self, info: RankInfo) -> str:
        """This run's own file, resolved now (cwd, rank); never one a previous run wrote."""
        template = self._path_template or default_trace_template(
            info, time.strftime("%Y%m%d-%H%M%S")
        )
        try:
            return claim_path(template, info.rank)
        except OSError:  # read-only or vanished place: the writer says so, the summary goes on
            return os.path.abspath(template.replace("{rank}", str(info.rank or 0)))

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

    def _auto_start(self) -> int:
        steps = (self.params or {}).get("steps")
        if isinstance(steps, int) and steps > 0 and steps < 3 * DEFAULT_WARMUP_STEPS:
            return max(1, steps // 3)
        return DEFAULT_WARMUP_STEPS

    def _run_lints(self, model: Any, replicas: int) -> tuple[InputFacts, int | None]:
        """Lint the input and replicas; print findings not printed before. Returns the input
        facts and the model's parameter count."""
        from gpudiag.analyze import rules

        facts = describe_input(self.dataset) if self.dataset is not None else InputFacts()
        params, has_bn = self._model_facts(model)
        self.config = run_config(
            facts,
            model,
            replicas=replicas,
            framework=keras.backend.backend(),
            params=params,
            batchnorm=has_bn,
        )
        found = rules.lint(self.config)
        fixes = {
            s.finding: s.detail
            for s in rules.advise(
                found,
                rules.Situation(
                    {"input": 0.0, "transfer": 0.0, "compute": 0.0, "sync": 0.0, "other": 0.0},
                    "inconclusive",
                    self.config,
                    rules.HostFacts(),
                ),
            )
        }
        self.lint_findings = [
            RecordedFinding(
                f.id,
                f.severity,
                f.title,
                f.evidence,
                fixes.get(f.id) or str(f.evidence.get("fix", "")),
            )
            for f in found
        ]
        new = [
            f
            for f in self.lint_findings
            if f.severity != "info" and f.id not in self._printed_lints
        ]
        self._printed_lints.update(f.id for f in new)
        if new and not self.quiet:
            lines = ["gpudiag: input/replica checks before the first step:"]
            lines += [
                f"  [{f.severity}] {f.id}: {f.title}" + (f" — fix: {f.fix}" if f.fix else "")
                for f in new
            ]
            self._say("\n".join(lines))
        return facts, params

    def _replicas(self, model: Any) -> tuple[int, list[str]]:
        """Replica count and devices: the model's strategy, the strategy in scope, Keras's
        distribution (JAX), or, before training with no model given, the multi-replica
        strategy the program created."""
        tf = sys.modules.get("tensorflow")
        candidates: list[Any] = []
        if model is not None:
            candidates.append(lambda: getattr(model, "distribute_strategy", None))
        if tf is not None:
            candidates.append(
                lambda: tf.distribute.get_strategy() if tf.distribute.has_strategy() else None
            )
        if model is None and tf is not None:
            # before fit there may be no model to ask: find the strategy the user created
            candidates.append(
                lambda: max(
                    (
                        o
                        for o in gc.get_objects()
                        if isinstance(o, tf.distribute.Strategy) and o.num_replicas_in_sync > 1
                    ),
                    key=lambda o: o.num_replicas_in_sync,
                    default=None,
                )
            )
        for get in candidates:
            with contextlib.suppress(Exception):
                strategy = get()
                if strategy is not None and strategy.num_replicas_in_sync >= 1:
                    return (
                        int(strategy.num_replicas_in_sync),
                        [str(d) for d in strategy.extended.worker_devices],
                    )
        with contextlib.suppress(Exception):
            dist = keras.distribution.distribution()
            if dist is not None:
                devices = list(dist.device_mesh.devices.flatten())
                return len(devices), [str(d) for d in devices]
        return 1, []

    @staticmethod
    def _model_facts(model: Any) -> tuple[int | None, bool]:
        if model is None:
            return None, False
        params: int | None = None
        has_bn = False
        with contextlib.suppress(Exception):
            params = int(model.count_params())
        with contextlib.suppress(Exception):
            has_bn = any(
                "BatchNormalization" in type(layer).__name__
                for layer in model._flatten_layers(include_self=False)
            )
        return params, has_bn

    def _say(self, text: str) -> None:
        if not self.quiet:
            print(text, file=sys.stderr, flush=True)

    # ---- profiler collection -------------------------------------------------------------
    def _collect_in_background(self, window: ProfilerWindow) -> None:
        """Decode finished windows one after another on one background thread."""
        self._decode_queue.put(window)
        if self._collector is None:
            self._collector = threading.Thread(
                target=self._decode_loop, name="gpudiag-profile-decode", daemon=True
            )
            self._collector.start()

    def _decode_loop(self) -> None:
        # decoding is not urgent: on Linux a thread has its own nice value, so the decode
        # yields the cores to training's threads
        with contextlib.suppress(Exception):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 15)
        while True:
            window = self._decode_queue.get()
            if window is None:
                return
            gil = self._samplers.gil if self._samplers is not None else None
            if gil is not None:  # decoding holds the GIL: not while the probe measures it
                gil.wait_idle(timeout=2 * GIL_BURST_S)
            with contextlib.suppress(Exception):  # never let a decode failure escape
                self._collect(window)

    def _collect(self, window: ProfilerWindow) -> None:
        writer = self._writer
        if writer is None:
            return
        try:
            tl = window.collect()
        except Exception as e:  # decoding must never end with a traceback of its own
            window.problem = window.problem or (
                f"profile could not be recorded ({type(e).__name__}: {e})"
            )
            tl = None
        if self._schedule is not None:
            self._schedule.cost_s += window.start_cost_s + window.stop_cost_s + window.decode_cost_s
        if tl is not None:
            if tl.meta.device_type:
                writer.update_meta(device_type=tl.meta.device_type)
            if tl.meta.limitations:  # what the profile itself could not show
                writer.update_meta(limitations=tl.meta.limitations)
            writer.timeline(tl)
            self._window_facts.add(tl)
            writer.update_meta(extra=self._window_facts.extra())
            writer.window(float(tl.steps.start.min()), float(tl.steps.end.max()), "profiler window")
        elif window.problem:
            writer.update_meta(limitations=[window.problem])
        writer.flush()

    # ---- exit paths ----------------------------------------------------------------------
    def _start_watchdog(self) -> None:
        """Notices when ``fit`` is left by an exception or Ctrl-C (Keras then skips
        on_train_end) and stops everything, so no thread outlives the run."""
        frame: types.FrameType | None = sys._getframe()
        while frame is not None and frame.f_code.co_name != "fit":
            frame = frame.f_back
        self._fit_frame = frame
        self._train_thread = threading.get_ident()
        ref = weakref.ref(self)
        atexit.register(_atexit_finish, ref)
        if frame is None:
            return

        token = self._run_token  # a later fit with this callback has its own watchdog

        def watch() -> None:
            while True:
                time.sleep(0.25)
                me = ref()
                if me is None or not me._running or me._run_token != token:
                    return
                if not me._fit_alive():
                    with me._lock:
                        if me._running and me._run_token == token:
                            me._finish(abnormal=True)
                    return
                del me

        self._watchdog = threading.Thread(target=watch, name="gpudiag-watchdog", daemon=True)
        self._watchdog.start()

    def _fit_alive(self) -> bool:
        frame = sys._current_frames().get(self._train_thread)
        while frame is not None:
            if frame is self._fit_frame:
                return True
            frame = frame.f_back
        return False

    def _teardown(self) -> None:
        if self._calls is not None:
            self._calls.restore()
        if self._window is not None:
            self._window.stop()
        for w in self._windows:
            w.cleanup()
        if self._samplers is not None:
            self._samplers.stop_all()

    def _finish(self, abnormal: bool) -> None:
        """Stop threads, close the trace, diagnose it. Called once, on whichever path."""
        self._running = False
        t0 = time.perf_counter()
        try:
            gil = self._samplers.gil if self._samplers is not None else None
            if gil is not None:  # training is over: so is what the GIL probe measures
                gil.end_burst()
            window = self._window
            if window is not None and window.active:
                window.stop()
                if not abnormal:
                    self._collect_in_background(window)
            self._window = None
            if self._collector is not None:
                self._decode_queue.put(None)
                self._collector.join(timeout=60)
            windows = self._windows
            for key, attr in (
                ("profile_start_s", "start_cost_s"),
                ("profile_stop_s", "stop_cost_s"),
                ("profile_decode_s", "decode_cost_s"),
            ):
                self.overhead[key] = sum(getattr(w, attr) for w in windows)
            self.overhead["profile_windows"] = float(len(windows))
            sch = self._schedule
            if sch is not None and not windows and self._writer is not None:
                self._writer.update_meta(
                    limitations=[
                        f"the run had {self._step} steps, fewer than the profiler window start "
                        f"({sch.first_step})"
                    ]
                )
            if self._samplers is not None:
                self._samplers.stop_all()
                errs = self._samplers.errors
                if errs and self._writer is not None:
                    self._writer.update_meta(
                        limitations=[
                            f"{self._samplers.error_count} sampler errors (first: {errs[0]}): "
                            "those signals have gaps"
                        ]
                    )
            if self._writer is not None:
                if abnormal:
                    self._writer.update_meta(
                        limitations=["training stopped early (exception or interrupt): partial run"]
                    )
                self._writer.close()
                self.diagnosis = self._diagnose()
                self._share()
                self.overhead["end_s"] = time.perf_counter() - t0
                if abnormal:
                    self._say(
                        f"gpudiag: training stopped early; partial trace at "
                        f"{self.trace_path} (gpudiag analyze {self.trace_path})"
                    )
                else:
                    self._report()
        except Exception as e:
            self._say(f"gpudiag: could not finish the diagnosis ({type(e).__name__}: {e})")
        finally:
            self._teardown()

    def _diagnose(self) -> Any:
        """From the writer's running summary: the same as ``gpudiag analyze`` of the file,
        at a cost that does not grow with the run's length."""
        from gpudiag.analyze import diagnose

        path = str(self.trace_path)
        writer = self._writer
        assert writer is not None
        if not writer.failed and not os.path.exists(path):
            self._say(
                f"gpudiag: {path} vanished during the run; the report below is "
                "from what was recorded in memory"
            )
        return diagnose([writer.summary(path)])

    def _share(self) -> None:
        """The HTML page and the TensorBoard scalars, each failing on its own."""
        if self.diagnosis is None:
            return
        if self.html:
            from gpudiag.show.html import write_html

            problem = write_html(self.diagnosis, self.html)
            if problem:
                self._say(f"gpudiag: {self.html}: {problem}")
        for log_dir, steps_per_epoch in self._find_tensorboard():
            try:
                from gpudiag.show.tensorboard import write_summaries

                write_summaries(log_dir, self.diagnosis, steps_per_epoch)
            except Exception as e:
                self._say(
                    f"gpudiag: no TensorBoard summaries in {log_dir} ({type(e).__name__}: {e})"
                )

    def _report(self) -> None:
        verbose = (self.params or {}).get("verbose", 1)
        wanted = self.report if self.report is not None else verbose != 0
        if self.quiet or self.diagnosis is None or not wanted:
            return
        info = self.rank_info
        if info.multi_worker and info.rank != 0 and self.report is None:
            folder = os.path.dirname(str(self.trace_path)) or "."
            self._say(
                f"gpudiag: rank {info.rank} of {info.world_size}: trace at "
                f"{self.trace_path}; rank 0 prints the report (whole run: "
                f"gpudiag analyze {folder})"
            )
            return
        from rich.console import Console

        from gpudiag.show.report import render_report

        console = Console()
        console.print(render_report(self.diagnosis, width=console.width))
        console.print(
            f"trace: {self.trace_path}  (gpudiag analyze {self.trace_path})",
            style="bright_black",
            highlight=False,
            markup=False,
        )
        if self.html:
            console.print(
                f"HTML report: {self.html}", style="bright_black", highlight=False, markup=False
            )


def _atexit_finish(ref: weakref.ReferenceType[DiagnoseCallback]) -> None:
    cb = ref()
    if cb is not None and cb._running:
        with contextlib.suppress(Exception):
            cb._finish(abnormal=True)
