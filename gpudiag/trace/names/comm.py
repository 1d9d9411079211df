"""Which device events are communication: one table for every reader.

Collective and point-to-point libraries name their kernels and ops differently (NCCL/RCCL
kernels, DeepEP expert-parallel all-to-all, NVSHMEM, multimem all-reduce, XLA HLO
collectives, TensorFlow collective ops, ...). ``classify`` walks ``COMM_TABLE`` top to bottom
and returns the first row whose pattern matches, so specific rows come before generic ones.
Names repeat by the thousand in a trace: callers cache the answer per name.

    classify("void dpsk::ep::internode::combine<false, 8>(...)")
    # Comm(library='DeepEP', op='combine')
    classify("all-reduce-start.3")   # Comm(library='XLA', op='all-reduce')
    classify("volta_sgemm_128x64_nn")  # None
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from gpudiag.trace.names.name_scan import Scan, scanned


@dataclass(frozen=True)
class Comm:
    library: str
    op: str


@dataclass(frozen=True)
class CommRow:
    """``op`` is a fixed label, or None to take the pattern's first group as the op;
    ``scan.needles``: literals one of which every match holds (``name_scan``)."""

    scan: Scan
    library: str
    op: str | None


def _row(
    pattern: str,
    library: str,
    op: str | None = None,
    flags: int = 0,
    needles: tuple[str, ...] = (),
) -> CommRow:
    return CommRow(Scan(re.compile(pattern, flags), needles), library, op)


_I = re.IGNORECASE

# Ordered: the first match wins. Sources of the names: NCCL/RCCL device kernels
# (ncclKernel_*/ncclDevKernel_*), DeepEP csrc/kernels (deep_ep::{intranode,internode,
# internode_ll}::dispatch/combine/notify_dispatch/cached_notify; DeepSeek's own traces spell
# the namespace dpsk::ep, and dpsk::ep::cuda::get_dispatch_layout is a local layout kernel,
# not communication), AMD MoRI (EpDispatch*/EpCombine* kernels), XLA HLO opcodes as xprof
# names them (all-reduce.3, all-gather-start.1, collective-permute-done, send.2, ...), JAX
# primitive names in op scopes (psum, all_gather, ppermute), TensorFlow collective ops.
COMM_TABLE: tuple[CommRow, ...] = (
    _row(
        r"(?<![\w:])(?:dpsk::ep|deep_ep)::(?:internode_ll|internode|intranode)::(\w+)",
        "DeepEP",
        needles=("dpsk::ep::", "deep_ep::"),
    ),
    _row(r"\bEp(Dispatch|Combine)\w*Kernel", "MoRI", needles=("epdispatch", "epcombine")),
    _row(r"multimem", "multimem (NVLS)", "all-reduce", _I, ("multimem",)),
    _row(r"nvshmem", "NVSHMEM", "one-sided", _I, ("nvshmem",)),
    _row(r"msccl", "MSCCL", "collective", _I, ("msccl",)),
    _row(r"rccl", "RCCL", "collective", _I, ("rccl",)),
    _row(r"nccl(?:Dev)?Kernel_([A-Za-z]+)", "NCCL", needles=("nccl",)),
    _row(r"nccl", "NCCL", "collective", _I, ("nccl",)),
    _row(r"userbuffers", "Transformer Engine userbuffers", "collective", _I, ("userbuffers",)),
    _row(
        r"cross_device_reduce|(?:one|two)_shot_all_reduce|custom_?all_?reduce",
        "custom all-reduce",
        "all-reduce",
        _I,
        ("cross_device_reduce", "shot_all_reduce", "custom"),
    ),
    _row(r"gloo", "gloo", "collective", _I, ("gloo",)),
    _row(  # anchored at the start: cheap on any name
        r"^%?(all-reduce|all-gather|reduce-scatter|ragged-all-to-all|all-to-all|"
        r"collective-permute|collective-broadcast|send|recv)(?:-start|-done)?(?:[.\d]*)$",
        "XLA",
    ),
    _row(
        r"(?<=/)(psum|pmean|pmax|pmin|all_gather|psum_scatter|ppermute|all_to_all)(?![\w])",
        "XLA",
        needles=("/psum", "/pmean", "/pmax", "/pmin", "/all_gather", "/ppermute", "/all_to_all"),
    ),
    _row(r"^(Collective(?:Reduce|Gather|Bcast|AllToAll|Permute)\w*)", "TensorFlow"),
    _row(r"Horovod(\w+)", "Horovod", needles=("horovod",)),
    _row(
        r"(all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|alltoall)",
        "other",
        None,
        _I,
        (
            "allreduce",
            "all_reduce",
            "allgather",
            "all_gather",
            "reducescatter",
            "reduce_scatter",
            "alltoall",
            "all_toall",
            "allto_all",
            "all_to_all",
        ),
    ),
)

# Async XLA collectives: the *-start op issues the transfer, the *-done op waits for it.
ASYNC_RE = re.compile(r"-(start|done)(?:[.\d]*)$")


def classify(name: str) -> Comm | None:
    """The library and operation a device event name belongs to, or None if it computes
    (read off the name's first ``name_scan.SCAN_CHARS`` characters)."""
    return _classify(scanned(name))


@lru_cache(maxsize=8192)  # keys of at most SCAN_CHARS: 32 Mi characters at most
def _classify(head: str) -> Comm | None:
    low = head.lower()
    for row in COMM_TABLE:
        m = row.scan.search(head, low)
        if m is None:
            continue
        op = row.op if row.op is not None else (m.group(1) if m.groups() else "collective")
        return Comm(row.library, op)
    return None


# Device events that move data without computing, whatever the runtime: CUDA/HIP
# device-to-device and peer copies and memsets (Kineto "Memcpy DtoD (Device -> Device)",
# "Memset (Device)"; TF GPU streams "MemcpyD2D", "MemcpyP2P", "Memset"), and XLA's async
# copies ``copy-start``/``copy-done`` (TPU host offload and memory-space moves; xprof
# categorises them "async-copy"). A synchronous XLA ``copy`` is a layout change the device
# computes: it stays compute.
COPY_RE = re.compile(
    r"^%?copy-(?:start|done)(?:[.\d]*)$|Memcpy ?(?:DtoD|D2D|PtoP|P2P)|^Memset|^memset\b"
)
COPY_SCAN = Scan(COPY_RE, ("copy-", "memcpy", "memset"))
COPY_CATEGORIES = frozenset({"async-copy"})


def is_copy(name: str, category: str = "") -> bool:
    """Whether a device event only moves data (``category``: xprof's ``hlo_category``)."""
    return category in COPY_CATEGORIES or _is_copy(scanned(name))


@lru_cache(maxsize=8192)
def _is_copy(head: str) -> bool:
    return COPY_SCAN.search(head, head.lower()) is not None


def classify_op(name: str, category: str = "") -> Comm | None:
    """``classify`` of an XLA op, falling back on xprof's ``hlo_category`` ("all-reduce",
    "all-gather", ...) when the op's own name does not say (fusions, renamed ops)."""
    return classify(name) or (classify(category) if category else None)


def async_phase(name: str) -> str | None:
    """ "start" / "done" for an async XLA collective half, else None."""
    m = ASYNC_RE.search(name)
    return m.group(1) if m else None
