"""Terminal view of ``gpudiag compare``: both verdicts, step times, what moved, which fix.

    Console().print(render_comparison(compare(base, new), "before.json", "after.json"))

Rendering only: every figure comes from the Comparison (the same numbers as ``--json``).
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from gpudiag.analyze.breakdown import CATEGORIES
from gpudiag.analyze.compare import Comparison, RunFigures
from gpudiag.show.report import COLOURS, VERDICT_STYLE
from gpudiag.show.safe import clean, text
from gpudiag.show.table_width import FirstFit
from gpudiag.show.table_width import table as section_table
from gpudiag.show.units import LABELS

STATUS_STYLE = {"applied": "bold green", "not applied": "yellow", "unknown": "bright_black"}


def _ms(v: float | None) -> str:
    return "—" if v is None else f"{v:.1f} ms"


def _side(name: str, label: str, r: RunFigures, unit: str) -> Text:
    t = Text()
    t.append(f"{name:<5}", style="bold")
    t.append(f" {r.verdict.upper()} ", style=VERDICT_STYLE.get(r.verdict, ""))
    rate = r.per_second
    speed = "" if not rate else f"{rate:,.{0 if rate >= 100 else 2}f} {unit}/s, "
    t.append(
        f"  {speed}median step {_ms(r.median_step_ms)}, p90 {_ms(r.p90_step_ms)}, {r.steps} steps\n"
    )
    if r.stopped:
        t.append(f"      {r.stopped}\n", style="bold yellow")
    t.append(f"      {clean(label)}", style="bright_black")
    for phase in r.phases:  # warm-up, cache fill, slowdowns: a side's median hides them
        t.append(f"\n      phase: {clean(phase)}", style="bright_black")
    return t


def _unit(c: Comparison) -> str:
    return "samples" if c.base.global_batch and c.new.global_batch else "steps"


def _bar(share: float, width: int = 20) -> str:
    n = max(0, min(width, round(share * width)))
    return "█" * n + "·" * (width - n)


BAR_WIDTHS = (*range(20, 7, -1), 0)  # tried in turn until the table fits; 0: no bars


def shares_table(c: Comparison) -> FirstFit:
    """Each category's share in BASE and NEW, with bars as wide as the width allows (none
    when they would be shorter than 8 cells) and the change in percentage points."""

    def layout(bar: int) -> Table:
        t = section_table("Share of step time")
        heads = ("", "BASE", "", "NEW", "", "change") if bar else ("", "BASE", "NEW", "change")
        for i, col in enumerate(heads):
            t.add_column(col, justify="left" if i == 0 else "right", no_wrap=True)
        for cat in CATEGORIES:
            b, n = c.base.breakdown.get(cat, 0.0), c.new.breakdown.get(cat, 0.0)
            d = c.share_deltas[cat]
            base: list[str | Text] = [f"{100 * b:.1f}%"]
            new: list[str | Text] = [f"{100 * n:.1f}%"]
            if bar:
                base.append(Text(_bar(b, bar), style=COLOURS[cat]))
                new.append(Text(_bar(n, bar), style=COLOURS[cat]))
            t.add_row(
                Text(LABELS[cat], style=COLOURS[cat]),
                *base,
                *new,
                Text(f"{100 * d:+.1f} pp", style="green" if abs(d) < 0.005 else "bold"),
            )
        return t

    return FirstFit(lambda: (layout(bar) for bar in BAR_WIDTHS))


def render_comparison(c: Comparison, base_label: str, new_label: str) -> RenderableType:
    parts: list[RenderableType] = [
        _side("BASE", base_label, c.base, _unit(c)),
        _side("NEW", new_label, c.new, _unit(c)),
        Text(""),
    ]
    head = Text()
    w = c.work
    if w is not None:
        sure = bool(w["measurable"]) and not w["contended"] and c.judged
        faster = w["speedup"] > 1.0
        head.append(
            f"work per second NEW/BASE {w['speedup']:.2f}×  ",
            style=("bold green" if faster else "bold red") if sure else "bold",
        )
    elif c.unmeasured:
        head.append("not measured  ", style="bold yellow")
    head.append(clean(c.summary))
    parts += [head, Text("")]
    parts.append(shares_table(c))
    if c.gone or c.appeared:
        parts.append(Text(""))
        if c.gone:
            parts.append(text("findings gone:     " + ", ".join(c.gone), style="green"))
        if c.appeared:
            parts.append(text("findings appeared: " + ", ".join(c.appeared), style="yellow"))
    if c.remedies:
        r = section_table("Remedies BASE's report suggested")
        r.add_column("status")
        r.add_column("remedy")
        r.add_column("evidence", overflow="fold")
        for m in c.remedies:
            r.add_row(Text(m.status, style=STATUS_STYLE[m.status]), text(m.title), text(m.note))
        parts += [Text(""), r]
    return Panel(
        Group(*parts), title=escape("gpudiag compare"), title_align="left", border_style="blue"
    )
