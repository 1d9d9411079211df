"""What a TensorFlow / JAX trace-viewer lane and host event name are, read from names alone.

Lanes (pid, tid) are device streams, derived device lines ("Steps", "XLA Ops"), host threads
(``python``, ``tf_Compute/…``, Eigen pools, ``collective_ops/…``). Host event names are step
markers, step functions, input waits, or ops. Input waits are counted the way xprof's
input-pipeline analysis counts them (``xplane_to_step_events.cc``: a host event whose name
starts with ``IteratorGetNext``, case aside, waits for input): the iterator's own
``IteratorGetNextOp::DoCompute``, the op ``IteratorGetNext``, its outputs handed to the
device (``IteratorGetNext/_N:_Send`` / ``_Recv``), and MirroredStrategy's
``MultiDeviceIteratorGetNextFromShard``. Trace-viewer JSON names an op by its type
(``_Send``) and keeps the full name in ``args.long_name``, so both are asked.

    role, device, tag, eigen, tf_data = lane(doc, pid, tid)
    kind, step, marker, collective, iterator, training = name_info("IteratorGetNextOp::DoCompute")
"""

from __future__ import annotations

import re
from typing import Any

from gpudiag.trace.model.steps_infer import is_marker
from gpudiag.trace.model.timeline import Kind
from gpudiag.trace.names.comm import classify, is_copy
from gpudiag.trace.names.facts import is_inference_name, is_training_name
from gpudiag.trace.source.chrome import ChromeDoc
from gpudiag.trace.tf.viewer.host_work import is_host_work

DEVICE_RE = re.compile(r"^/device:(GPU|TPU|CPU):(\d+)")
STREAM_KIND_RE = re.compile(r"\((Compute|MemcpyH2D|MemcpyD2H|MemcpyD2D|Memset|MemcpyP2P)\)")
DERIVED_LINES = frozenset(
    {
        "Steps",
        "TensorFlow Name Scope",
        "TensorFlow Ops",
        "XLA Ops",
        "XLA Modules",
        "Launch Stats",
        "Framework Name Scope",
        "Framework Ops",
        "Source code",
        "Async XLA Ops",
        "SparseCore",
        "XLA TraceMe",
    }
)
INPUT_WAIT_NAMES = (
    "IteratorGetNextOp::DoCompute",
    "IteratorGetNextAsOptionalOp::DoCompute",
    "MultiDeviceIteratorGetNextFromShard",
)
REPLICA_RE = re.compile(r"(?:^|/)replica_(\d+)/")
STEP_MARKER_RE = re.compile(r"^train (\d+)$")
STEP_FUNCTIONS = ("multi_step_on_iterator", "one_step_on_iterator", "train_function")
MODULE_ID_RE = re.compile(r"\(\d+\)$")  # "jit_train_step(12)" -> "jit_train_step"
JAX_MODULE_PREFIXES = ("jit_", "pjit_", "pmap_", "xmap_", "shard_map")
STEP_ADVICE_TF = (
    "wrap each step in tf.profiler.experimental.Trace('train', step_num=i, _r=1) for exact steps"
)
STEP_ADVICE_JAX = (
    "wrap each step in jax.profiler.StepTraceAnnotation('train', step_num=i) for exact steps"
)
# ops of the iterator whose time xprof counts as input wait: names starting with
# "IteratorGetNext" (its outputs handed to the device: "IteratorGetNext/_3:_Send"); the
# trace viewer names an op by its type, so these types are asked for their long name
HANDOFF_TYPES = frozenset({"_Send", "_Recv", "_HostSend", "_HostRecv", "IteratorGetNext"})
HANDOFF_NUMBER_RE = re.compile(r"/_\d+:")


def looks_like_tf(doc: ChromeDoc) -> bool:
    names = doc.process_names.values()
    return any(n.startswith(("/host:", "/device:")) for n in names)


def device_name(proc: str) -> str | None:
    m = DEVICE_RE.match(proc)
    return f"{m.group(1)} {m.group(2)}" if m else None


def stream_kind(tag: str, event: str) -> Kind:
    """The kind of a device stream event; ``tag`` is its stream's ``(MemcpyH2D)``-like tag."""
    if classify(event) is not None:
        return Kind.COLLECTIVE
    if tag == "MemcpyH2D" or event in ("MemcpyH2D", "MemcpyHToD"):
        return Kind.H2D
    if tag == "MemcpyD2H" or event in ("MemcpyD2H", "MemcpyDToH"):
        return Kind.D2H
    return Kind.COPY if tag in COPY_TAGS or is_copy(event) else Kind.COMPUTE


COPY_TAGS = frozenset({"MemcpyD2D", "MemcpyP2P", "Memset"})


# what a (pid, tid) lane is, from its process and thread names
SKIP, HOST, TF_COMPUTE, SHARDS, COLL_OPS, STEPS, MODULES, XLA_OPS, DERIVED, STREAM = range(10)
Lane = tuple[int, str, str, bool, bool]  # role, device, stream tag, Eigen pool, tf.data


