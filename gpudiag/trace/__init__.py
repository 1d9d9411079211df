"""gpudiag.trace: any profiler's trace file read into ``Timeline``s, bounded whatever its size.

    timelines = load_file("rank0.pt.trace.json.gz")   # load.py: the reader chosen by content

The parts, each below the ones after it (``tests/project/test_layout.py`` holds the order):

- ``model/``: the data model every reader writes and every analyzer reads (``Timeline``, its
  intervals, compilations, collectives, ``RunConfig``) and what every reader builds it with
  (the bounded interval sinks, steps inferred where a trace marks none, impossible times).
- ``names/``: what an event's name says (communication, precision, Tensor Cores, training),
  one table each, at a bounded cost per name.
- ``source/``: what a reader receives: the file's bytes, decompressed and guarded; Chrome
  Trace Event JSON as a stream of events; the bounds it reads under (``ReadLimits``).
- one sub-package per format, each importing only the three above and never another format:
  ``native/`` (gpudiag's own stream), ``kineto/`` (PyTorch profiler JSON), ``tf/`` (the
  TensorFlow / JAX profiler: trace-viewer JSON and the ``.xplane.pb`` XSpace protobuf).
- ``formats.py``: the one table of formats (recognise, identify, read); ``load.py`` reads a
  file through it; ``ranks/``: the files of a multi-rank run grouped and read in parallel
  (a process pool, or Dask workers).
- ``errors.py``: the one exception for input gpudiag cannot use, from any reader to the
  command line; ``quiet.py``: native libraries' log lines kept out of gpudiag's output.

A new format (an Nsight Systems SQLite export, rocprof) is a sub-package beside ``kineto/``
whose reader returns ``list[Timeline]``, and one ``Format`` row in ``formats.py``; the
``kineto/`` package docstring says what a reader receives and must produce.
"""
