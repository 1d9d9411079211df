"""torch: ``torch.compile``'s graphs (Keras ``jit_compile=True`` on the torch backend).

TorchDynamo counts every graph it compiles (``torch._dynamo.utils.counters["stats"]
["unique_graphs"]``); a train-function call during which the count grew compiled, for the
shapes of the batch it was called with (Keras's torch train function takes the batch).
Without ``jit_compile`` Keras runs torch eagerly: nothing compiles, nothing is counted.

    watch = TorchCompileWatch(writer.compile)
"""

from __future__ import annotations

import sys
from typing import Any

from gpudiag.record.compile_watch import CompileWatch, leaf_shapes
from gpudiag.trace.model.compiles import CompileEvent, Shapes


def graphs_compiled() -> int:
    """Graphs TorchDynamo compiled so far in this process (0 before it was imported)."""
    utils = sys.modules.get("torch._dynamo.utils")
    if utils is None:
        return 0
    return int(utils.counters["stats"]["unique_graphs"])


class TorchCompileWatch(CompileWatch):
    source = "torch.dynamo"

    def __init__(self, emit: Any) -> None:
        super().__init__(emit)
        self.graphs = 0

    def start(self) -> None:
        self.graphs = graphs_compiled()

    def call_shapes(self, args: tuple[Any, ...]) -> Shapes | None:
        return leaf_shapes(args[0]) if args else None

    def after_call(self, t0_us: float, t1_us: float) -> None:
        try:
            n = graphs_compiled()
            if n > self.graphs:
                self.graphs = n
                self.emit(
                    CompileEvent(t0_us, t1_us, "torch.compile", "compile", self.source, self.shapes)
                )
        except Exception as e:
            self.fault(e)
        finally:
            self.shapes = None
