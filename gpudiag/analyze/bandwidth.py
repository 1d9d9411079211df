"""How fast the collectives move their bytes, against the link they run over. Pure.

For every collective whose size the trace records (``Timeline.collectives``) the algorithm
bandwidth is bytes / time and the bus bandwidth applies the nccl-tests factor of its
operation (doc/PERFORMANCE.md there): all-reduce 2(n-1)/n, all-gather, reduce-scatter and
all-to-all (n-1)/n, broadcast, reduce and point-to-point 1, with n the ranks in its group.
Bus bandwidth is then comparable with the link's peak one way (``links.py``).

Where several ranks are present, the k-th collective of one operation and size on each rank
is the same collective: the rank that arrives last finds the others waiting and only
transfers, so the shortest of the durations is the transfer and each rank's excess over it
is its arrival wait. With one rank the duration holds both, and the bandwidth is a lower
bound (said so).

The run is then one of three, because the remedy differs (docs/method.md):

* ``near-peak``: bus bandwidth at least ``NEAR_PEAK`` of the link's: the link is the limit;
  communicate less per sample (bigger per-replica batch, accumulation, fewer replicas) or
  overlap it;
* ``latency-bound``: far below, with messages that the link would move faster than one
  collective's fixed cost (``LATENCY_US``): fuse gradients into fewer, larger messages;
* ``link-bound``: far below with large messages: the link or its configuration (P2P off,
  traffic through host memory or sockets, a shared switch), or, from one rank, a late rank.

    facts = comm_facts([tl0, tl1], gpu_model="NVIDIA A100-SXM4-80GB")
    facts.busbw_gbps, facts.kind, facts.wait_share
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from gpudiag.analyze.links import Link, link_of
from gpudiag.trace.model.collectives import CollectiveOps
from gpudiag.trace.model.timeline import Timeline

# Half the link's peak: nccl-tests reach 65-90% of it at large sizes (8x A100 all-reduce
# about 230 of 300 GB/s; send/receive 195), so a run at half or more is held by the link.
NEAR_PEAK = 0.5
# One collective's fixed cost: NCCL all-reduce within a server takes 10-30 µs however small
# the message (nccl-tests' time column at 8 B). A message the link moves in less is
# latency-bound: its time is the fixed cost, not the bytes.
LATENCY_US = 25.0
# Where the link is unknown: a message under 1 MiB is latency-bound on any link of 40 GB/s
# or more (1 MiB / 40 GB/s = 26 µs, the fixed cost above)
SMALL_MESSAGE_BYTES = 1 << 20

NEAR, LATENCY, LINK, UNKNOWN = "near-peak", "latency-bound", "link-bound", "unknown"


def bus_factor(op: str, n: int) -> float:
    """nccl-tests' bus-bandwidth factor of an operation over ``n`` ranks."""
    n = max(1, n)
    if op == "all-reduce":
        return 2.0 * (n - 1) / n
    if op in ("all-gather", "reduce-scatter", "all-to-all", "gather", "scatter"):
        return (n - 1) / n
    return 1.0  # broadcast, reduce, send, recv


@dataclass
class OpRow:
    """One operation's collectives, summed."""

    op: str
    count: int
    bytes_median: float
    busbw_gbps: float

    def words(self) -> str:
        """ "all-reduce: 15 × 26.3 MB at 6.6 GB/s" (median message, bus bandwidth)."""
        size = size_words(self.bytes_median)
        return f"{self.op}: {self.count} × {size} at {self.busbw_gbps:.1f} GB/s"


@dataclass
class CommFacts:
    """The sized collectives of a run: bandwidth, message size, arrival wait, the link."""

    ops: int  # sized collectives measured (per rank)
    ranks: int  # ranks compared (1: the wait cannot be told from the transfer)
    group: int  # ranks per collective group (the largest seen)
    busbw_gbps: float  # time-weighted over the collectives
    algbw_gbps: float
    message_bytes: float  # the size holding most of the collective time (weighted median)
    transfer_ms: float  # per rank, summed over the window
    wait_ms: float | None  # arrival wait per rank, summed (None: one rank)
    link: Link | None
    link_note: str  # why there is no link to compare with
    kind: str
    rows: list[OpRow] = field(default_factory=list)

    @property
    def wait_share(self) -> float | None:
        """The collectives' time spent waiting for the last rank (None: one rank)."""
        if self.wait_ms is None:
            return None
        total = self.wait_ms + self.transfer_ms
        return self.wait_ms / total if total > 0 else 0.0

    @property
    def peak_share(self) -> float | None:
        return self.busbw_gbps / self.link.gbps if self.link else None

    def evidence(self) -> dict[str, object]:
        out: dict[str, object] = {
            "busbw_gbps": round(self.busbw_gbps, 2),
            "algbw_gbps": round(self.algbw_gbps, 2),
            "message_mb": round(self.message_bytes / 1e6, 3),
            "sized_collectives": self.ops,
            "group_size": self.group,
            "bandwidth_class": self.kind,
        }
        if self.link is not None:
            out["link"] = self.link.name
            out["link_peak_gbps"] = self.link.gbps
            out["link_source"] = self.link.source
            out["link_peak_pct"] = round(100.0 * (self.peak_share or 0.0), 1)
        else:
            out["link"] = self.link_note
        if self.wait_ms is not None:
            out["arrival_wait_ms"] = round(self.wait_ms, 3)
            out["transfer_ms"] = round(self.transfer_ms, 3)
            out["arrival_wait_pct"] = round(100.0 * (self.wait_share or 0.0), 1)
            out["ranks_compared"] = self.ranks
        if len(self.rows) > 1:
            out["by_operation"] = [r.words() for r in self.rows[:6]]
        return out

    def sentence(self) -> str:
        """The figures in words, for a finding's title or a remedy's basis."""
        bound = "" if self.ranks > 1 else " (at least: one rank's time includes its wait)"
        peak = (
            f" of the {self.link.name}'s {self.link.gbps:g} GB/s ({self.peak_share:.0%})"
            if self.link and self.peak_share is not None
            else ""
        )
        return (
            f"bus bandwidth {self.busbw_gbps:.1f} GB/s{bound}{peak} at "
            f"{size_words(self.message_bytes)} messages"
        )


