"""One self-contained HTML page of a Diagnosis: verdict, timeline, breakdowns, evidence, fixes.

    Path("report.html").write_text(render_html(diagnosis))   # gpudiag analyze ... --html
    render_html(diagnosis, fragment=True)                      # Diagnosis._repr_html_ (Jupyter)

Everything is inline (CSS, SVG, a few lines of JavaScript for the hover read-out): the page
fetches nothing, so it can be mailed or attached to a ticket. The drawing is done here, in
SVG, so the page reads the same with JavaScript off. Every string that comes from the input
(op names, paths, device names) goes through ``html.escape``.
"""

from __future__ import annotations

import html
from typing import Any

from gpudiag import __version__
from gpudiag.analyze.breakdown import CATEGORIES
from gpudiag.analyze.diagnosis import Diagnosis, Finding
from gpudiag.show.units import KEY_UNITS, LABELS, UNIT_SUFFIXES, gain_text

COLOURS = {
    "input": "#d62728",
    "transfer": "#9467bd",
    "compute": "#2ca02c",
    "sync": "#e6b000",
    "other": "#b0b0b0",
}
VERDICT_COLOURS = {
    "data-starved": "#d62728",
    "sync-bound": "#c89200",
    "compute-bound": "#2ca02c",
    "inconclusive": "#777777",
}
SEVERITY_COLOURS = {"high": "#d62728", "moderate": "#c89200", "info": "#1f77b4"}
MAX_RANK_ROWS = 1024  # the per-rank table shows every rank of any realistic run

CSS = """
.gpudiag-report{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
 color:#1d1d1f;max-width:1100px;margin:0 auto;padding:12px 16px}
.gpudiag-report h1{font-size:20px;margin:4px 0 8px}
.gpudiag-report h2{font-size:16px;margin:22px 0 8px;border-bottom:1px solid #ddd;
 padding-bottom:3px}
.gpudiag-report .verdict{display:inline-block;color:#fff;font-weight:700;padding:4px 12px;
 border-radius:4px;font-size:18px;letter-spacing:.5px}
.gpudiag-report .reason{font-size:16px;margin:8px 0}
.gpudiag-report .muted{color:#666;font-size:12.5px}
.gpudiag-report table{border-collapse:collapse;margin:4px 0}
.gpudiag-report th,.gpudiag-report td{padding:3px 10px 3px 0;text-align:left;
 vertical-align:top}
.gpudiag-report th{font-weight:600;border-bottom:1px solid #ccc}
.gpudiag-report td.num,.gpudiag-report th.num{text-align:right}
.gpudiag-report .legend span{margin-right:14px;white-space:nowrap}
.gpudiag-report .sw{display:inline-block;width:11px;height:11px;margin-right:4px;
 vertical-align:-1px;border-radius:2px}
.gpudiag-report .sev{font-weight:700;text-transform:uppercase;font-size:12px}
.gpudiag-report .gain{font-weight:700;color:#2ca02c;font-size:16px;white-space:nowrap}
.gpudiag-report td table td:first-child{white-space:nowrap}
.gpudiag-report code{background:#f3f3f3;padding:0 3px;border-radius:3px}
.gpudiag-report .readout{font:12px ui-monospace,monospace;color:#333;min-height:1.4em}
.gpudiag-report svg text{font:11px system-ui,sans-serif;fill:#333}
"""

