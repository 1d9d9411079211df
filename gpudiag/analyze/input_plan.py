"""One plan for a starved input: what kind of work feeds the device, and the remedies that can
help that kind. Every input finding advises through here, so the report never holds two
contradicting input remedies. Pure.

Kinds of input work (``input_work``), chosen from stable signals — the run's configuration and
the host's CPU use — never from the input share alone, which swings run to run:

* ``python``: generator, PyDataset, or py_function/numpy_function inside tf.data, holding the
  GIL. Threads cannot run it in parallel (a parallel map over it measured 0.94×): it needs
  worker processes (PyDataset(workers, use_multiprocessing=True)) or a rewrite as TF ops.
* ``python-waiting``: Python input that mostly waits (file or network reads, sleeps): the
  process is far from one busy core. Threads help here: parallel map, thread workers.
* ``native``: tf.data of TF ops. TF runs them outside the GIL: a parallel map helps.

    for sug in input_remedies(situation): ...
"""

from __future__ import annotations

from gpudiag.analyze import worker_pool
from gpudiag.analyze.diagnosis import Suggestion
from gpudiag.analyze.evidence import Situation
from gpudiag.analyze.gain import Gain, at_most, removed
from gpudiag.analyze.input_arrays import array_remedies
from gpudiag.analyze.input_gain import cores_of, headroom, input_gain, input_work
from gpudiag.analyze.input_stage import STAGE_REMEDIES
from gpudiag.analyze.needs import Needs, OneOf

# PyDataset is a Keras class and fit is what consumes it
NEEDS = {
    "worker-processes": Needs(
        requires={"keras": OneOf(True)},
        check={"keras": "that Keras's fit consumes this input (the workers are a Keras feature)"},
    ),
    "prefetch": Needs(),
    "parallel-map": Needs(),
    "less-work-per-sample": Needs(),
    "inspect-input": Needs(),
    **{f"stage-{kind}": Needs() for kind in STAGE_REMEDIES},
}

# Below this capacity headroom (cores free / cores in use) more parallelism cannot help.
NO_HEADROOM = 1.1
# Multiprocessing workers pay pickling and IPC per batch: the share of their ideal speed-up
# kept (calibrated by benchmarks/fix_gains.py, docs/remedies.md).
PROCESS_EFFICIENCY = 0.85
# Python moved out of a tf.data py_function/numpy_function into worker processes also sheds
# the op's per-element call overhead (tensor conversion, GIL hand-off with TF's threads):
# measured here up to 1.15× a worker's plain share (docs/remedies.md).
PY_FUNCTION_SHED = 1.15
# what a worker remedy adds where the pool must be paid once per fit (worker_pool.py)
LONGER_EPOCHS = (
    " Keras starts the pool again every epoch, which these short epochs cannot repay: "
    "make num_batches return None (an endless PyDataset) and train in fewer, longer "
    "epochs (fit(steps_per_epoch=...))."
)


def _workers_remedy(s: Situation, kind: str) -> list[Suggestion]:
    cfg = s.config
    n = cores_of(s)
    have = cfg.workers or 1
    if cfg.input_kind == "pydataset" and cfg.use_multiprocessing and have >= n:
        return []  # already as parallel as the machine allows
    if n < 2:
        return []
    # per-worker speed: processes lose some to pickling and queues (PROCESS_EFFICIENCY); work
    # moved out of a tf.data py_function also sheds that op's per-element call overhead
    scale = 1.0 / max(1, have) if cfg.input_kind == "pydataset" else 1.0

    def gain_for(k: int) -> Gain:
        procs = f"{k} worker processes" + (f" (from {have})" if scale < 1.0 else "")
        if cfg.input_kind == "tf.data":
            return input_gain(
                s,
                k * PROCESS_EFFICIENCY * scale,
                k * PY_FUNCTION_SHED * scale,
                k * PY_FUNCTION_SHED * scale,
                f"{procs}, each also shedding the py_function's per-call overhead "
                f"(×{PY_FUNCTION_SHED:g} a plain worker's rate at best)",
            )
        return input_gain(
            s,
            k * PROCESS_EFFICIENCY * scale,
            k * PROCESS_EFFICIENCY * scale,
            k * scale,
            f"{procs} at {PROCESS_EFFICIENCY:.0%} of a core each (pickling, queues)",
        )

    # Keras starts the pool again every epoch: counted per epoch (worker_pool.py)
    n, g, longer = worker_pool.choose(s, n, have, gain_for)
    where = {
        "generator": "Replace the generator with a keras.utils.PyDataset whose __getitem__ "
        "builds one batch",
        "pydataset": _pydataset_now(cfg.workers, cfg.use_multiprocessing),
        "tf.data": "Move the Python step (py_function/numpy_function) out of tf.data into a "
        "keras.utils.PyDataset whose __getitem__ builds one batch",
    }.get(cfg.input_kind or "", "Produce batches in a keras.utils.PyDataset")
    longer_epochs = LONGER_EPOCHS if longer else ""
    return [
        g.suggestion(
            f"Run the Python input in {n} worker processes"
            + (", in fewer, longer epochs" if longer else ""),
            f"{where}: PyDataset(workers={n}, use_multiprocessing=True). "
            + _why_processes(s, kind)
            + longer_epochs,
            _finding(s, "python-generator", "gil-pressure", "input-wait"),
            "worker-processes",
        )
    ]