def size_words(n: float) -> str:
    """A message size for a sentence: "26.3 MB", "180.0 kB"."""
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def _matched(sets: list[CollectiveOps]) -> list[tuple[str, int, int, np.ndarray]]:
    """The collectives present on every rank: (op, bytes, group, durations ranks x 1), the
    k-th of one operation and size on each rank taken as the same collective."""
    per_rank: list[dict[tuple[str, int, int], list[float]]] = []
    for c in sets:
        d: dict[tuple[str, int, int], list[float]] = defaultdict(list)
        for op, nb, g, dur in zip(c.op, c.nbytes, c.group, c.durations, strict=True):
            d[(op, int(nb), int(g))].append(float(dur))
        per_rank.append(d)
    out: list[tuple[str, int, int, np.ndarray]] = []
    for key in per_rank[0]:
        if not all(key in d for d in per_rank):
            continue
        n = min(len(d[key]) for d in per_rank)
        durs = np.array([d[key][:n] for d in per_rank])  # ranks x n
        out.extend((key[0], key[1], key[2], durs[:, i]) for i in range(n))
    return out


def comm_facts(
    timelines: list[Timeline], gpu_model: str | None = None, world_size: int | None = None
) -> CommFacts | None:
    """The run's sized collectives (None: the trace records no sizes)."""
    sets = [tl.collectives for tl in timelines if len(tl.collectives)]
    if not sets:
        return None
    matched = _matched(sets) if len(sets) > 1 else []
    ranks = len(sets) if matched else 1
    if not matched:
        c = sets[0]
        matched = [
            (op, int(nb), int(g), np.array([float(d)]))
            for op, nb, g, d in zip(c.op, c.nbytes, c.group, c.durations, strict=True)
        ]
    ops, nbytes, bus, transfer, wait = [], [], [], [], []
    group = 1
    for op, nb, g, durs in matched:
        n = g or world_size or 1
        group = max(group, n)
        t = float(np.min(durs))
        if t <= 0:
            continue
        ops.append(op)
        nbytes.append(nb)
        bus.append(nb * bus_factor(op, n))
        transfer.append(t)
        wait.append(float(np.mean(durs - t)))
    if not transfer:
        return None
    tr, nb_a, bus_a = np.array(transfer), np.array(nbytes, float), np.array(bus)
    total_us = float(tr.sum())
    busbw = float(bus_a.sum() / total_us / 1e3)  # bytes/µs = MB/s; / 1e3 -> GB/s
    algbw = float(nb_a.sum() / total_us / 1e3)
    order = np.argsort(nb_a)
    cum = np.cumsum(tr[order])
    message = float(nb_a[order][np.searchsorted(cum, cum[-1] / 2.0)])
    link, note = _link(gpu_model, group)
    facts = CommFacts(
        ops=len(ops),
        ranks=ranks,
        group=group,
        busbw_gbps=busbw,
        algbw_gbps=algbw,
        message_bytes=message,
        transfer_ms=total_us / 1e3,
        wait_ms=float(np.sum(wait)) / 1e3 if ranks > 1 else None,
        link=link,
        link_note=note,
        kind=UNKNOWN,
        rows=_rows(ops, nb_a, bus_a, tr),
    )
    facts.kind = classify(facts)
    return facts


def _link(gpu_model: str | None, group: int) -> tuple[Link | None, str]:
    link = link_of(gpu_model)
    if link is None:
        what = f"GPU {gpu_model!r}" if gpu_model else "the GPU model"
        return None, f"peak unknown: {what} is not in the link table"
    if group > link.gpus_per_server:
        return None, (
            f"peak unknown: {group} ranks span servers, and the network between them is not "
            "in the trace"
        )
    return link, ""


def classify(f: CommFacts) -> str:
    share = f.peak_share
    if share is not None and share >= NEAR_PEAK:
        return NEAR
    if f.link is not None:
        op = f.rows[0].op if f.rows else "all-reduce"  # the operation holding most time
        ideal_us = f.message_bytes * bus_factor(op, f.group) / (f.link.gbps * 1e3)
        return LATENCY if ideal_us < LATENCY_US else LINK
    return LATENCY if f.message_bytes < SMALL_MESSAGE_BYTES else UNKNOWN


def _rows(ops: list[str], nbytes: np.ndarray, bus: np.ndarray, tr: np.ndarray) -> list[OpRow]:
    rows = []
    names = np.array(ops)
    for op in sorted(set(ops), key=lambda o: -float(tr[names == o].sum())):
        m = names == op
        busbw = float(bus[m].sum() / tr[m].sum() / 1e3)
        rows.append(OpRow(op, int(m.sum()), float(np.median(nbytes[m])), busbw))
    return rows