# Hover read-out over the timeline: which bin, its time and what each row did there.
SCRIPT = """
(function(){
 var root=document.currentScript&&document.currentScript.parentNode;
 if(!root){return;}
 root.querySelectorAll('svg.strip').forEach(function(svg){
  var out=svg.parentNode.querySelector('.readout');
  svg.addEventListener('mousemove',function(ev){
   var r=svg.getBoundingClientRect(), x0=+svg.dataset.x0, w=+svg.dataset.w;
   var f=(ev.clientX-r.left)*(svg.viewBox.baseVal.width/r.width)-x0;
   if(f<0||f>w){out.textContent='';return;}
   var ms=f/w*(+svg.dataset.ms), bin=Math.floor(f/w*(+svg.dataset.bins));
   var parts=[];
   svg.querySelectorAll('g[data-row]').forEach(function(g){
    var c=g.querySelector('[data-bin="'+bin+'"]');
    parts.push(g.dataset.row+': '+(c?c.dataset.v:'idle'));
   });
   out.textContent='t = '+ms.toFixed(1)+' ms   '+parts.join('   ');
  });
  svg.addEventListener('mouseleave',function(){out.textContent='';});
 });
 root.dataset.rendered='ok';
})();
"""


def e(value: Any) -> str:
    """Escape anything for HTML text and attribute values."""
    return html.escape(str(value), quote=True)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _swatch(cat: str) -> str:
    return f'<span class="sw" style="background:{COLOURS[cat]}"></span>'


def stacked_bar_svg(
    shares: dict[str, float], width: int = 600, height: int = 22, title: str = ""
) -> str:
    """A horizontal stacked bar with each share's percentage written on it when it fits."""
    parts = [
        f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{e(title or "breakdown")}">'
    ]
    x = 0.0
    for cat in CATEGORIES:
        w = max(0.0, shares.get(cat, 0.0)) * width
        if w <= 0:
            continue
        parts.append(
            f'<rect x="{x:.2f}" y="0" width="{w:.2f}" height="{height}" '
            f'fill="{COLOURS[cat]}"><title>{e(LABELS[cat])} '
            f"{_pct(shares[cat])}</title></rect>"
        )
        if w >= 38:
            parts.append(
                f'<text x="{x + w / 2:.1f}" y="{height / 2 + 4:.1f}" '
                f'text-anchor="middle" style="fill:#fff;font-weight:600">'
                f"{100 * shares[cat]:.0f}%</text>"
            )
        x += w
    parts.append("</svg>")
    return "".join(parts)


def _legend(shares: dict[str, float]) -> str:
    items = "".join(
        f"<span>{_swatch(c)}{e(LABELS[c])} <b>{_pct(shares.get(c, 0.0))}</b></span>"
        for c in CATEGORIES
    )
    return f'<div class="legend">{items}</div>'


