"""``storage-wait``: the input waits on storage: the host's CPUs sit in iowait while the
device waits for its next batch.

Why it costs time: data read from a network filesystem, a mounted cloud drive (Colab's
Google Drive, GCS FUSE, NFS) or a slow disk arrives at the storage's pace, whatever the
pipeline's parallelism; the kernel counts the cores idle on that I/O as iowait, which the
host sampler reads (``cpu_iowait``).

Example: "The input waits on storage: iowait 22% of the CPU while input is 41% of the step".
Fix: copy the data to a local disk (or into memory: ``cache()``) before training; read
files in parallel (``interleave(num_parallel_calls=...)``) where copying is not possible.
Gain not measured: at most the input share.
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.gain import at_most
from gpudiag.analyze.needs import Needs

ID = "storage-wait"
NEEDS = {"local-data": Needs()}
# iowait (median, % of all cores): a tenth of the machine waiting on I/O, xprof's 10% level
# for a stall worth naming; an idle disk reads 0-1%
IOWAIT_PCT = 10.0
INPUT_SHARE = 0.10  # ... while the step waits for input this much (TraceML's input anchor)


def detect(ev: RankEvidence) -> Finding | None:
    io, share = ev.host.iowait, ev.input_share
    if io is None or share is None or io < IOWAIT_PCT or share < INPUT_SHARE:
        return None
    evidence: dict[str, object] = {
        "cpu_iowait_p50_pct": round(io, 1),
        "input_share_pct": pct(share),
    }
    if ev.config.file_source:
        evidence["source"] = ev.config.file_source
    return Finding(
        ID,
        "high" if share >= 0.35 else "moderate",
        f"The input waits on storage: iowait {io:.0f}% of the CPU while input is "
        f"{pct(share):.0f}% of the step",
        evidence,
        "counters",
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    share = s.shares["input"]
    g = at_most(
        share,
        f"not measured: at most the input wait ({share:.0%} of the step), as far as storage "
        "holds it",
    )
    cache = "" if s.config.cache else " or keep it in memory (dataset.cache() after the reads)"
    return [
        g.suggestion(
            "Read the data from a local disk",
            "Copy the files to a local disk before training (a network or mounted cloud "
            f"drive delivers them at its own pace){cache}; where copying is not possible, "
            "read several files at once (interleave(..., num_parallel_calls=tf.data.AUTOTUNE)).",
            ID,
            "local-data",
        )
    ]