def lane(doc: ChromeDoc, pid: Any, tid: Any) -> Lane:
    proc = doc.process_names.get(pid, "")
    thread = doc.thread_names.get((pid, tid), "")
    device = device_name(proc)
    eigen = "Eigen" in thread
    if device is not None:
        role = {"Steps": STEPS, "XLA Modules": MODULES, "XLA Ops": XLA_OPS}.get(thread)
        if role is None:
            role = DERIVED if thread in DERIVED_LINES else STREAM
        m = STREAM_KIND_RE.search(thread)
        return role, device, m.group(1) if m else "", eigen, False
    if not proc.startswith("/host:"):
        role = SKIP
    elif thread.startswith("tf_Compute"):
        role = TF_COMPUTE
    elif eigen or thread.startswith("tf_XLA"):
        role = SHARDS
    elif thread.startswith("collective_ops"):
        role = COLL_OPS
    else:
        role = HOST
    return role, "", "", eigen, thread.startswith("tf_data")


# what a host event's name makes it, whatever its thread
OTHER, INPUT, STEP, STEP_FUNCTION, KERAS_NEXT, HOST_WORK = range(6)

# Keras 3's data adapters as the Python tracer names their frames ("$array_data_adapter.py:251
# slice_and_convert_to_jax"): which input the user gave fit (RunConfig.input_kind)
KERAS_ADAPTERS = (
    ("array_data_adapter", "array"),
    ("py_dataset_adapter", "pydataset"),
    ("generator_data_adapter", "generator"),
    ("tf_dataset_adapter", "tf.data"),
    ("torch_data_loader_adapter", "dataloader"),
)


def is_keras_adapter(name: str) -> bool:
    """A frame of Keras's data adapters (array_data_adapter, py_dataset_adapter, ...)."""
    return "data_adapter" in name or "dataset_adapter" in name or "loader_adapter" in name


def keras_input(name: str) -> str | None:
    """The input kind a Keras data-adapter frame names, None for any other name."""
    for module, kind in KERAS_ADAPTERS:
        if module in name:
            return kind
    return None


# kind, step number, marker, collective, pipeline, training evidence, inference evidence,
# maybe an op of the iterator (``input_op`` decides)
NameInfo = tuple[int, int, bool, bool, bool, bool, bool, bool]
MAX_CACHED_NAMES = 16_384  # host op names repeat; step markers ("train 12") are not cached


def name_info(name: str) -> NameInfo:
    """What a host event's name makes it (``NameInfo``). A step marker ("train 12", one per
    step and never cached) is answered first: "train" and digits name no marker, needle or
    op of the iterator (``classified`` asks, and says the same; asking cost a fifth of
    reading a TF trace of short steps)."""
    if (m := STEP_MARKER_RE.match(name)) is not None:
        return (STEP, int(m.group(1)), False, False, False, False, False, False)
    return classified(name)


def classified(name: str) -> NameInfo:
    """``name_info`` with every question asked."""
    step = 0
    if name in INPUT_WAIT_NAMES or name.startswith("MultiDeviceIteratorGetNextFromShard"):
        kind = INPUT
    elif (m := STEP_MARKER_RE.match(name)) is not None:
        kind, step = STEP, int(m.group(1))
    elif name in STEP_FUNCTIONS:
        kind = STEP_FUNCTION
    elif name == "$builtins next" or (name.startswith("$") and is_keras_adapter(name)):
        kind = KERAS_NEXT  # JAX / torch backends: Keras pulls each batch in Python
    elif is_host_work(name):
        kind = HOST_WORK  # a compilation or an op run eagerly (host_work.py)
    else:
        kind = OTHER
    return (
        kind,
        step,
        is_marker(name),
        # only an OTHER name on a collective_ops thread is asked (step markers are unique:
        # classifying each would cost most of their reading)
        kind == OTHER and classify(name) is not None,
        name.startswith("Iterator::"),
        is_training_name(name),
        is_inference_name(name),
        kind == OTHER and (name in HANDOFF_TYPES or name[:15].lower() == "iteratorgetnext"),
    )


def input_op(name: str, args: Any) -> str | None:
    """The name an op of the iterator waits in, or None when the event is not one: xprof
    counts a host event whose name starts with ``IteratorGetNext`` as input wait, unless it
    launches device work (it has a correlation id: kernel-launch time, not a wait)."""
    long_name = args.get("long_name") if isinstance(args, dict) else None
    full = long_name if isinstance(long_name, str) else name
    if full[:15].lower() != "iteratorgetnext":
        return None
    if isinstance(args, dict) and "correlation_id" in args:
        return None
    return HANDOFF_NUMBER_RE.sub("/_N:", full[:80])


def step_number(name: str, args: Any, default: int) -> int:
    """A device step's number: its group id (xprof's step), else a number in its name
    ("0", "EagerKernelExecute 0"), else ``default``."""
    group = args.get("group_id") if isinstance(args, dict) else None
    for text in (group, name.rpartition(" ")[2]):
        if isinstance(text, int):
            return text
        if isinstance(text, str) and text.isdigit():
            return int(text)
    return default


def replica_of(long_name: str) -> int:
    m = REPLICA_RE.search(long_name)
    return int(m.group(1)) if m else 0
