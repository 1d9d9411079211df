"""gpudiag: why is my (multi-GPU) Keras training slow, and what do I change?

    from gpudiag import DiagnoseCallback
    model.fit(ds, epochs=3, callbacks=[DiagnoseCallback()])

Heavy imports (TensorFlow, Keras, xprof) happen only inside the functions that need them.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if "IPython" in sys.modules:  # a notebook or IPython shell: a Diagnosis shows as the report
    from gpudiag.show.notebook import register

    register()

if TYPE_CHECKING:
    from gpudiag.analyze.diagnosis import Diagnosis
    from gpudiag.callback import DiagnoseCallback

__all__ = ["DiagnoseCallback", "Diagnosis", "__version__"]


def __getattr__(name: str) -> Any:
    # Lazy: importing gpudiag must not import keras/tensorflow.
    if name == "DiagnoseCallback":
        from gpudiag.callback import DiagnoseCallback

        return DiagnoseCallback
    if name == "Diagnosis":
        from gpudiag.analyze.diagnosis import Diagnosis

        return Diagnosis
    raise AttributeError(name)
