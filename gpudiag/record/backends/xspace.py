"""Decode the ``.xplane.pb`` a TensorFlow or JAX profiler window wrote into one Timeline.

Read by ``trace/tf/xspace/reader.py`` (xprof's trace-viewer events, made without xprof: the step
markers come out as xprof names them, "train N").
"""

from __future__ import annotations

import glob
import os

from gpudiag.trace.model.timeline import Timeline


def decode_xspace(logdir: str) -> tuple[Timeline | None, str | None]:
    files = sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))
    if not files:
        return None, "profiler wrote no .xplane.pb"
    from gpudiag.trace.tf.xspace.reader import read_xplane

    timelines = read_xplane(files[-1])
    return (timelines[0] if len(timelines) == 1 else combine(timelines)), None


def combine(timelines: list[Timeline]) -> Timeline:
    """A single process profile split per device by the reader: one timeline again."""
    out = Timeline(meta=timelines[0].meta)
    for tl in timelines:
        for (device, kind), iv in tl.activity.items():
            out.add_activity(device, kind, iv.starts, iv.ends)
        out.add_steps(tl.steps.index, tl.steps.start, tl.steps.end)
        out.kernel_counts.update(tl.kernel_counts)
        out.pipeline.update(tl.pipeline)
    first = timelines[0]
    out.input_wait = first.input_wait
    out.input_wait_names = dict(first.input_wait_names)
    return out.freeze()
