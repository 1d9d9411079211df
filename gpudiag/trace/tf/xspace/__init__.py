"""The XSpace protobuf (``.xplane.pb``) -> Timelines, decoded without xprof or TensorFlow.

- ``reader.py``: ``read_xplane(path, bounds)`` -> ``list[Timeline]``: ``events.py`` makes the
  trace-viewer events xprof's ``trace_viewer`` makes, ``tf/viewer/`` reads them, then
  ``gpu_facts.py`` (the GPU, from plane stats) and ``memory.py`` (the allocators' peaks)
  add what only the protobuf holds.
- ``schema.py``: the XSpace messages; ``counts.py``: what a file holds, counted from the wire
  format before anything is decoded (refused past ``XSpaceBounds``); ``lines.py``: one line
  decoded a slice at a time; ``args.py``: event args decoded when read; ``prep.py`` and
  ``steps.py``: the grouping xprof adds to a profile the profiler left ungrouped.
- ``by_xprof.py``: xprof's own reading and tools, for the figures tests and benchmarks
  compare with; ``gpudiag analyze`` does not use it.
"""
