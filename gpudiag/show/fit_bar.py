"""The whole fit as one bar in the terminal report: training steps, validation, epoch-end
callbacks, epoch starts, start-up, gpudiag, the rest — or one line saying it was not measured.

    fit = diagnosis.run["fit"]
    not_measured(fit)                    # the one line when the fit was not measured, else None
    fit_title(fit)                       # "The whole fit (41.2 s, 3 epochs)"
    fit_bar(fit["shares"], width=80)     # the bar
    fit_legend(fit)                      # each part's share, in its colour

Rendering only: the figures are ``run.fit`` of the Diagnosis (analyze/fit_account.py).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from gpudiag.analyze.fit_account import PART_LABELS, PARTS
from gpudiag.show.bars import block_bar, wrapped_legend
from gpudiag.show.safe import text

FIT_COLOURS = {
    "steps": "green",
    "validation": "blue",
    "callbacks": "magenta",
    "batch_callbacks": "bright_magenta",
    "between_fits": "bright_red",
    "epoch_start": "red",
    "startup": "yellow",
    "gpudiag": "cyan",
    "other": "bright_black",
}
# without colour each part gets a letter
FIT_GLYPHS = {
    "steps": "S",
    "validation": "V",
    "callbacks": "C",
    "batch_callbacks": "B",
    "between_fits": "L",
    "epoch_start": "E",
    "startup": "U",
    "gpudiag": "g",
    "other": ".",
}


def fit_bar(shares: dict[str, float], width: int, plain: bool = False) -> Text:
    """One line, each part a run of blocks proportional to its share of the fit."""
    return block_bar(
        ((FIT_GLYPHS[p], FIT_COLOURS[p], shares.get(p, 0)) for p in PARTS), width, plain
    )


def fit_legend(fit: dict[str, Any], plain: bool = False, width: int = 1000) -> Text:
    """``■ training steps 10% (0.7 s)   ■ validation 46% (3.5 s)   …``, parts under 0.5%
    left out, broken between items where ``width`` runs out."""
    shares, seconds = fit.get("shares", {}), fit.get("seconds", {})
    return wrapped_legend(
        (
            (
                FIT_GLYPHS[p],
                FIT_COLOURS[p],
                f"{PART_LABELS[p]} {100 * shares[p]:.0f}% ({seconds.get(p, 0.0):.1f} s)",
            )
            for p in PARTS
            if shares.get(p, 0.0) >= 0.005
        ),
        plain,
        width,
    )


def fit_title(fit: dict[str, Any]) -> Text:
    epochs = fit.get("epochs", 0)
    return Text(
        f"The whole fit ({fit.get('wall_s', 0.0):.1f} s, {epochs} epoch"
        + ("s" if epochs != 1 else "")
        + ")",
        style="bold",
    )


def not_measured(fit: dict[str, Any] | None) -> Text | None:
    """The line a report shows where the trace holds no fit (a foreign profile)."""
    if not fit or fit.get("measured"):
        return None
    return text(f"The whole fit: {fit.get('reason', 'not measured')}", style="bright_black")
