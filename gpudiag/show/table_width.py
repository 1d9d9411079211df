"""Terminal tables that fit the width they are given without cutting a word.

rich shrinks a table that is too wide by cutting cells (``verd…``, ``data…``) or by wrapping
figures and names over lines (``19.9\\nms``, ``CPU\\nreplica\\n0``). Here a table is built
for the width it gets at print time instead: the report's usual look when it fits; else a
compact look (no column rules, two-line headers); else without its least needed columns,
named under the table; else, narrower still, one entry per row (its name, then every column
as ``header value``), which wraps between figures, never inside a name.

    cols = [Col("rank", labels, justify="left"), Col("steps", counts, drop=1)]
    console.print(fitted_table("Ranks", cols))

``FirstFit`` does the same for any sequence of layouts (the compare view's bars shrink, then
go, before a word is cut).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from rich import box
from rich.console import Console, ConsoleOptions, Group, JustifyMethod, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

WIDE = 10_000  # the width a layout is measured at: its natural width, nothing wrapped


def natural_width(console: Console, options: ConsoleOptions, r: RenderableType) -> int:
    """The width ``r`` takes when nothing in it wraps."""
    return Measurement.get(console, options.update_width(WIDE), r).maximum


class FirstFit:
    """Renders the first layout whose natural width fits the width given at print time
    (the last one, wrapping, when none does). ``layouts`` is called for each print."""

    def __init__(self, layouts: Callable[[], Iterable[RenderableType]]) -> None:
        self.layouts = layouts

    def __rich_console__(
        self, console: Console, options: ConsoleOptions
    ) -> Iterator[RenderableType]:
        last: RenderableType = Text("")
        for last in self.layouts():
            if natural_width(console, options, last) <= options.max_width:
                break
        yield last


class Noted:
    """A table with a note under it that may use the whole width (a table's caption wraps
    at the table's width); measured as the table alone."""

    def __init__(self, table: Table, note: str) -> None:
        self.table, self.note = table, note

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self.table)

    def __rich_console__(
        self, console: Console, options: ConsoleOptions
    ) -> Iterator[RenderableType]:
        yield self.table
        yield Text(self.note, style="bright_black")


@dataclass(eq=False)
class Col:
    """One column: its header (``short``: the header in the compact look, e.g. on two
    lines), its cells, and ``drop``: 0 = always shown, else dropped in increasing order
    when the table does not fit."""

    header: str
    cells: Sequence[Text]
    justify: JustifyMethod = "right"
    drop: int = 0
    short: str = ""


def table(title: str, compact: bool = False) -> Table:
    """A titled table in the report's style: bold left title, no outer edge; ``compact``:
    no column rules, one space less between columns."""
    return Table(
        title=title,
        title_justify="left",
        title_style="bold",
        show_edge=False,
        pad_edge=False,
        box=box.SIMPLE_HEAVY if compact else box.HEAVY_HEAD,
        padding=(0, 1, 0, 0) if compact else (0, 1),
    )


def _table(title: str, cols: list[Col], compact: bool) -> Table:
    t = table(title, compact)
    for c in cols:
        t.add_column(
            (c.short or c.header) if compact else c.header, justify=c.justify, no_wrap=True
        )
    for row in zip(*(c.cells for c in cols), strict=True):
        t.add_row(*row)
    return t


class Packed:
    """Items on lines of the width given, separated by `` · ``, broken only between items
    (a figure stays with its unit and header); lines indented by ``indent``."""

    def __init__(self, items: list[Text], indent: int = 2) -> None:
        self.items, self.indent = items, indent

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        room = options.max_width - self.indent
        line = Text(" " * self.indent)
        used = 0
        for item in self.items:
            if used and used + 3 + item.cell_len > room:
                yield line
                line, used = Text(" " * self.indent), 0
            elif used:
                line.append(" · ")
                used += 3
            line.append_text(item)
            used += item.cell_len
        yield line


def _stacked(title: str, cols: list[Col]) -> Group:
    """One entry per row: its names (the left-aligned columns), then ``header value · …``
    indented below."""
    names = [c for c in cols if c.justify == "left"]
    rest = [c for c in cols if c.justify != "left"]
    parts: list[RenderableType] = [Text(title, style="bold")]
    for i in range(len(cols[0].cells)):
        parts.append(Text("  ").join(c.cells[i] for c in names))
        parts.append(Packed([Text(f"{c.header} ").append_text(c.cells[i]) for c in rest]))
    return Group(*parts)


def fitted_table(title: str, cols: list[Col]) -> FirstFit:
    """A table of ``cols`` that fits its width: see the module docstring for the order."""

    def layouts() -> Iterator[RenderableType]:
        yield _table(title, cols, compact=False)
        yield _table(title, cols, compact=True)
        shown = list(cols)
        for level in sorted({c.drop for c in cols if c.drop}):
            shown = [c for c in shown if c.drop != level]
            hidden = ", ".join(c.header for c in cols if all(c is not s for s in shown))
            yield Noted(_table(title, shown, True), f"not shown at this width: {hidden}")
        yield _stacked(title, cols)

    return FirstFit(layouts)