def _strip_svg(window: dict[str, Any], label: str) -> str:
    """Rows of bins: per device compute/sync/copies stacked, host input wait, host CPU."""
    bins = int(window["bins"])
    x0, w, row_h, gap = 120, 860, 26, 6
    rows: list[tuple[str, list[tuple[str, list[float]]]]] = []
    for dev in window["devices"]:
        rows.append(
            (
                dev["device"],
                [("compute", dev["compute"]), ("sync", dev["sync"]), ("transfer", dev["transfer"])],
            )
        )
    rows.append(("host input wait", [("input", window["input_wait"])]))
    cpu = window.get("cpu_total_pct") or []
    height = 20 + len(rows) * (row_h + gap) + (row_h + gap if cpu else 0) + 22
    ms = float(window["duration_ms"])
    bw = w / bins
    out = [
        f'<svg class="strip" width="100%" viewBox="0 0 {x0 + w + 40} {height}" '
        f'data-x0="{x0}" data-w="{w}" data-bins="{bins}" data-ms="{ms}" role="img" '
        f'aria-label="{e(label)}" style="max-width:{x0 + w + 40}px">'
    ]
    y = 14
    for name, layers in rows:
        out.append(
            f'<text x="{x0 - 6}" y="{y + row_h / 2 + 4}" text-anchor="end">{e(name[:18])}</text>'
        )
        out.append(f'<rect x="{x0}" y="{y}" width="{w}" height="{row_h}" fill="#eeeeee"/>')
        out.append(f'<g data-row="{e(name)}">')
        for b in range(bins):
            base = 0.0
            total = sum(vals[b] for _, vals in layers)
            desc = (
                ", ".join(
                    f"{LABELS[cat]} {100 * vals[b]:.0f}%" for cat, vals in layers if vals[b] > 0
                )
                or "idle"
            )
            first = True
            for cat, vals in layers:
                v = min(vals[b], 1.0 - base)
                if v <= 0.005:
                    continue
                hgt = v * row_h
                attrs = f' data-bin="{b}" data-v="{e(desc)}"' if first else ""
                first = False
                out.append(
                    f'<rect x="{x0 + b * bw:.2f}" y="{y + row_h - (base * row_h) - hgt:.2f}"'
                    f' width="{bw + 0.3:.2f}" height="{hgt:.2f}" '
                    f'fill="{COLOURS[cat]}"{attrs}/>'
                )
                base += v
            if total <= 0.005:
                continue
        out.append("</g>")
        y += row_h + gap
    if cpu:
        out.append(
            f'<text x="{x0 - 6}" y="{y + row_h / 2 + 4}" text-anchor="end">host CPU %</text>'
        )
        out.append(f'<rect x="{x0}" y="{y}" width="{w}" height="{row_h}" fill="#f6f6f6"/>')
        pts = " ".join(
            f"{x0 + min(max(t / ms, 0), 1) * w:.1f},"
            f"{y + row_h - min(max(v, 0), 100) / 100 * row_h:.1f}"
            for t, v in cpu
        )
        if len(cpu) > 1:
            out.append(
                f'<polyline points="{pts}" fill="none" stroke="#1f77b4" stroke-width="1.5"/>'
            )
        for t, v in cpu:
            out.append(
                f'<circle cx="{x0 + min(max(t / ms, 0), 1) * w:.1f}" '
                f'cy="{y + row_h - min(max(v, 0), 100) / 100 * row_h:.1f}" r="2.2" '
                f'fill="#1f77b4"><title>CPU {v:.0f}% at {t:.1f} ms</title></circle>'
            )
        y += row_h + gap
    for st in window["steps"]:
        sx = x0 + float(st["start_ms"]) / ms * w if ms > 0 else x0
        out.append(
            f'<line x1="{sx:.1f}" x2="{sx:.1f}" y1="8" y2="{y - gap}" stroke="#333" '
            'stroke-width="0.8" stroke-dasharray="2,2"/>'
        )
        out.append(
            f'<text x="{sx + 2:.1f}" y="10" style="font-size:10px">step {e(st["index"])}</text>'
        )
    for k in range(6):
        tx = x0 + k * w / 5
        tick = ms * k / 5
        out.append(
            f'<text x="{tx:.1f}" y="{y + 12}" text-anchor="middle">'
            f"{tick:.{0 if ms >= 50 else 1}f} ms</text>"
        )
    out.append("</svg>")
    return "".join(out)


def _timeline_section(d: Diagnosis) -> str:
    if not d.activity:
        return (
            '<h2>Timeline</h2><p class="muted">No profiled window with device activity: '
            "nothing to draw.</p>"
        )
    parts = [
        "<h2>Timeline of the profiled windows</h2>",
        '<p class="muted">Per device: share of each time bin spent in '
        f"{_swatch('compute')}compute, {_swatch('sync')}collectives and "
        f"{_swatch('transfer')}host↔device copies (grey: idle); the host row shows "
        f"{_swatch('input')}input wait. Dashed lines are step starts.</p>",
    ]
    for rank in d.activity:
        for i, win in enumerate(rank["windows"]):
            label = f"{rank['rank']} — window {i + 1}, {win['duration_ms']:.1f} ms"
            parts.append(
                f'<h3 class="muted">{e(label)}</h3><div>'
                f'{_strip_svg(win, label)}<div class="readout"></div></div>'
            )
    return "".join(parts)


