"""gpudiag: why is my (multi-GPU) Keras training slow, and what do I change?

    import gpudiag
    model.fit(ds, epochs=3, callbacks=[gpudiag.DiagnoseCallback()])
    gpudiag.analyze_traces("trace.json.gz")    # the Diagnosis `gpudiag analyze` prints

Heavy imports (TensorFlow, Keras, xprof) happen only inside the functions that need them.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from gpudiag.version import __version__

if "IPython" in sys.modules:  # a notebook or IPython shell: a Diagnosis shows as the report
    from gpudiag.show.notebook import register

    register()

if TYPE_CHECKING:
    from gpudiag.analyze.diagnosis import Diagnosis
    from gpudiag.api import InputError, analyze_traces, compare_runs
    from gpudiag.callback import DiagnoseCallback

__all__ = [
    "DiagnoseCallback",
    "Diagnosis",
    "InputError",
    "__version__",
    "analyze_traces",
    "compare_runs",
]
API = ("analyze_traces", "compare_runs", "InputError")


def __getattr__(name: str) -> Any:
    # Lazy: importing gpudiag must not import keras/tensorflow.
    if name == "DiagnoseCallback":
        from gpudiag.callback import DiagnoseCallback

        return DiagnoseCallback
    if name == "Diagnosis":
        from gpudiag.analyze.diagnosis import Diagnosis

        return Diagnosis
    if name in API:
        from gpudiag import api

        return getattr(api, name)
    raise AttributeError(name)
