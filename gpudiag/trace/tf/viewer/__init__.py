"""TensorFlow / JAX trace-viewer events -> Timelines, from a JSON file or an XSpace.

- ``reader.py``: ``read_tf_stream(doc, path)`` (one pass, when the names come first) and
  ``read_tf_trace(doc, path)`` (every name indexed first) -> ``list[Timeline]`` (one per
  worker device with its own step line).
- ``lanes.py``: what a lane (process / thread) and a host event are, from names alone;
  ``looks_like_tf`` tells the format.
- ``steps.py``: the device's "Steps" line, begun where the host began it.
- ``devices.py``: CPU replicas and workers; ``xla_cpu.py``: XLA's CPU runtime with several
  host devices; ``xla_line.py``: a TPU's "XLA Ops" line.
- ``pipeline.py``: the tf.data stages; ``host_work.py``: compilations and ops run eagerly.
"""