def _per_step_svg(rows: list[dict[str, float]], label: str) -> str:
    n = len(rows)
    if not n:
        return ""
    h, gap, top = 120, 2, 8
    bw = max(4.0, min(40.0, 900.0 / n - gap))
    width = int(40 + n * (bw + gap))
    out = [
        f'<svg width="{width}" height="{h + top + 18}" '
        f'viewBox="0 {-top} {width} {h + top + 18}" role="img" aria-label="{e(label)}">'
    ]
    for frac in (0.0, 0.5, 1.0):
        yy = h - frac * h
        out.append(f'<text x="30" y="{yy + 4:.1f}" text-anchor="end">{frac * 100:.0f}%</text>')
    for i, row in enumerate(rows):
        x = 36 + i * (bw + gap)
        base = 0.0
        for cat in CATEGORIES:
            v = max(0.0, row.get(cat, 0.0))
            if v <= 0:
                continue
            hgt = v * h
            out.append(
                f'<rect x="{x:.1f}" y="{h - base - hgt:.1f}" width="{bw:.1f}" '
                f'height="{hgt:.1f}" fill="{COLOURS[cat]}"><title>step {i + 1}: '
                f"{e(LABELS[cat])} {_pct(v)}</title></rect>"
            )
            base += hgt
    out.append(f'<text x="36" y="{h + 14}">steps →</text></svg>')
    return "".join(out)


def _per_step_section(d: Diagnosis) -> str:
    sets = [(r["rank"], r["per_step"]) for r in d.activity if r.get("per_step")]
    if not sets and d.per_step:
        sets = [(d.ranks[0].label if d.ranks else "run", d.per_step)]
    if not sets:
        return ""
    parts = ["<h2>Breakdown per step</h2>"]
    for label, rows in sets:
        parts.append(
            f'<div class="muted">{e(label)}: {len(rows)} profiled steps</div>'
            f"{_per_step_svg(rows, f'per-step breakdown, {label}')}"
        )
    return "".join(parts)


def _ranks_section(d: Diagnosis) -> str:
    if not d.ranks:
        return ""
    head = "".join(f'<th class="num">{e(LABELS[c])}</th>' for c in CATEGORIES)
    rows = []
    for r in d.ranks[:MAX_RANK_ROWS]:
        cells = "".join(f'<td class="num">{_pct(r.breakdown.get(c, 0.0))}</td>' for c in CATEGORIES)
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


def _devices_section(d: Diagnosis) -> str:
    if not d.devices:
        return ""
    rows = "".join(
        f'<tr><td>{e(r.rank)}</td><td>{e(r.device)}</td><td class="num">{_pct(r.busy)}</td>'
        f'<td class="num">{_pct(r.compute)}</td><td class="num">{_pct(r.sync)}</td>'
        f'<td class="num">{_pct(r.transfer)}</td><td class="num">{r.gaps}</td>'
        f'<td class="num">{r.longest_gap_ms:.1f} ms</td>'
        f'<td class="num">{_pct(r.gap_boundary_share)}</td></tr>'
        for r in d.devices[:256]
    )
    return (
        '<h2>Devices</h2><table><tr><th>rank</th><th>device</th><th class="num">busy</th>'
        '<th class="num">compute</th><th class="num">exposed sync</th>'
        '<th class="num">copies</th><th class="num">idle gaps</th>'
        '<th class="num">longest gap</th><th class="num">gaps at step edge</th></tr>'
        f"{rows}</table>"
    )


def _unit(key: str) -> str:
    """The unit an evidence key carries (the same table as the terminal report)."""
    return next(
        (u for suffix, u in UNIT_SUFFIXES if key.endswith(suffix)), KEY_UNITS.get(key, "")
    ).strip()


