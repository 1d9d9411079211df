"""Which worker of which run is this process? Rank, world size, host, cluster and run id.

Asked once when training begins, from whatever the backend's distribution layer knows:
TensorFlow's cluster resolver (``MultiWorkerMirroredStrategy``) or ``TF_CONFIG``; JAX's
``process_index``/``process_count``; ``torch.distributed`` when the Keras backend is torch;
last the ``RANK``/``WORLD_SIZE`` variables launchers such as torchrun set.

    info = discover(model, for_name("tensorflow"))
    info.rank, info.world_size, info.run_id     # 1, 2, "mw-3f9c0a51d2e4"

The run id is the same on every worker without any communication: a hash of the cluster
(every worker's address, in task order) and of the launcher's job id when there is one
(``GPUDIAG_RUN_ID`` overrides it). Two runs on the same cluster addresses get the same id;
``gpudiag analyze`` then tells them apart by time (see docs/multi-worker.md).
A single-process run gets a random id (``os.urandom``: global RNG state is never touched).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from typing import TYPE_CHECKING, Any

from gpudiag.record.rank_info import RankInfo

if TYPE_CHECKING:
    from gpudiag.record.backends import RecordBackend

# job ids that launchers give every worker of one job
LAUNCHER_JOB_VARS = (
    "TORCHELASTIC_RUN_ID",
    "SLURM_JOB_ID",
    "SLURM_STEP_ID",
    "PBS_JOBID",
    "LSB_JOBID",
    "KUBERNETES_JOB_NAME",
)


def _env() -> RankInfo | None:
    with contextlib.suppress(KeyError, ValueError):
        world = int(os.environ["WORLD_SIZE"])
        if world > 1:
            master = f"{os.environ.get('MASTER_ADDR', '')}:{os.environ.get('MASTER_PORT', '')}"
            return RankInfo(
                rank=int(os.environ["RANK"]),
                world_size=world,
                cluster={"master": [master]} if master != ":" else None,
                source="RANK/WORLD_SIZE",
            )
    return None


def run_id_for(info: RankInfo) -> str:
    """Equal on every worker of a run without communication; see the module docstring."""
    explicit = os.environ.get("GPUDIAG_RUN_ID", "").strip()
    if explicit:
        return explicit[:64]
    if not info.multi_worker:
        return os.urandom(6).hex()
    job = [f"{k}={os.environ[k]}" for k in LAUNCHER_JOB_VARS if os.environ.get(k)]
    text = json.dumps(
        {"cluster": info.cluster, "world": info.world_size, "job": job}, sort_keys=True
    )
    return "mw-" + hashlib.sha1(text.encode()).hexdigest()[:12]


def discover(model: Any, backend: RecordBackend) -> RankInfo:
    """This process's place in the run: what the backend's distribution layer says
    (``record/backends/``, ``for_name(...)``), else the launcher's variables, else a single
    process."""
    info = backend.rank_info(model) or _env() or RankInfo()
    info.run_id = run_id_for(info)
    return info


def claim_trace_path(template: str | None, info: RankInfo) -> str:
    """This run's own file, resolved now (cwd, rank); never one a previous run wrote."""
    import time

    from gpudiag.record.writer import claim_path

    template = template or default_trace_template(info, time.strftime("%Y%m%d-%H%M%S"))
    try:
        return claim_path(template, info.rank)
    except OSError:  # read-only or vanished place: the writer says so, the summary goes on
        return os.path.abspath(template.replace("{rank}", str(info.rank or 0)))


def default_trace_template(info: RankInfo, stamp: str) -> str:
    """``gpudiag-trace-<time>.json``, one file per rank on multi-worker runs."""
    if info.multi_worker:
        return f"gpudiag-trace-{stamp}-{info.run_id}-rank{{rank}}.json"
    return f"gpudiag-trace-{stamp}.json"
