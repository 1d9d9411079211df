"""The report's sections that show where time goes: the timeline of the profiled windows,
the breakdown per step, per rank and per device, and the remedies.

    timeline_section(diagnosis)   # an HTML string, "" when there is nothing to show
"""

from __future__ import annotations

from gpudiag.analyze.breakdown import CATEGORIES
from gpudiag.analyze.diagnosis import Diagnosis
from gpudiag.show.html.charts import per_step_svg, stacked_bar_svg, strip_svg
from gpudiag.show.html.style import e, pct, swatch
from gpudiag.show.units import LABELS, gain_text

MAX_RANK_ROWS = 1024  # the per-rank table shows every rank of any realistic run


def timeline_section(d: Diagnosis) -> str:
    if not d.activity:
        return (
            '<h2>Timeline</h2><p class="muted">No profiled window with device activity: '
            "nothing to draw.</p>"
        )
    parts = [
        "<h2>Timeline of the profiled windows</h2>",
        '<p class="muted">Per device: share of each time bin spent in '
        f"{swatch('compute')}compute, {swatch('sync')}collectives and "
        f"{swatch('transfer')}copies: host↔device and on the device (grey: idle); "
        "the host row shows "
        f"{swatch('input')}input wait. Dashed lines are step starts.</p>",
    ]
    for rank in d.activity:
        for i, win in enumerate(rank["windows"]):
            label = f"{rank['rank']} — window {i + 1}, {win['duration_ms']:.1f} ms"
            parts.append(
                f'<h3 class="muted">{e(label)}</h3><div>'
                f'{strip_svg(win, label)}<div class="readout"></div></div>'
            )
    return "".join(parts)


def per_step_section(d: Diagnosis) -> str:
    sets = [(r["rank"], r["per_step"]) for r in d.activity if r.get("per_step")]
    if not sets and d.per_step:
        sets = [(d.ranks[0].label if d.ranks else "run", d.per_step)]
    if not sets:
        return ""
    parts = ["<h2>Breakdown per step</h2>"]
    for label, rows in sets:
        parts.append(
            f'<div class="muted">{e(label)}: {len(rows)} profiled steps</div>'
            f"{per_step_svg(rows, f'per-step breakdown, {label}')}"
        )
    return "".join(parts)


def ranks_section(d: Diagnosis) -> str:
    if not d.ranks:
        return ""
    head = "".join(f'<th class="num">{e(LABELS[c])}</th>' for c in CATEGORIES)
    rows = []
    for r in d.ranks[:MAX_RANK_ROWS]:
        cells = "".join(f'<td class="num">{pct(r.breakdown.get(c, 0.0))}</td>' for c in CATEGORIES)
        rows.append(
            f"<tr><td>{e(r.label)}</td><td>{e(r.verdict)}</td>"
            f'<td class="num">{r.steps}</td><td class="num">{r.step_ms:.1f} ms</td>'
            f"<td>{stacked_bar_svg(r.breakdown, 240, 14, r.label)}</td>{cells}</tr>"
        )
    more = (
        f'<p class="muted">{len(d.ranks) - MAX_RANK_ROWS} more ranks not shown</p>'
        if len(d.ranks) > MAX_RANK_ROWS
        else ""
    )
    return (
        f"<h2>Breakdown per rank ({len(d.ranks)})</h2><table><tr><th>rank</th>"
        '<th>verdict</th><th class="num">steps</th><th class="num">median step</th>'
        f"<th>shares</th>{head}</tr>{''.join(rows)}</table>{more}"
    )


def devices_section(d: Diagnosis) -> str:
    if not d.devices:
        return ""
    rows = "".join(
        f'<tr><td>{e(r.rank)}</td><td>{e(r.device)}</td><td class="num">{pct(r.busy)}</td>'
        f'<td class="num">{pct(r.compute)}</td><td class="num">{pct(r.sync)}</td>'
        f'<td class="num">{pct(r.transfer)}</td><td class="num">{r.gaps}</td>'
        f'<td class="num">{r.longest_gap_ms:.1f} ms</td>'
        f'<td class="num">{pct(r.gap_boundary_share)}</td></tr>'
        for r in d.devices[:256]
    )
    return (
        '<h2>Devices</h2><table><tr><th>rank</th><th>device</th><th class="num">busy</th>'
        '<th class="num">compute</th><th class="num">exposed sync</th>'
        '<th class="num">copies</th><th class="num">idle gaps</th>'
        '<th class="num">longest gap</th><th class="num">gaps at step edge</th></tr>'
        f"{rows}</table>"
    )


def suggestions_section(d: Diagnosis) -> str:
    if not d.suggestions:
        return ""
    rows = []
    for s in d.suggestions:
        gain = gain_text(s.expected_gain, s.expected_gain_range)
        rows.append(
            f'<tr><td class="gain">{e(gain)}</td><td><b>{e(s.title)}</b><br>'
            f'{e(s.detail)}<br><span class="muted">basis: {e(s.basis)}'
            f"{' · for ' + e(s.finding) if s.finding else ''}</span></td></tr>"
        )
    return (
        '<h2>Remedies</h2><p class="muted">Expected gain: the step speed-up this run\'s '
        "measured shares predict, with its range.</p><table><tr><th>gain</th><th>change</th></tr>"
        f"{''.join(rows)}</table>"
    )