def _value(key: str, v: Any) -> str:
    unit = _unit(key)
    if isinstance(v, dict):
        items = list(v.items())[:8]
        inner = "".join(
            f"<li><code>{e(k)}</code>: {e(f'{_num(x)} {unit}'.strip())}</li>" for k, x in items
        )
        more = f"<li>… {len(v) - 8} more</li>" if len(v) > 8 else ""
        return f"<ul>{inner}{more}</ul>"
    if isinstance(v, list):
        return e(", ".join(_num(x) for x in v[:12]) + (" …" if len(v) > 12 else ""))
    if v is None:
        return "not measured"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return e(f"{_num(v)} {unit}".strip())


def _num(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def _key(key: str) -> str:
    for suffix, _ in UNIT_SUFFIXES:
        if key.endswith(suffix):
            key = key[: -len(suffix)]
            break
    return key.replace("_", " ")


def _finding(f: Finding) -> str:
    ev = "".join(
        f"<tr><td>{e(_key(k))}</td><td>{_value(k, v)}</td></tr>" for k, v in f.evidence.items()
    )
    colour = SEVERITY_COLOURS.get(f.severity, "#333")
    return (
        f'<tr><td><span class="sev" style="color:{colour}">{e(f.severity)}</span></td>'
        f'<td><b>{e(f.id)}</b><br>{e(f.title)}<br><span class="muted">from the '
        f"{e(f.source)}</span></td><td><table>{ev}</table></td></tr>"
    )


def _findings_section(d: Diagnosis) -> str:
    if not d.findings:
        return "<h2>Findings</h2><p>No finding crossed its threshold.</p>"
    return (
        "<h2>Findings</h2><table><tr><th>severity</th><th>finding</th>"
        f"<th>evidence (measured)</th></tr>{''.join(_finding(f) for f in d.findings)}"
        "</table>"
    )


def _suggestions_section(d: Diagnosis) -> str:
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


def _body(d: Diagnosis) -> str:
    colour = VERDICT_COLOURS[d.verdict]
    st = d.steps or {}
    steps = ""
    if st.get("count"):
        steps = (
            f"{st.get('analyzed', 0)} of {st['count']} steps profiled; median step "
            f"{st.get('median_ms', 0):.1f} ms, p90 {st.get('p90_ms', 0):.1f} ms, "
            f"max {st.get('max_ms', 0):.1f} ms"
        )
    source = ", ".join(d.sources) or d.producer
    parts = [
        f'<h1>gpudiag report</h1><div class="muted">{e(source)}</div>',
        f'<p><span class="verdict" id="verdict" style="background:{colour}">'
        f"{e(d.verdict.upper())}</span> <b>confidence {d.confidence:.2f}</b></p>",
        f'<p class="reason">{e(d.reason)}</p>',
        f'<p class="muted">{e(steps)}</p>' if steps else "",
        "<h2>Where step time goes</h2>",
        stacked_bar_svg(d.breakdown, 700, 26, "mean breakdown of step time"),
        _legend(d.breakdown),
        _timeline_section(d),
        _per_step_section(d),
        _ranks_section(d),
        _devices_section(d),
        _findings_section(d),
        _suggestions_section(d),
    ]
    if d.limitations:
        items = "".join(f"<li>{e(x)}</li>" for x in d.limitations)
        parts.append(f"<h2>Not measured / caveats</h2><ul>{items}</ul>")
    parts.append(f'<p class="muted">gpudiag {e(__version__)}</p>')
    return "".join(parts)


def render_html(d: Diagnosis, fragment: bool = False) -> str:
    """The report page; ``fragment`` leaves out <html>/<head> (for Jupyter)."""
    inner = (
        f'<div class="gpudiag-report"><style>{CSS}</style>{_body(d)}<script>{SCRIPT}</script></div>'
    )
    if fragment:
        return inner
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>gpudiag: {e(d.verdict)}</title></head><body>{inner}</body></html>"
    )


def write_html(d: Diagnosis, path: str) -> str | None:
    """Write the page; returns a one-line problem instead of raising (disk full, no dir)."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(render_html(d))
    except OSError as err:
        return f"cannot write the HTML report ({err.strerror or err})"
    return None
