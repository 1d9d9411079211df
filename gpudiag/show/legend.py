"""A legend of marked items (``■ input wait 34%   ■ host↔device 1%``), broken between items,
never between a mark and its label, where the width runs out: the step's and the fit's bars
share it.

    wrapped_legend([("▒", "red", "input wait 34%")], plain=False, width=80)
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text


def wrapped_legend(entries: Iterable[tuple[str, str, str]], plain: bool, width: int) -> Text:
    """``entries``: (the plain-text glyph, the style, the label) of each item."""
    text = Text()
    used = 0
    for glyph, style, item in entries:
        if used and used + 5 + len(item) > width:
            text.append("\n")
            used = 0
        elif used:
            text.append("   ")
            used += 3
        text.append(f"{glyph} " if plain else "■ ", style=style)
        text.append(item)
        used += 2 + len(item)
    return text
