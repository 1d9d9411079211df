"""What a reader receives: the file's bytes, its events, and the bounds it reads under.

- ``files.py``: a trace file opened decompressed (gzip by its magic bytes) and guarded
  (expansion ratio, JSON nesting, string length): ``peek_source`` for the head a format is
  recognised by, ``open_stream`` for streaming; ``decoded.py`` under it (gunzip, UTF-8).
- ``chrome.py``: Chrome Trace Event JSON, the container Kineto, the TensorFlow trace viewer
  and gpudiag's own stream share, as a ``ChromeDoc`` (top-level keys, process and thread
  names, and ``events``: a stream of checked event dicts); ``event_lines.py`` decodes its
  events a slice at a time.
- ``limits.py``: ``ReadLimits``, every bound on one read as one value (it pickles to pool and
  Dask workers); ``limits.applied()`` puts them in force around a read.

Imports only ``model/`` (the sink's bounds) and ``errors.py``.
"""
