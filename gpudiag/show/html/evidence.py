"""The findings table: each finding with its measured evidence, every figure with its unit
(the same unit table as the terminal report).

    findings_section(diagnosis)   # "<h2>Findings</h2><table>…"
"""

from __future__ import annotations

from typing import Any

from gpudiag.analyze.diagnosis import Diagnosis, Finding
from gpudiag.show.html.style import SEVERITY_COLOURS, e
from gpudiag.show.units import KEY_UNITS, UNIT_SUFFIXES


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


def findings_section(d: Diagnosis) -> str:
    if not d.findings:
        return "<h2>Findings</h2><p>No finding crossed its threshold.</p>"
    return (
        "<h2>Findings</h2><table><tr><th>severity</th><th>finding</th>"
        f"<th>evidence (measured)</th></tr>{''.join(_finding(f) for f in d.findings)}"
        "</table>"
    )
