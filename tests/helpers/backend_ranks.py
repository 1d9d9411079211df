"""One worker of a 2-process job on this machine: the backend's own distributed layer is
initialised for real (JAX's coordinator, torch's gloo process group) and the adapter says
which rank this process is.

    python -m tests.helpers.backend_ranks {jax|torch} RANK WORLD PORT   -> one JSON line
"""

from __future__ import annotations

import os
import sys

from tests.helpers.script_io import answer


def main(backend: str, rank: int, world: int, port: int) -> dict:
    if backend == "jax":
        import jax

        jax.distributed.initialize(
            coordinator_address=f"127.0.0.1:{port}", num_processes=world, process_id=rank
        )
    else:
        import torch.distributed as dist

        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=world)
    from gpudiag.record.backends import for_name
    from gpudiag.record.ranks import discover

    adapter = for_name(backend)
    info = adapter.rank_info(None)
    found = discover(None, adapter)
    out = {
        "rank": info.rank if info else None,
        "world_size": info.world_size if info else None,
        "source": info.source if info else None,
        "cluster": info.cluster if info else None,
        "discovered": [found.rank, found.world_size, found.multi_worker],
    }
    if backend == "torch":
        dist.barrier()
        dist.destroy_process_group()
    else:  # a barrier: rank 0 hosts the coordinator and must outlive rank 1's questions
        jax.distributed.shutdown()
    return out


if __name__ == "__main__":
    b, r, w, p = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    answer(main(b, r, w, p))
