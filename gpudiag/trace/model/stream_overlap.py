"""Kernels that overlap on one GPU stream: device times that cannot be right.

A stream runs its kernels and copies one after another. On Hopper, programmatic dependent
launch lets a kernel's prologue start under the previous one's tail, so real profiles show
small overlaps: the work of one stream adds up to at most 1.13x the time the stream was busy
in the H100 JAX profiles of ``sample_traces/``, 1.0x in every other sample. Work that adds up
to ``OVERLAP_RATIO`` times its stream's busy time or more was written wrong (a clock, a
duration), and every device share built on it is doubtful: the trace's limitations say so
and the verdict's confidence is lowered (``analyze/verdict.py``). Each stream costs four
numbers, whatever its length (at most ``MAX_KEYS`` streams are watched).

    overlap = StreamOverlap()
    overlap.add(("GPU 0", 7), start_us, end_us)    # each kernel, in the stream's order
    overlap.apply(timeline)                        # the limitation, when a stream is doubtful
"""

from __future__ import annotations

from typing import Any

from gpudiag.trace.model.sink import MAX_KEYS
from gpudiag.trace.model.timeline import Timeline

OVERLAP_RATIO = 1.5  # kernels' summed time over their stream's busy time (real: <= 1.13)
MIN_OVERLAP_US = 1000.0  # overlapped time, summed over a stream, worth a word
DOUBTFUL = "overlapping_stream_kernels"  # meta.extra: how many streams are doubtful


class StreamOverlap:
    def __init__(self) -> None:
        # key -> [start of the last kernel, end of the covered stretch, busy, summed]
        self._streams: dict[Any, list[float]] = {}

    def add(self, key: Any, start: float, end: float) -> None:
        """A kernel or copy of stream ``key``. Events out of order (starting before the previous
        one) start a new stretch: only in-order overlaps count."""
        s = self._streams.get(key)
        dur = end - start
        if s is None:
            if len(self._streams) < MAX_KEYS:
                self._streams[key] = [start, end, dur, dur]
            return
        s[3] += dur
        if s[0] <= start < s[1]:  # starts while the stream is still busy
            s[2] += max(0.0, end - s[1])
            s[1] = max(s[1], end)
        else:
            s[2] += dur
            s[1] = end
        s[0] = start

    def doubtful(self) -> list[float]:
        """The summed-over-busy ratio of each stream whose kernels cannot be right."""
        return [
            total / busy
            for _, _, busy, total in self._streams.values()
            if busy > 0 and total >= OVERLAP_RATIO * busy and total - busy >= MIN_OVERLAP_US
        ]

    def apply(self, tl: Timeline) -> None:
        """Say so in ``tl``'s limitations (and ``meta.extra``) when a stream is doubtful."""
        ratios = self.doubtful()
        if not ratios:
            return
        n = len(ratios)
        tl.meta.extra[DOUBTFUL] = n
        tl.meta.limitations.append(
            f"kernels overlap each other on {n} GPU stream{'s' if n > 1 else ''} (their times "
            f"add up to {max(ratios):.1f}x the time the stream was busy, where a stream runs "
            "one kernel after another): the device times are doubtful, and so is the verdict"
        )
