"""The ``args`` of an XSpace event as xprof writes them, decoded from its stats when read.

Each stat becomes ``args[stat name] = value as text`` (xprof's ``XStatVisitor::ToString``:
integers in decimal, doubles with six significant digits, a ``ref_value`` as the name of the
stat metadata it points at, bytes as ``<opaque bytes>``), the event metadata's stats first
and the event's own after them; xprof's internal stats are left out.

Decoding a stat costs about a microsecond and a host event carries five; most events' args
are never read (a reader looks at those of device kernels, ops and tf.data), so each event
gets a ``LazyArgs``: a dict that decodes its stats on the first read of any kind.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# xprof's IsInternalEvent (tsl/profiler/utils/xplane_schema.cc)
INTERNAL_EVENTS = frozenset(
    {
        "MemoryAllocation",
        "MemoryDeallocation",
        "PrefetchProduce",
        "PrefetchConsume",
        "ParallelInterleaveProduce",
        "ParallelInterleaveConsume",
        "ParallelInterleaveInitializeInput",
        "ParallelMapProduce",
        "ParallelMapConsume",
        "MapAndBatchProduce",
        "MapAndBatchConsume",
        "ParseExampleProduce",
        "ParseExampleConsume",
    }
)
# xprof's IsInternalStat (same file)
INTERNAL_STATS = frozenset({"_pt", "_p", "_ct", "_c", "_r", "flops", "program_id", "symbol_id"})
STEP_NAME = "step_name"


def stat_text(stat: Any, stat_names: dict[int, str]) -> str | None:
    """A stat's value as xprof's ``XStatVisitor::ToString`` writes it; None when unset."""
    kind = stat.WhichOneof("value")
    if kind == "int64_value":
        return str(stat.int64_value)
    if kind == "str_value":
        return str(stat.str_value)
    if kind == "uint64_value":
        return str(stat.uint64_value)
    if kind == "ref_value":
        return stat_names.get(stat.ref_value, "")
    if kind == "double_value":
        return format(stat.double_value, ".6g")  # absl::StrCat(double): six digits
    if kind == "bytes_value":
        return "<opaque bytes>"
    return None


def add_stats(stats: Any, stat_names: dict[int, str], args: dict[str, str]) -> str | None:
    """Add the stats to ``args``; returns the ``step_name`` stat's value, if any (xprof
    names the event after it)."""
    step = None
    for stat in stats:
        key = stat_names.get(stat.metadata_id, "")
        if key in INTERNAL_STATS:
            continue
        value = stat_text(stat, stat_names)
        if value is None:
            continue
        if key == STEP_NAME:
            step = value
        args[key] = value
    return step


class LazyArgs(dict):  # type: ignore[type-arg]
    """An event's args: the metadata's (already text), then the event's stats, decoded on
    the first read. Every Python-level read (``get``, ``[]``, ``in``, iteration, ``len``,
    ``dict(args)``, ``pickle``) decodes first, so it behaves as the dict xprof gives; a C
    serializer that reads a dict's storage directly (``json.dumps``, ``orjson``) sees it empty
    until then: write ``dict(args)``."""

    __slots__ = ("_source",)
    # the metadata's args, the event's stats, the plane's stat names
    _source: tuple[dict[str, str], Any, dict[int, str]] | None

    def _fill(self) -> None:
        if self._source is not None:
            (base, stats, names), self._source = self._source, None
            dict.update(self, base)
            add_stats(stats, names, self)

    def get(self, key: Any, default: Any = None) -> Any:
        self._fill()
        return dict.get(self, key, default)

    def __getitem__(self, key: Any) -> Any:
        self._fill()
        return dict.__getitem__(self, key)

    def __contains__(self, key: object) -> bool:
        self._fill()
        return dict.__contains__(self, key)

    def __iter__(self) -> Iterator[Any]:
        self._fill()
        return dict.__iter__(self)

    def __len__(self) -> int:
        self._fill()
        return dict.__len__(self)

    def keys(self) -> Any:
        self._fill()
        return dict.keys(self)

    def values(self) -> Any:
        self._fill()
        return dict.values(self)

    def items(self) -> Any:
        self._fill()
        return dict.items(self)

    def copy(self) -> dict[str, str]:
        self._fill()
        return dict(dict.items(self))

    def __eq__(self, other: object) -> bool:
        self._fill()
        if isinstance(other, LazyArgs):
            other._fill()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        self._fill()
        return dict.__repr__(self)

    def __reduce__(self) -> Any:
        return (dict, (self.copy(),))


def lazy_args(base: dict[str, str], stats: Any, stat_names: dict[int, str]) -> LazyArgs:
    """``base`` (copied) and then ``stats``, decoded on the first read."""
    args = LazyArgs()
    args._source = (base, stats, stat_names)
    return args