def _pydataset_now(workers: int | None, processes: bool | None) -> str:
    """How Keras runs the user's PyDataset today: inline (no workers), threads or processes."""
    if not workers or (workers <= 1 and not processes):
        return "Keras runs your PyDataset inline, on the training thread (workers=1)"
    return f"Your PyDataset runs {workers} worker " + ("processes" if processes else "threads")


def _why_processes(s: Situation, kind: str) -> str:
    if kind == "python-waiting":
        own = s.host.own_cores()
        busy = f" (this run keeps {own:.2f} cores busy)" if own is not None else ""
        return (
            f"The Python step mostly waits{busy}, which releases the GIL, so threads run it in "
            "parallel too; processes also keep its CPU work off the training process."
        )
    return (
        "Python code holds the GIL, so threads (parallel map, thread workers) cannot run it "
        "in parallel; processes can."
    )


def _parallel_map_remedy(s: Situation) -> list[Suggestion]:
    cfg = s.config
    if not cfg.sequential_maps:
        return []  # every map already parallel (or no map at all)
    n = cores_of(s)
    if n < 2:
        return []
    waiting = input_work(s) == "python-waiting"
    g = input_gain(s, n, n, n, f"{n} parallel calls")
    why = (
        "The Python in it mostly waits (a sleep or a read releases the GIL), so calls overlap."
        if waiting
        else "TF ops run outside the GIL, so the map spreads over them."
    )
    return [
        g.suggestion(
            "Parallelise the tf.data map",
            f"ds.map(fn, num_parallel_calls=tf.data.AUTOTUNE): {cfg.sequential_maps} map(s) now "
            f"run one element at a time; this run has {n} cores. {why}",
            _finding(s, "sequential-map", "input-wait"),
            "parallel-map",
        )
    ]


def _prefetch_remedy(s: Situation) -> list[Suggestion]:
    cfg = s.config
    if cfg.prefetch or cfg.root_prefetch is not False:
        return []  # TF injects a root prefetch unless told not to: nothing to overlap
    inp = s.shares["input"]
    overlap = min(inp, 1.0 - inp)
    g = Gain.of(
        removed(overlap),
        1.0,
        removed(overlap),
        f"up to the overlap of input ({inp:.0%}) with compute",
    )
    return [
        g.suggestion(
            "Prefetch so input overlaps compute",
            "End the pipeline with ds.prefetch(tf.data.AUTOTUNE): the pipeline has no prefetch "
            "and TensorFlow's automatic one is off.",
            "no-prefetch",
            "prefetch",
        )
    ]


def _processes_in_place(s: Situation) -> bool:
    """The Python input already runs in as many worker processes as the machine has cores:
    the remedy the worker rules give is the run's own configuration."""
    cfg = s.config
    pool = cfg.input_kind == "pydataset" and bool(cfg.use_multiprocessing)
    return pool and (cfg.workers or 1) >= cores_of(s)


def _less_work_remedy(s: Situation, head: float | None) -> list[Suggestion]:
    inp = s.shares["input"]
    g = at_most(
        inp,
        "not estimated: depends on how much per-sample work "
        f"you remove; removing all of it would be worth {removed(inp):.2f}×",
    )
    cache = (
        "" if s.config.cache else "cache decoded samples (ds.cache()) before random augmentation, "
    )
    if _processes_in_place(s):
        cfg = s.config
        why = (
            f"The input already runs in {cfg.workers} worker processes on {cores_of(s)} cores "
            "(PyDataset(use_multiprocessing=True)), so more workers cannot help"
        )
        more = "; or train on a machine with more cores for the workers"
    else:
        why = (
            f"The CPU has no headroom (at most {head or 1.0:.2f}× more available), so more "
            "parallelism cannot help"
        )
        more = ""
    return [
        g.suggestion(
            "Do less CPU work per sample",
            f"{why}: {cache}pre-resize or pre-decode data offline, return compact dtypes "
            "(uint8 images) and fewer copies per batch, or move augmentation into the model "
            f"(Keras preprocessing layers) where it runs with compute{more}.",
            _finding(s, "cpu-saturated", "input-wait"),
            "less-work-per-sample",
        )
    ]


