"""The report's per-device and per-rank tables, sized for the terminal they are printed on:
names and verdicts are never cut or wrapped; the least needed columns go first
(``show.table_width``).

    console.print(devices_table(diagnosis.devices))
    console.print(ranks_table(diagnosis.ranks))
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from gpudiag.analyze.diagnosis import DeviceSummary, RankSummary
from gpudiag.show.safe import text
from gpudiag.show.table_width import Col, FirstFit, fitted_table


def _pct(values: Sequence[float]) -> list[Text]:
    return [Text(f"{100 * v:.0f}%") for v in values]


def _ms(values: Sequence[float | None]) -> list[Text]:
    return [Text(f"{v or 0:.1f} ms") for v in values]


def devices_table(devices: Sequence[DeviceSummary]) -> FirstFit:
    """Busy, compute, exposed sync and copies per device, then its idle gaps. Where the
    width runs out: the rank column when all rows share one rank, then gaps at step edges,
    the longest gap and the gap count."""
    one_rank = len({r.rank for r in devices}) == 1
    cols = [
        Col("rank", [text(r.rank) for r in devices], "left", drop=1 if one_rank else 0),
        Col("device", [text(r.device) for r in devices], "left"),
        Col("busy", _pct([r.busy for r in devices])),
        Col("compute", _pct([r.compute for r in devices])),
        Col("sync", _pct([r.sync for r in devices])),
        Col("copies", _pct([r.transfer for r in devices])),
        Col("gaps", [Text(str(r.gaps)) for r in devices], drop=4),
        Col(
            "longest gap",
            [Text(f"{r.longest_gap_ms:.1f} ms") for r in devices],
            drop=3,
            short="longest\ngap",
        ),
        Col(
            "gaps at step edge",
            _pct([r.gap_boundary_share for r in devices]),
            drop=2,
            short="gaps at\nstep edge",
        ),
    ]
    return fitted_table("Devices", cols)


def ranks_table(ranks: Sequence[RankSummary]) -> FirstFit:
    """Verdict, median step and shares per rank (with work and waits where the arrival
    analysis measured them). Where the width runs out: step counts, then work, then waits."""
    cols = [
        Col("rank", [text(r.label) for r in ranks], "left"),
        Col("verdict", [text(r.verdict) for r in ranks], "left"),
        Col("steps", [Text(str(r.steps)) for r in ranks], drop=1),
        Col("step", _ms([r.step_ms for r in ranks])),
    ]
    if any(r.wait_ms is not None for r in ranks):  # analyze/arrival.py
        cols += [
            Col("work", _ms([r.work_ms for r in ranks]), drop=2),
            Col("waits", _ms([r.wait_ms for r in ranks]), drop=3),
        ]
    cols += [
        Col(cat, _pct([r.breakdown[cat] for r in ranks]))
        for cat in ("input", "compute", "sync", "other")
    ]
    return fitted_table("Ranks", cols)
