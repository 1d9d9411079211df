"""The whole fit in the HTML report: one bar of the fit's wall time by part (training steps,
validation, epoch-end callbacks, epoch starts, start-up, gpudiag, the rest) and its legend,
or the line saying a foreign profile does not hold it.

    fit_section(diagnosis)     # "" when the diagnosis carries no fit at all
"""

from __future__ import annotations

from typing import Any

from gpudiag.analyze.diagnosis import Diagnosis
from gpudiag.analyze.fit_account import PART_LABELS, PARTS
from gpudiag.show.html.charts import segments_svg
from gpudiag.show.html.style import e, pct

FIT_COLOURS = {
    "steps": "#2ca02c",
    "validation": "#1f77b4",
    "callbacks": "#9467bd",
    "batch_callbacks": "#e377c2",
    "between_fits": "#8c564b",
    "epoch_start": "#d62728",
    "startup": "#e6b000",
    "gpudiag": "#17becf",
    "other": "#b0b0b0",
}


def _bar(fit: dict[str, Any], width: int = 700, height: int = 26) -> str:
    shares, seconds = fit["shares"], fit["seconds"]
    return segments_svg(
        (
            (
                FIT_COLOURS[p],
                f"{e(PART_LABELS[p])} {pct(shares.get(p, 0.0))} ({seconds.get(p, 0.0):.2f} s)",
                shares.get(p, 0.0),
            )
            for p in PARTS
        ),
        width,
        height,
        "the fit's wall time by part",
    )


def _legend(fit: dict[str, Any]) -> str:
    shares, seconds = fit["shares"], fit["seconds"]
    items = "".join(
        f'<span><span class="sw" style="background:{FIT_COLOURS[p]}"></span>'
        f"{e(PART_LABELS[p])} <b>{pct(shares[p])}</b> ({seconds.get(p, 0.0):.2f} s)</span>"
        for p in PARTS
        if shares.get(p, 0.0) >= 0.005
    )
    return f'<div class="legend" id="fit-legend">{items}</div>'


def fit_section(d: Diagnosis) -> str:
    fit = d.run.get("fit") if isinstance(d.run, dict) else None
    if not fit:
        return ""
    if not fit.get("measured"):
        return f'<p class="muted" id="fit">The whole fit: {e(fit.get("reason", ""))}</p>'
    epochs = fit.get("epochs", 0)
    return (
        f'<h2 id="fit">Where the fit\'s wall time goes ({fit.get("wall_s", 0.0):.1f} s, '
        f"{epochs} epoch{'s' if epochs != 1 else ''})</h2>{_bar(fit)}{_legend(fit)}"
    )
