"""The TensorFlow / JAX profiler's two outputs, one family of readers.

- ``viewer/``: trace-viewer JSON (``*.trace.json.gz``, xprof's ``trace_viewer`` export):
  ``read_tf_trace(doc, path)`` / ``read_tf_stream`` -> ``list[Timeline]``.
- ``xspace/``: the ``.xplane.pb`` XSpace protobuf the profiler writes: decoded into the same
  trace-viewer events xprof makes, read by ``viewer/``, then given the facts only the
  protobuf holds (the GPU's capabilities, the allocators' memory):
  ``read_xplane(path, bounds)`` -> ``list[Timeline]``.

``xspace/`` imports ``viewer/``, never the reverse: a JSON trace never loads the protobuf
side (tests/cli/test_cold_start.py). Both import only ``model/``, ``names/``, ``source/`` besides.
"""
