"""What a process knows of its place in a run (``RankInfo``), and how TensorFlow's cluster
spec gives it. A leaf: the per-backend adapters (``record/backends/``) build it, rank
discovery (``ranks.py``) asks them.

    info = from_tf_cluster({"worker": ["a:1", "b:1"]}, "worker", 1, "TF_CONFIG")
    info.rank, info.world_size     # 1, 2
"""

from __future__ import annotations

import contextlib
import socket
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RankInfo:
    rank: int | None = None
    world_size: int = 1
    host: str = field(default_factory=socket.gethostname)
    run_id: str = ""
    cluster: dict[str, list[str]] | None = None
    source: str = "single process"  # where rank and world size were read

    @property
    def multi_worker(self) -> bool:
        return self.world_size > 1


def _ordered_tasks(cluster: dict[str, list[str]]) -> list[tuple[str, int]]:
    """TensorFlow's task order for collectives: chief first, then the workers."""
    return [(job, i) for job in ("chief", "worker") for i in range(len(cluster.get(job, [])))]


def from_tf_cluster(
    cluster: dict[str, Any], task_type: str | None, task_id: int | None, source: str
) -> RankInfo | None:
    cluster = {
        str(k): [str(a) for a in v] for k, v in cluster.items() if isinstance(v, list | tuple)
    }
    tasks = _ordered_tasks(cluster)
    if len(tasks) < 2 or task_type not in ("chief", "worker") or task_id is None:
        return None
    with contextlib.suppress(ValueError):
        return RankInfo(
            rank=tasks.index((task_type, int(task_id))),
            world_size=len(tasks),
            cluster=cluster,
            source=source,
        )
    return None
