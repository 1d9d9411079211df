"""PyTorch profiler Chrome JSON (Kineto, and the autograd profiler before it), CUDA and ROCm.

- ``reader.py``: ``read_kineto(doc, path)`` -> ``list[Timeline]`` (one per file);
  ``kineto_head`` / ``looks_like_kineto`` tell the format from its head or its names.
- ``memory.py``: Kineto's ``[memory]`` events -> allocator counters.

What a reader receives and produces, for any format (a new one follows this one):

- it receives what ``formats.py`` hands it: the path, the decompressed head, ``ReadLimits``
  (already in force: the gzip ratio and the interval bound apply inside it), or, for a
  Chrome JSON format, a ``ChromeDoc`` whose ``events`` it iterates once;
- it streams the file, never holding it whole, and puts intervals into one
  ``IntervalBudget``'s sinks (``model/sink.py``), classifying names with ``names/``;
- it returns ``list[Timeline]``: per device, activity by ``Kind`` (compute, collective,
  copies), input waits, steps (or ``ensure_steps`` infers them), ``Metadata`` (producer,
  devices, ``limitations`` saying what was dropped or cut), facts applied by ``RunFacts``,
  then ``budget.finish(tl)`` and ``tl.freeze()``;
- every problem with the input is one ``TraceError`` naming the file.

Imports only ``model/``, ``names/``, ``source/``.
"""
