"""HolisticTraceAnalysis (HTA) side of ``speed_vs_hta.py``: parse one trace, temporal breakdown.

Run by the interpreter of a separate venv that has ``HolisticTraceAnalysis`` installed (HTA is
never a gpudiag dependency), as one whole process, the same way ``gpudiag analyze`` is run:

    ../hta-venv/bin/python benchmarks/hta_temporal_breakdown.py TRACE_DIR

``TRACE_DIR`` holds exactly one trace file (HTA takes a directory and reads every ``.json`` /
``.json.gz`` in it as one rank; the rank comes from ``distributedInfo.rank``, 0 without it).
Does what an HTA user does first: ``TraceAnalysis(trace_dir=...)`` (parse into a DataFrame,
align, drop the last incomplete step) and ``get_temporal_breakdown(visualize=False)``.
Prints one JSON line: HTA's version, the in-process phase times and the breakdown, so the
benchmark can check the run did the work. Exit 0 on success.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
import time
from typing import Any


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: hta_temporal_breakdown.py TRACE_DIR", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    from hta.trace_analysis import TraceAnalysis

    try:
        hta_version = importlib.metadata.version("HolisticTraceAnalysis")
    except importlib.metadata.PackageNotFoundError:  # e.g. run from a source checkout
        hta_version = "?"
    t1 = time.perf_counter()
    analyzer = TraceAnalysis(trace_dir=argv[0])
    t2 = time.perf_counter()
    df = analyzer.get_temporal_breakdown(visualize=False)
    t3 = time.perf_counter()
    rows: list[dict[str, Any]] = json.loads(df.to_json(orient="records"))
    out = {
        "hta_version": hta_version,
        "ranks": analyzer.t.get_ranks(),
        "iterations": len(analyzer.t.get_iterations()),
        "import_s": round(t1 - t0, 3),
        "parse_s": round(t2 - t1, 3),
        "breakdown_s": round(t3 - t2, 3),
        "breakdown": rows,
    }
    print(json.dumps(out, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
