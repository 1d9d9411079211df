"""``nccl-paths-off``: NCCL's fast paths are switched off in the environment while the
replicas wait at their collectives.

Why it costs time: ``NCCL_P2P_DISABLE=1`` sends GPU-to-GPU traffic through host memory
instead of NVLink or PCIe peer copies, ``NCCL_SHM_DISABLE=1`` and ``NCCL_IB_DISABLE=1`` drop
shared memory and InfiniBand, ``NCCL_P2P_LEVEL=LOC`` allows peer copies nowhere. Often set
once to work around a hang and forgotten (NVIDIA/nccl#428, nccl-tests#74). Judged only
where the trace shows the collectives exposed (sync share).

Example: "NCCL fast paths off (NCCL_P2P_DISABLE=1) while collectives hold 18% of the step".
Fix: unset them (and check the topology with ``nvidia-smi topo -m``). Gain not measured: at
most the exposed collectives.
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.gain import Gain, removed
from gpudiag.analyze.needs import Needs

ID = "nccl-paths-off"
NEEDS = {"nccl-fast-paths": Needs()}
SYNC_SHARE = 0.03  # exposed collectives worth a look (xprof's note level for collectives)


def detect(ev: RankEvidence) -> Finding | None:
    env = ev.config.nccl_env
    if not env or ev.breakdown is None or ev.shares["sync"] < SYNC_SHARE:
        return None
    sync = ev.shares["sync"]
    return Finding(
        ID,
        "moderate",
        f"NCCL fast paths off ({env}) while collectives hold {pct(sync):.0f}% of the step",
        {"nccl_env": env, "sync_share_pct": pct(sync)},
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    sync = s.shares["sync"]
    g = Gain.of(
        1.0, 1.0, removed(sync), f"not measured: at most the exposed collectives ({sync:.0%})"
    )
    return [
        g.suggestion(
            "Turn NCCL's fast paths back on",
            f"Unset {f.evidence['nccl_env']}: NCCL then picks NVLink / PCIe peer copies, shared "
            "memory and InfiniBand where the machine has them (nvidia-smi topo -m shows the "
            "links). Keep a setting only if it works around a hang on this machine.",
            ID,
            "nccl-fast-paths",
        )
    ]
