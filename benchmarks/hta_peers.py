"""HolisticTraceAnalysis (HTA) side of ``peers.py``: the figures HTA gives for one trace.

Run by the interpreter of a separate venv that has ``HolisticTraceAnalysis`` installed (HTA is
never a gpudiag dependency):

    /tmp/hta-venv/bin/python benchmarks/hta_peers.py TRACE_DIR

``TRACE_DIR`` holds the trace file(s) of one run (HTA reads every ``.json``/``.json.gz`` in
it, one per rank). Prints one JSON line: per rank, the temporal breakdown (idle, compute,
non-compute time over HTA's window: first to last GPU event), the communication/computation
overlap, and the idle time by category (host wait, kernel wait, other), summed over streams.
Each analysis that fails is reported with its error, not raised: HTA asserts on some real
traces, and that is a result too.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
from typing import Any


def _records(df: Any) -> list[dict[str, Any]]:
    return json.loads(df.to_json(orient="records"))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: hta_peers.py TRACE_DIR", file=sys.stderr)
        return 2
    from hta.trace_analysis import TraceAnalysis

    out: dict[str, Any] = {"hta_version": importlib.metadata.version("HolisticTraceAnalysis")}
    try:
        analyzer = TraceAnalysis(trace_dir=argv[0])
    except Exception as e:  # HTA's own failure is the answer
        out["error"] = f"parse: {type(e).__name__}: {e}"[:300]
        print(json.dumps(out))
        return 0
    calls = {
        "temporal": lambda: _records(analyzer.get_temporal_breakdown(visualize=False)),
        "overlap": lambda: _records(analyzer.get_comm_comp_overlap(visualize=False)),
        "idle": lambda: _records(
            analyzer.get_idle_time_breakdown(visualize=False, show_idle_interval_stats=False)[0]
        ),
    }
    for key, call in calls.items():
        try:
            out[key] = call()
        except Exception as e:
            out[key] = {"error": f"{type(e).__name__}: {e}"[:300]}
    print(json.dumps(out, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
