"""What the callback shows: the lints before the first step, and at the end of
the run the report, the HTML page and the TensorBoard scalars, each failing on its own.

Rank 0 policy: on a multi-worker run only rank 0 prints the report by default; the others
say where their trace is and how to analyze the whole run (``report=True`` makes every rank
print its own). ``verbose=0`` in ``fit`` means no report unless ``report=True``.

    say = Say(quiet=False)
    say.lints(findings)                                   # once per new finding id
    end = RunEnd(diagnosis, trace_path, html, wanted, rank_info)
    share(end, say, callback_lists_of(callback))          # HTML page, TensorBoard scalars
    report(end, say)                                      # the report, rank-0 policy
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gpudiag.analyze.diagnosis import Diagnosis
from gpudiag.record.ranks import RankInfo
from gpudiag.trace.model.timeline import RecordedLint


@dataclass
class Say:
    """One line (or a few) on stderr unless quiet; lints once per id."""

    quiet: bool = False
    printed: set[str] = field(default_factory=set)

    def __call__(self, text: str) -> None:
        if not self.quiet:
            print(text, file=sys.stderr, flush=True)

    def once(self, text: str) -> None:
        """Say ``text`` unless it was said before."""
        if text not in self.printed:
            self.printed.add(text)
            self(text)

    def lints(self, findings: Sequence[RecordedLint]) -> None:
        """Print the lints not printed before (info ones are not printed)."""
        new = [f for f in findings if f.severity != "info" and f.id not in self.printed]
        self.printed.update(f.id for f in new)
        if new and not self.quiet:
            lines = ["gpudiag: input/replica checks before the first step:"]
            lines += [
                f"  [{f.severity}] {f.id}: {f.title}" + (f" — fix: {f.fix}" if f.fix else "")
                for f in new
            ]
            self("\n".join(lines))


@dataclass
class RunEnd:
    """What the end of a run has to show.

    Args:
        diagnosis: the run's diagnosis.
        trace_path: the trace file written.
        html: also write the report as an HTML page there.
        wanted: print the report (``report=`` or, by default, ``fit(verbose != 0)``).
        rank: this process's place in the run.
        forced: ``report=`` was given explicitly (every rank prints then).
        steps_per_epoch: Keras's steps per epoch, for TensorBoard's epoch axis.
    """

    diagnosis: Diagnosis
    trace_path: str
    html: str | None = None
    wanted: bool = True
    rank: RankInfo = field(default_factory=RankInfo)
    forced: bool = False
    steps_per_epoch: int | None = None


def share(end: RunEnd, say: Say, callback_lists: Sequence[Any] = ()) -> None:
    """The HTML page and the TensorBoard scalars (of any Keras TensorBoard callback in
    ``callback_lists``), each failing on its own with one line."""
    if end.html:
        from gpudiag.show.html import write_html

        problem = write_html(end.diagnosis, end.html)
        if problem:
            say(f"gpudiag: {end.html}: {problem}")
    from gpudiag.show.tensorboard import tensorboard_targets

    for callbacks in callback_lists:
        for log_dir, per_epoch in tensorboard_targets(callbacks, end.steps_per_epoch):
            try:
                from gpudiag.show.tensorboard import write_summaries

                write_summaries(log_dir, end.diagnosis, per_epoch)
            except Exception as e:
                say(f"gpudiag: no TensorBoard summaries in {log_dir} ({type(e).__name__}: {e})")


def report(end: RunEnd, say: Say) -> None:
    """The rich report and where the trace is, under the rank-0 policy."""
    if say.quiet or not end.wanted:
        return
    info = end.rank
    if info.multi_worker and info.rank != 0 and not end.forced:
        folder = os.path.dirname(end.trace_path) or "."
        say(
            f"gpudiag: rank {info.rank} of {info.world_size}: trace at "
            f"{end.trace_path}; rank 0 prints the report (whole run: "
            f"gpudiag analyze {folder})"
        )
        return
    from rich.console import Console

    from gpudiag.show.report import render_report

    console = Console()
    console.print(render_report(end.diagnosis, width=console.width))
    console.print(
        f"trace: {end.trace_path}  (gpudiag analyze {end.trace_path})",
        style="bright_black",
        highlight=False,
        markup=False,
    )
    if end.html:
        console.print(
            f"HTML report: {end.html}", style="bright_black", highlight=False, markup=False
        )


def stopped_early(trace_path: str, say: Say) -> None:
    say(
        f"gpudiag: training stopped early; partial trace at "
        f"{trace_path} (gpudiag analyze {trace_path})"
    )


def callback_lists_of(callback: Any) -> list[Any]:
    """The callback list of the same ``fit`` that holds a Keras TensorBoard callback, found
    once among ``callback``'s referrers when training has ended (reading the fit frame's
    locals instead disturbs a running generator input on Python 3.11)."""
    import gc

    for ref in gc.get_referrers(callback):
        if isinstance(ref, list) and any(type(c).__name__ == "TensorBoard" for c in ref):
            return [ref]
    return []
