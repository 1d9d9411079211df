"""The data model: what every reader writes and every analyzer reads.

- ``timeline.py``: ``Timeline`` (one rank's run: steps, device activity by ``Kind``, input
  waits, counters, ``Metadata``), with ``intervals.py`` (interval arithmetic),
  ``compiles.py`` (compilations), ``collectives.py`` (collectives and their sizes) and
  ``runconfig.py`` (``RunConfig``: what the run already does).
- ``sink.py``: where a reader puts intervals while it streams a file, compact and bounded
  (``IntervalBudget``); ``budget.finish(tl)`` says what was kept.
- what readers apply to what they built: ``steps_infer.py`` (steps where a trace marks
  none), ``stream_overlap.py`` (kernels overlapping on one stream), ``overlong.py`` (device
  work longer than the trace can hold; ``load.py`` applies it to every format's output).

It imports nothing else from ``gpudiag.trace``, so every other part may import it.
"""
