"""Kineto traces of data-parallel ranks whose all-reduces have known sizes, a known link
speed and a known late rank: what bandwidth.py must recover.

Per step each rank computes, then runs ``count`` all-reduces of ``message_bytes`` each. The
first starts on each rank when that rank arrives (the late rank ``skew_us`` after the
others); every rank's kernel ends when the last one has arrived plus the transfer, which
takes ``LATENCY_US`` plus the bytes each GPU sends (2(n-1)/n of the message) over the
link at ``bw_gbps``. So the last to arrive only transfers, the others wait as well.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.helpers.foreign import _x, write

STEP_US = 20_000.0
COMPUTE_US = 8_000.0
LATENCY_US = 10.0


def transfer_us(message_bytes: int, n: int, bw_gbps: float) -> float:
    return LATENCY_US + message_bytes * 2 * (n - 1) / n / (bw_gbps * 1e3)


def rank_doc(
    rank: int,
    n: int,
    message_bytes: int,
    count: int,
    bw_gbps: float,
    late_rank: int | None = None,
    skew_us: float = 0.0,
    steps: int = 4,
    device: str = "NVIDIA A100-SXM4-80GB",
    sizes_on_kernel: bool = True,
) -> dict[str, Any]:
    """One rank's Kineto trace. ``sizes_on_kernel=False``: the sizes only on the
    record_param_comms op (PyTorch before they were copied onto the kernel)."""
    ev: list[dict[str, Any]] = []
    cpu, ext = 100 + rank, 1000
    t_x = transfer_us(message_bytes, n, bw_gbps)
    nelems = message_bytes // 4
    params = {
        "Collective name": "allreduce",
        "In msg nelems": nelems,
        "Out msg nelems": nelems,
        "dtype": "Float",
        "Group size": n,
    }
    for i in range(steps):
        t0 = i * STEP_US
        ev.append(_x("user_annotation", f"ProfilerStep#{i}", cpu, cpu, t0, STEP_US))
        ev.append(
            _x("cpu_op", "autograd::engine::evaluate_function: MmBackward0", cpu, cpu, t0, 50)
        )
        ev.append(_x("kernel", "ampere_sgemm_128x64_nn", 0, 7, t0 + 100, COMPUTE_US, device=0))
        arrive_all = t0 + 100 + COMPUTE_US + (skew_us if late_rank is not None else 0.0)
        t = t0 + 100 + COMPUTE_US + (skew_us if rank == late_rank else 0.0)
        for _ in range(count):
            ext += 1
            end = max(t, arrive_all) + t_x
            ev.append(
                _x(
                    "cpu_op",
                    "record_param_comms",
                    cpu,
                    cpu,
                    t - 5,
                    4,
                    **{"External id": ext, **params},
                )
            )
            kargs: dict[str, Any] = {"External id": ext, "device": 0, "stream": 20}
            if sizes_on_kernel:
                kargs.update(params)
            ev.append(
                _x(
                    "kernel",
                    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)",
                    0,
                    20,
                    t,
                    end - t,
                    **kargs,
                )
            )
            t = arrive_all = end
    return {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": device, "totalGlobalMem": 85_899_345_920}],
        "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": n},
        "traceEvents": ev,
    }


def write_ranks(tmp: Path, n: int, **kw: Any) -> list[str]:
    return [write(rank_doc(r, n, **kw), tmp / f"rank{r}.json") for r in range(n)]
