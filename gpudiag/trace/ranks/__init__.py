"""The files of a multi-rank run: grouped into runs and read in parallel.

- ``runs.py``: ``run_files`` (what the arguments name), ``group_runs`` (which run each file
  belongs to, from its head alone), ``RankReader`` (a process pool sized by the memory
  budget, or Dask).
- ``summary.py``: the per-rank task a pool or Dask worker runs: one file read and reduced to
  what the analysis needs, the only thing sent back.
- ``dask_run.py``: the same task on a Dask cluster (``--scheduler``); ``kept_run.py``: the
  profile directory ``DiagnoseCallback`` kept, read as one run; ``allocator.py``: the C
  allocator's free pages given back between analyses.

Above ``formats.py`` and ``load.py``: no reader imports it.
"""
