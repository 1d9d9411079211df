"""The whole page: header with the verdict, the sections in reading order, caveats.

Path("report.html").write_text(render_html(diagnosis))   # gpudiag analyze ... --html
render_html(diagnosis, fragment=True)                      # a notebook cell
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Diagnosis
from gpudiag.show.html.charts import legend, stacked_bar_svg
from gpudiag.show.html.evidence import findings_section
from gpudiag.show.html.fit_account import fit_section
from gpudiag.show.html.sections import (
    devices_section,
    per_step_section,
    ranks_section,
    suggestions_section,
    timeline_section,
)
from gpudiag.show.html.style import CSS, SCRIPT, VERDICT_COLOURS, e
from gpudiag.version import __version__


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
        fit_section(d),
        "<h2>Where step time goes</h2>",
        stacked_bar_svg(d.breakdown, 700, 26, "mean breakdown of step time"),
        legend(d.breakdown),
        timeline_section(d),
        per_step_section(d),
        ranks_section(d),
        devices_section(d),
        findings_section(d),
        suggestions_section(d),
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
