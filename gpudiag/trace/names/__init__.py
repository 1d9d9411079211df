"""What an event's name says, one table each, read by every reader alike.

- ``comm.py``: which device events are communication (NCCL, RCCL, XLA collectives, ...) or
  copies.
- ``facts.py``: run facts read off names (precision, Tensor Cores, training or inference,
  layout transposes), gathered by ``RunFacts`` and applied to a ``Timeline``.
- ``name_scan.py``: the regexes under both, at a bounded cost per name whatever the trace
  holds.

Imports only ``model/``.
"""
