"""The report's SVG drawings: stacked share bars, the timeline strip of a profiled window
and the per-step bars. Drawn here rather than in JavaScript, so they read the same with
scripts off.

    stacked_bar_svg({"input": 0.3, "compute": 0.7}, width=600)
    strip_svg(diagnosis.activity[0]["windows"][0], "rank 0 — window 1")
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpudiag.analyze.breakdown import CATEGORIES
from gpudiag.show.html.style import COLOURS, e, pct, swatch
from gpudiag.show.units import LABELS


def stacked_bar_svg(
    shares: dict[str, float], width: int = 600, height: int = 22, title: str = ""
) -> str:
    """A horizontal stacked bar with each share's percentage written on it when it fits."""
    return segments_svg(
        (
            (COLOURS[c], f"{e(LABELS[c])} {pct(shares.get(c, 0.0))}", shares.get(c, 0.0))
            for c in CATEGORIES
        ),
        width,
        height,
        e(title or "breakdown"),
    )


def segments_svg(
    segments: Iterable[tuple[str, str, float]], width: int, height: int, aria: str
) -> str:
    """The stacked bar the step's breakdown and the fit's account share: ``segments`` are
    (fill colour, the tooltip's HTML, share) in order; ``aria`` the label, HTML already."""
    parts = [
        f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{aria}">'
    ]
    x = 0.0
    for colour, tip, share in segments:
        w = max(0.0, share) * width
        if w <= 0:
            continue
        parts.append(
            f'<rect x="{x:.2f}" y="0" width="{w:.2f}" height="{height}" '
            f'fill="{colour}"><title>{tip}</title></rect>'
        )
        if w >= 38:
            parts.append(
                f'<text x="{x + w / 2:.1f}" y="{height / 2 + 4:.1f}" '
                f'text-anchor="middle" style="fill:#fff;font-weight:600">'
                f"{100 * share:.0f}%</text>"
            )
        x += w
    parts.append("</svg>")
    return "".join(parts)


def legend(shares: dict[str, float]) -> str:
    items = "".join(
        f"<span>{swatch(c)}{e(LABELS[c])} <b>{pct(shares.get(c, 0.0))}</b></span>"
        for c in CATEGORIES
    )
    return f'<div class="legend">{items}</div>'


def strip_svg(window: dict[str, Any], label: str) -> str:
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


def per_step_svg(rows: list[dict[str, float]], label: str) -> str:
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
                f"{e(LABELS[cat])} {pct(v)}</title></rect>"
            )
            base += hgt
    out.append(f'<text x="36" y="{h + 14}">steps →</text></svg>')
    return "".join(out)
