"""The terminal's stacked bars and their legends, one drawing for the step's breakdown and
the fit's account: a run of blocks per part, proportional to its share (a letter per part
where there is no colour), and a legend of marked items (``■ input wait 34%   ■ host↔device
1%``) broken between items, never between a mark and its label, where the width runs out.

    block_bar([("I", "red", 0.3), ("C", "green", 0.7)], width=40, plain=False)
    wrapped_legend([("I", "red", "input wait 34%")], plain=False, width=80)
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


def block_bar(
    segments: Iterable[tuple[str, str, float]], width: int, plain: bool, pad: bool = False
) -> Text:
    """``segments``: (the plain-text glyph, the style, the share) of each part, in order;
    parts of no share are left out and the last part drawn takes what rounding left.
    ``pad``: fill what no part takes (no part at all) with a dim shade."""
    text = Text()
    used = 0
    shown = [(g, style, share) for g, style, share in segments if share > 0]
    for i, (glyph, style, share) in enumerate(shown):
        n = width - used if i == len(shown) - 1 else round(share * width)
        n = max(0, min(n, width - used))
        text.append((glyph if plain else "█") * n, style=style)
        used += n
    if pad and used < width:
        text.append("░" * (width - used), style="bright_black")
    return text
