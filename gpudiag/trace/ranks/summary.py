"""One rank file read where it is parsed (a pool or Dask worker), reduced to what the
analysis of a run needs: events inside its profiled window and counters thinned to
``COUNTER_POINTS``. Only this summary crosses back to the parent.

    timelines, error = read_summaries("rank3.json.gz", reduce=True, limits=ReadLimits())
"""

from __future__ import annotations

import numpy as np

from gpudiag.trace.errors import TraceError, unforeseen
from gpudiag.trace.model.timeline import Intervals, Timeline
from gpudiag.trace.source.limits import ReadLimits

Result = tuple[list[Timeline], TraceError | None]
COUNTER_POINTS = 2000  # per counter: a sampled run of hours at 0.5 s keeps its shape


def summarize(tl: Timeline) -> Timeline:
    """What the analysis of a run needs from one rank: events inside its profiled window
    (untouched, so a rank analyses the same alone or in a run), counters thinned."""
    st = tl.steps
    prof = st.profiled & (st.end > st.start)
    if prof.any():
        lo, hi = float(st.start[prof].min()), float(st.end[prof].max())
        for key, iv in list(tl.activity.items()):
            inside = (iv.ends > lo) & (iv.starts < hi)
            if not inside.all():
                tl.activity[key] = Intervals(iv.starts[inside], iv.ends[inside])
        w = tl.input_wait
        inside = (w.ends > lo) & (w.starts < hi)
        if not inside.all():
            tl.input_wait = Intervals(w.starts[inside], w.ends[inside])
    for c in tl.counters:
        if c.ts.size > COUNTER_POINTS:
            keep = np.linspace(0, c.ts.size - 1, COUNTER_POINTS).astype(np.int64)
            c.ts, c.values = c.ts[keep], c.values[keep]
    return tl


def read_summaries(path: str, reduce: bool, limits: ReadLimits) -> Result:
    """Pool / Dask task: the file's rank summaries (``reduce=False``: its whole timelines),
    or the TraceError that says why it cannot be read (returned, not raised: it comes back
    as it is, whatever the exception was)."""
    from gpudiag.trace.load import load_file

    try:
        return [summarize(tl) if reduce else tl for tl in load_file(path, limits)], None
    except Exception as e:  # an input we did not foresee: one line, never a traceback
        return [], unforeseen(path, e)
