"""The terminal report a person reads in ten seconds: verdict, breakdown, evidence, fixes.

    from rich.console import Console
    Console().print(render_report(diagnosis))

Rendering only: every number comes from the Diagnosis (nothing is computed here that the JSON
does not also carry).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from gpudiag.analyze.breakdown import CATEGORIES
from gpudiag.analyze.diagnosis import Diagnosis
from gpudiag.show.bars import block_bar, wrapped_legend
from gpudiag.show.fit_bar import fit_bar, fit_legend, fit_title, not_measured
from gpudiag.show.safe import clean, text
from gpudiag.show.table_width import table as section_table
from gpudiag.show.tables import devices_table, ranks_table
from gpudiag.show.units import LABELS, evidence_item, gain_text

COLOURS = {
    "input": "red",
    "transfer": "magenta",
    "compute": "green",
    "sync": "yellow",
    "other": "bright_black",
}
VERDICT_STYLE = {
    "data-starved": "bold white on red",
    "sync-bound": "bold black on yellow",
    "compute-bound": "bold white on green",
    "inconclusive": "bold white on bright_black",
}
SEVERITY_STYLE = {"high": "bold red", "moderate": "yellow", "info": "cyan"}


# Without colour (a pipe, a log, NO_COLOR) blocks all look alike: each category gets a letter.
GLYPHS = {"input": "I", "transfer": "T", "compute": "C", "sync": "S", "other": "."}


class ColourAware:
    """A renderable built when printed, knowing whether the console shows colour and the
    width it is given."""

    def __init__(self, make: Callable[[bool, int], Text]) -> None:
        self.make = make

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        yield self.make(console.color_system is None or console.no_color, options.max_width)


def stacked_bar(shares: dict[str, float], width: int, plain: bool = False) -> Text:
    """One line, each category a run of blocks proportional to its share (letters when
    ``plain``: no colour to tell them apart)."""
    return block_bar(
        ((GLYPHS[c], COLOURS[c], shares.get(c, 0)) for c in CATEGORIES), width, plain, pad=True
    )


def legend(shares: dict[str, float], plain: bool = False, width: int = 1000) -> Text:
    """``■ input wait 34%   ■ host↔device 1%   …``, broken between items (never between a
    mark and its label) where ``width`` runs out."""
    return wrapped_legend(
        (
            (GLYPHS[cat], COLOURS[cat], f"{LABELS[cat]} {100 * shares.get(cat, 0):.0f}%")
            for cat in CATEGORIES
        ),
        plain,
        width,
    )


def step_strip(per_step: list[dict[str, float]], width: int, plain: bool = False) -> Text:
    """Steps side by side, each a small stacked bar: bursts and idle gaps at a glance."""
    if not per_step:
        return Text("")
    cell = max(1, min(12, width // len(per_step) - 1))
    shown = per_step[: max(1, width // (cell + 1))]
    text = Text()
    for row in shown:
        text.append_text(stacked_bar(row, cell, plain))
        text.append("│", style="bright_black")
    if len(shown) < len(per_step):
        text.append(f" +{len(per_step) - len(shown)} steps", style="bright_black")
    return text


def _evidence_text(evidence: dict[str, object]) -> str:
    return " · ".join(evidence_item(k, v) for k, v in evidence.items() if k != "fix")


def _title(names: list[str], room: int) -> tuple[Text, bool]:
    """``gpudiag — <sources>`` and True; where the border would cut that, the file names
    alone or their count, and False (the panel then opens with the full paths)."""
    title = "gpudiag — " + ", ".join(names)
    if cell_len(clean(title)) <= room:
        return text(title), True
    title = "gpudiag — " + ", ".join(os.path.basename(n) for n in names)
    if cell_len(clean(title)) > room:
        title = f"gpudiag — {len(names)} traces" if len(names) > 1 else "gpudiag"
    return text(title), False


def render_report(d: Diagnosis, width: int = 100) -> RenderableType:
    bar_width = max(20, min(80, width - 10))
    head = Text()
    head.append(f" {d.verdict.upper()} ", style=VERDICT_STYLE[d.verdict])
    head.append(f"  confidence {d.confidence:.2f}  ", style="bold")
    head.append(clean(d.reason))
    parts: list[RenderableType] = [head, Text(""), *_fit_parts(d, bar_width)]
    if d.verdict != "inconclusive" or any(d.breakdown.values()):
        parts += [
            Text("Step time", style="bold"),
            ColourAware(lambda plain, _: stacked_bar(d.breakdown, bar_width, plain)),
            ColourAware(lambda plain, width: legend(d.breakdown, plain, width)),
        ]
        st = d.steps
        if st.get("analyzed"):
            parts.append(
                Text(
                    f"{st['analyzed']} of {st['count']} steps profiled; step median "
                    f"{st['median_ms']:.1f} ms, p90 {st['p90_ms']:.1f} ms",
                    style="bright_black",
                )
            )
        if d.per_step:
            parts += [
                Text(""),
                Text("Per step (busy vs idle)", style="bold"),
                ColourAware(lambda plain, _: step_strip(d.per_step, bar_width, plain)),
            ]
    if d.findings:
        t = section_table("Evidence")
        t.add_column("severity")
        t.add_column("finding", overflow="fold")
        t.add_column("what was measured", overflow="fold")
        for f in d.findings:
            t.add_row(
                text(f.severity, style=SEVERITY_STYLE.get(f.severity, "")),
                text(f.id, style="bold").append("\n" + clean(f.title), style=""),
                text(_evidence_text(f.evidence)),
            )
        parts += [Text(""), t]
    if d.suggestions:
        t = section_table("Top fixes")
        t.add_column("gain", justify="right")
        t.add_column("change", overflow="fold")
        for s in d.suggestions[:5]:
            gain = gain_text(s.expected_gain, s.expected_gain_range, "\n")
            t.add_row(
                Text(gain, style="bold green"),
                text(s.title, style="bold")
                .append(f"\n{clean(s.detail)}\n", style="")
                .append(clean(f"basis: {s.basis}"), style="bright_black"),
            )
        parts += [Text(""), t]
    if d.devices:
        parts += [Text(""), devices_table(d.devices[:32])]
    if len(d.ranks) > 1:
        parts += [Text(""), ranks_table(d.ranks[:64])]
    if d.limitations:
        parts += [Text(""), Text("Not measured / caveats", style="bold")]
        bullets = Table.grid(padding=(0, 1, 0, 0))  # wrapped lines stay under their text
        bullets.add_column(style="bright_black")
        bullets.add_column(style="bright_black")
        for lim in d.limitations:
            bullets.add_row("•", text(lim))
        parts.append(bullets)
    names = d.sources or [d.producer]
    title, whole = _title(names, width - 6)
    if not whole:
        parts.insert(0, text(", ".join(names), style="bright_black"))
    return Panel(Group(*parts), title=title, title_align="left", border_style="blue")


def _fit_parts(d: Diagnosis, bar_width: int) -> list[RenderableType]:
    """The whole fit's bar (gpudiag's own traces), or the line saying it was not measured."""
    fit = d.run.get("fit") if isinstance(d.run, dict) else None
    missing = not_measured(fit)
    if missing is not None:
        return [missing, Text("")]
    if not fit:
        return []
    return [
        fit_title(fit),
        ColourAware(lambda plain, _: fit_bar(fit["shares"], bar_width, plain)),
        ColourAware(lambda plain, width: fit_legend(fit, plain, width)),
        Text(""),
    ]


def plain_report(d: Diagnosis) -> list[Text]:
    """The report as short lines without boxes or bars, for terminals too narrow for panels
    (or of unknown width): verdict first, then shares, findings, fixes and caveats."""
    out = [
        text(f"{d.verdict.upper()} (confidence {d.confidence:.2f})", style="bold"),
        text(d.reason),
    ]
    fit = d.run.get("fit") if isinstance(d.run, dict) else None
    if fit and fit.get("measured"):
        out.append(fit_legend(fit, plain=True, width=40))
    if d.verdict != "inconclusive" or any(d.breakdown.values()):
        out += [Text(f"{LABELS[c]} {100 * d.breakdown.get(c, 0):.0f}%") for c in CATEGORIES]
    out += [text(f"finding {f.id} ({f.severity}): {f.title}") for f in d.findings]
    out += [text(f"fix: {s.title}") for s in d.suggestions[:4]]
    out += [text(f"caveat: {lim}", style="bright_black") for lim in d.limitations]
    return out
