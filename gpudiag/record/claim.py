"""A new trace file of the run's own, never one another run wrote.

path = claim_path("traces/run-{rank}.json", rank=0)   # traces/run.json, run-2.json, ...
"""

from __future__ import annotations

import errno
import os


def claim_path(template: str, rank: int | None = None) -> str:
    """An absolute path for a new trace, created empty so no other run can take it.

    ``{rank}`` in ``template`` becomes the rank (0 when unknown). Relative paths resolve
    against the current directory now, when the run starts. An existing file is never
    overwritten: ``run.json`` becomes ``run-2.json``, ``run-3.json``, ... (exclusive create,
    so two runs started in the same second by two processes get two files).
    """
    path = os.path.abspath(template.replace("{rank}", str(rank if rank is not None else 0)))
    root, ext = os.path.splitext(path)
    if root.endswith(".gpudiag"):  # keep double extensions together: x-2.gpudiag.json
        root, ext = root[: -len(".gpudiag")], ".gpudiag" + ext
    os.makedirs(os.path.dirname(path), exist_ok=True)
    for n in range(1, 10_000):
        candidate = path if n == 1 else f"{root}-{n}{ext}"
        try:
            fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        os.close(fd)
        return candidate
    raise FileExistsError(errno.EEXIST, "no free trace name", path)
