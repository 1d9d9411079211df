"""When each step's device work completed, where the backend dispatches steps asynchronously.

With Keras's asynchronous dispatch kept (JAX; torch on a GPU), the training thread runs
ahead of the device: a step's batch-begin to next batch-begin is then its dispatch, not its
work, and the queued steps drain at the epoch's end. Each call's result is therefore handed
to one helper thread, which waits for it (``RecordBackend.completion``) and records the
step as ending when both the device had finished it and the next step had begun:

    start = max(batch begin, end of the previous step)
    end   = max(next batch begin, device completion)   (an epoch's last: its completion)

so the steps stay contiguous, sum to the run's wall time, and follow whichever of host and
device was slower. The training thread never waits. The helper wakes when the device is
done but needs the GIL to read the clock: while the training thread runs Python, a
completion can read up to one switch interval (5 ms) late; the sum is unaffected.

    done = StepCompletion(writer.step)
    done.submit(step, begin_us, end_us, wait=backend.completion(result))
    done.close()          # at the end of the run: records what was submitted
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

Write = Callable[..., None]


class StepCompletion:
    """Args:
    write: records one step, as ``TraceWriter.step(index, start_us, end_us, profiled=,
        call=, batches=)``; called from the helper thread, in step order.
    """

    def __init__(self, write: Write) -> None:
        self.write = write
        self._queue: queue.Queue[tuple[Any, ...] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._last_end = 0.0

    def submit(
        self,
        index: int,
        begin_us: float,
        end_us: float,
        wait: Callable[[], Any] | None = None,
        last: bool = False,
        **fields: Any,
    ) -> None:
        """Record a step once ``wait()`` returns (None: its device work is already done).
        ``last``: no step follows in this epoch; it ends with its device work, not with the
        epoch's own end (metrics, state sync)."""
        self._queue.put((index, begin_us, end_us, wait, last, fields))
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._loop, name="gpudiag-step-completion", daemon=True
            )
            self._thread.start()

    def close(self, timeout: float = 10.0) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=timeout)
            self._thread = None

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            index, begin, end, wait, last, fields = item
            done = 0.0
            if wait is not None:
                try:
                    wait()
                    done = time.time() * 1e6
                except Exception:  # a deleted or failed result: the host's times stand
                    done = 0.0
            start = max(begin, self._last_end)
            stop = max(done if last and done else end, done, start)
            self._last_end = stop
            try:
                self.write(index, start, stop, **fields)
            except Exception:  # the writer says so itself; never end the thread on it
                continue
