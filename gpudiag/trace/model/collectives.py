"""Collectives whose size the trace records: what, how many bytes, over how many ranks, when.

PyTorch (>= 2.1) records each collective's parameters on the ``record_param_comms`` CPU op
and copies them onto the NCCL/RCCL kernel it launched (``Collective name``, ``In msg
nelems``, ``Out msg nelems``, ``dtype``, ``Group size``); older releases keep them on the op
only, which shares its ``External id`` with the kernel (Kineto's link from an op to the
launches and kernels it caused). The Kineto reader feeds a ``SizedCollectives`` and stores
what it took on ``Timeline.collectives``:

    sizes = SizedCollectives()
    sizes.op_params(ext_id, args)                 # a record_param_comms op
    sizes.kernel(ts, dur, "GPU 0", args, ext_id)  # a communication kernel
    tl.collectives = sizes.take()
    tl.collectives.nbytes                        # the message, in the nccl-tests sense

The message size is the nccl-tests one: the whole buffer an all-reduce reduces, the gathered
output of an all-gather, the scattered input of a reduce-scatter, one rank's send buffer of
an all-to-all: the larger of the input and output element counts, times the element size.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

MAX_OPS = 200_000  # collectives kept per trace: a long profile has thousands, not millions
MAX_PENDING = 50_000  # kernels waiting for their op's parameters (older PyTorch)

# element sizes: PyTorch's dtype names (c10 ScalarType names as record_param_comms spells
# them), with the NumPy and XLA spellings of the same types
DTYPE_BYTES: dict[str, int] = {
    "float": 4,
    "float32": 4,
    "f32": 4,
    "double": 8,
    "float64": 8,
    "f64": 8,
    "half": 2,
    "float16": 2,
    "f16": 2,
    "bfloat16": 2,
    "bf16": 2,
    "long": 8,
    "int64": 8,
    "s64": 8,
    "u64": 8,
    "int": 4,
    "int32": 4,
    "s32": 4,
    "u32": 4,
    "short": 2,
    "int16": 2,
    "s16": 2,
    "char": 1,
    "byte": 1,
    "int8": 1,
    "uint8": 1,
    "s8": 1,
    "u8": 1,
    "bool": 1,
    "pred": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "f8e4m3fn": 1,
    "f8e5m2": 1,
}

# collective names as PyTorch's c10d and NCCL kernels spell them -> one word per operation
_OPS = {
    "allreduce": "all-reduce",
    "all_reduce": "all-reduce",
    "allreduce_coalesced": "all-reduce",
    "allgather": "all-gather",
    "all_gather": "all-gather",
    "_allgather_base": "all-gather",
    "allgather_into_tensor_coalesced": "all-gather",
    "all_gather_into_tensor": "all-gather",
    "reduce_scatter": "reduce-scatter",
    "reducescatter": "reduce-scatter",
    "_reduce_scatter_base": "reduce-scatter",
    "reduce_scatter_tensor": "reduce-scatter",
    "reduce_scatter_tensor_coalesced": "reduce-scatter",
    "alltoall": "all-to-all",
    "all_to_all": "all-to-all",
    "alltoall_base": "all-to-all",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "send": "send",
    "recv": "recv",
    "sendrecv": "send",
    "gather": "gather",
    "scatter": "scatter",
}
OPERATIONS = tuple(sorted(set(_OPS.values())))


def operation(name: object) -> str | None:
    """One word for a collective name ("allreduce", "_allgather_base" -> "all-reduce",
    "all-gather"); None for what moves no sized message (barrier, wait, unknown)."""
    if not isinstance(name, str):
        return None
    return _OPS.get(name.strip().lower().replace("-", "_"))


def element_bytes(dtype: object) -> int | None:
    if not isinstance(dtype, str):
        return None
    return DTYPE_BYTES.get(dtype.strip().lower().removeprefix("torch."))


def _int(x: object) -> int | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, str) and x.strip().isdigit():
        return int(x.strip())
    return None


@dataclass(frozen=True)
class Params:
    """One collective's parameters: operation, message bytes, ranks in its group."""

    op: str
    nbytes: int
    group: int | None


def params_of(args: object) -> Params | None:
    """The sized collective an event's args describe (Kineto's record_param_comms keys),
    None when they do not name one with a size."""
    if not isinstance(args, dict):
        return None
    op = operation(args.get("Collective name"))
    size = element_bytes(args.get("dtype"))
    n_in, n_out = _int(args.get("In msg nelems")), _int(args.get("Out msg nelems"))
    if op is None or size is None or (n_in is None and n_out is None):
        return None
    nelems = max(n_in or 0, n_out or 0)
    if nelems <= 0:
        return None
    group = _int(args.get("Group size"))
    return Params(op, nelems * size, group if group and group > 0 else None)


@dataclass
class CollectiveOps:
    """Sized collectives of one rank, in start order (µs; bytes; ranks, 0 where unknown)."""

    op: list[str] = field(default_factory=list)
    start: np.ndarray = field(default_factory=lambda: np.zeros(0))
    end: np.ndarray = field(default_factory=lambda: np.zeros(0))
    nbytes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    group: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    device: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return int(self.start.size)

    @property
    def durations(self) -> np.ndarray:
        return self.end - self.start


class SizedCollectives:
    """Collects sized collectives while a reader streams; bounded (``MAX_OPS``)."""

    def __init__(self) -> None:
        self._rows: list[tuple[str, float, float, int, int, str]] = []
        self._by_ext: dict[int, Params] = {}  # record_param_comms op -> its parameters
        self._pending: list[tuple[int, float, float, str]] = []  # kernels awaiting their op
        self.unsized = 0  # communication kernels whose size the trace does not give

    def op_params(self, ext_id: object, args: object) -> None:
        """A ``record_param_comms`` op: keep its parameters for its kernel."""
        p = params_of(args)
        ext = _int(ext_id)
        if p is not None and ext is not None and len(self._by_ext) < MAX_OPS:
            self._by_ext[ext] = p

    def kernel(self, ts: float, dur: float, device: str, args: object, ext_id: object) -> None:
        """A communication kernel; its size from its own args, else from its op's."""
        p = params_of(args)
        if p is not None:
            self._add(p, ts, ts + dur, device)
            return
        ext = _int(ext_id)
        if ext is not None and len(self._pending) < MAX_PENDING:
            self._pending.append((ext, ts, ts + dur, device))
        else:
            self.unsized += 1

    def _add(self, p: Params, start: float, end: float, device: str) -> None:
        if len(self._rows) < MAX_OPS:
            self._rows.append((p.op, start, end, p.nbytes, p.group or 0, device))

    def take(self) -> CollectiveOps:
        for ext, start, end, device in self._pending:
            p = self._by_ext.get(ext)
            if p is None:
                self.unsized += 1
            else:
                self._add(p, start, end, device)
        self._pending.clear()
        self._by_ext.clear()
        rows = sorted(self._rows, key=lambda r: r[1])
        self._rows = []
        if not rows:
            return CollectiveOps()
        return CollectiveOps(
            [r[0] for r in rows],
            np.array([r[1] for r in rows], dtype=np.float64),
            np.array([r[2] for r in rows], dtype=np.float64),
            np.array([r[3] for r in rows], dtype=np.int64),
            np.array([r[4] for r in rows], dtype=np.int64),
            [r[5] for r in rows],
        )
