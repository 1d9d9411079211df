"""gpudiag's own trace format: what ``DiagnoseCallback`` writes (docs/trace-format.md).

- ``reader.py``: ``read_gpudiag(path)`` -> ``list[Timeline]`` (one), the file streamed a line
  at a time; a file cut off mid-write reads up to its last complete line.
- ``events.py``: the format's event names and metadata, and the builder both the reader and
  the recorder (``gpudiag.record``) feed.
- ``follow.py``: a trace tailed while the callback writes it (``gpudiag live --follow``), a
  bounded rolling view.

``formats.py`` recognises the format by its header event (``gpudiag.metadata``), which also
names the run and rank. Imports only ``model/``, ``names/``, ``source/``.
"""