def _unknown_remedy(s: Situation) -> list[Suggestion]:
    inp = s.shares["input"]
    g = at_most(
        inp,
        "not estimated: the trace does not show what the input "
        f"pipeline runs; removing the whole wait ({inp:.0%}) would be worth "
        f"{removed(inp):.2f}×",
    )
    return [
        g.suggestion(
            "Find out what the input pipeline spends its time on",
            "Record the run with DiagnoseCallback(dataset=...) so gpudiag sees the pipeline; then: "
            "native TF ops -> map(num_parallel_calls=AUTOTUNE); Python code -> "
            "PyDataset(workers, use_multiprocessing=True); file reads -> interleave + cache.",
            _finding(s, "input-wait"),
            "inspect-input",
        )
    ]


def _stage_remedy(s: Situation) -> list[Suggestion]:
    """The remedy for the tf.data stage that holds the input time (a TF profile shows it)."""
    cfg = s.config
    kind = cfg.input_stage or ""
    if kind == "map-sequential" and cfg.sequential_maps == 0:
        kind = "map"  # the run's own maps are parallel (RunConfig): not this remedy
    text = STAGE_REMEDIES.get(kind)
    if text is None:
        return []
    title, detail, model = text
    n = cores_of(s)
    inp = s.shares["input"]
    if model == "cores":
        g = input_gain(s, n, n, n, f"{n} parallel calls")
    elif model == "processes":
        have = cfg.workers or 1
        if cfg.input_kind == "pydataset" and cfg.use_multiprocessing and have >= n:
            return []  # already as many worker processes as the machine has cores

        def gain_for(k: int) -> Gain:
            return input_gain(
                s,
                k * PROCESS_EFFICIENCY,
                k * PROCESS_EFFICIENCY,
                k,
                f"{k} worker processes at {PROCESS_EFFICIENCY:.0%} of a core each "
                "(pickling, queues)",
            )

        # Keras starts the pool again every epoch: counted per epoch (worker_pool.py)
        n, g, longer = worker_pool.choose(s, n, have, gain_for)
        if longer:
            detail += LONGER_EPOCHS
    else:
        g = at_most(
            inp,
            f"not estimated: depends on how much of the stage's work goes; removing the "
            f"whole input wait ({inp:.0%}) would be worth {removed(inp):.2f}×",
        )
    detail = detail.replace("{stage}", cfg.input_stage_name or "tf.data").replace(
        "workers=N", f"workers={max(2, n)}"
    )
    finding = "sequential-map" if kind == "map-sequential" else "input-wait"
    return [g.suggestion(title, detail, _finding(s, finding, "input-wait"), f"stage-{kind}")]


def _finding(s: Situation, *ids: str) -> str:
    return next((i for i in ids if s.has(i)), ids[-1])


def input_remedies(s: Situation) -> list[Suggestion]:
    """The remedies for a starved input, chosen by the kind of input work."""
    if s.config.input_kind == "dataloader" or s.has("dataloader-in-main-process"):
        return []  # PyTorch: the DataLoader rule advises
    kind = input_work(s)
    head = headroom(s)
    if head is not None and head < NO_HEADROOM and kind != "python-waiting":
        return _less_work_remedy(s, head)
    if _processes_in_place(s) and kind == "python":
        return _less_work_remedy(s, head)  # the worker remedy is what the run already does
    out = _prefetch_remedy(s)
    stage = _stage_remedy(s)
    if stage:  # the profile shows where the input time goes: aim there
        return out + stage
    if kind == "python":
        out += _workers_remedy(s, kind)
    elif kind == "python-waiting":
        out += _parallel_map_remedy(s) + _workers_remedy(s, kind)
    elif kind == "native":
        out += _parallel_map_remedy(s)
    elif kind == "array":
        out += array_remedies(s, _finding(s, "input-wait"))
    else:
        out += _unknown_remedy(s)
    return out
