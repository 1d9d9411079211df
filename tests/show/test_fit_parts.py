"""Every part of the fit's account has its mark in the terminal and the HTML page: a part the
account gains (per-batch callbacks, the time between the fits of a loop) is drawn, not a
KeyError that loses the whole report."""

from __future__ import annotations

import re

from rich.console import Console

from gpudiag.analyze.fit_account import PARTS
from gpudiag.show.fit_bar import FIT_COLOURS, FIT_GLYPHS, fit_bar, fit_legend
from gpudiag.show.html import fit_account as html_fit


def _every_part() -> dict:
    share = 1.0 / len(PARTS)
    return {
        "shares": dict.fromkeys(PARTS, share),
        "seconds": dict.fromkeys(PARTS, 2.0),
    }


def test_every_part_has_a_glyph_and_colours():
    assert set(PARTS) <= set(FIT_GLYPHS) & set(FIT_COLOURS) & set(html_fit.FIT_COLOURS)
    assert len(set(FIT_GLYPHS.values())) == len(FIT_GLYPHS)  # told apart without colour


def test_a_fit_with_every_part_is_drawn_in_the_terminal_and_in_html():
    fit = _every_part()
    console = Console(width=200, no_color=True, record=True)
    console.print(fit_bar(fit["shares"], 100, plain=True))
    console.print(fit_legend(fit, plain=True, width=200))
    out = console.export_text()
    for p in PARTS:
        assert FIT_GLYPHS[p] in out.splitlines()[0], p
    assert "per-batch callbacks" in out and "between fits" in out
    page = html_fit._bar(fit)
    assert len(re.findall(r"<rect ", page)) == len(PARTS)
