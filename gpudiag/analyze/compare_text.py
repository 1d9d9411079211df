"""The sentences of ``gpudiag compare``: the speed figure first, then the median step as a
distribution fact, then what was done. Pure; the figures come from ``compare.py``.

    summary(comparison, few_steps=20)
    # "NEW does 2.10× the work per second of BASE (95% interval 1.80–2.45×, per sample, over
    #  epochs 2–3 of each); median step 12.2 → 3.4 ms: NEW's steps fall in two groups ..."
"""

from __future__ import annotations

from gpudiag.analyze.comparison import Comparison


def predicted(gain: float, rng: list[float], speedup: float | None) -> str:
    """What BASE's report predicted, and where the measured speed-up falls against it."""
    if not rng and gain <= 1.0:
        return "no gain was predicted"
    lo, hi = (rng[0], rng[-1]) if rng else (gain, gain)
    text = f"predicted {gain:.2f}×" if gain > 1.0 else f"predicted up to {hi:.2f}×"
    if rng and hi - lo >= 0.02:
        text += f" ({lo:.2f}–{hi:.2f}×)"
    if speedup is None:
        return text
    if speedup < lo - 0.01:
        return text + ": measured below it"
    if speedup > hi + 0.01:
        return text + ": measured above it"
    return text + ": measured within it"


def _over(c: Comparison) -> str:
    b, n = c.base.steady, c.new.steady
    if b == n:
        return f"over {b} of each" if b else ""
    return f"over BASE's {b} and NEW's {n}"


def _speed(c: Comparison, few_steps: int) -> str:
    """The headline: work per second NEW/BASE, or why it cannot be given."""
    w = c.work
    if w is None:
        return c.unmeasured or "speeds cannot be compared (a run has no steady training steps)"
    unit, (lo, hi), s = w["unit"], w["speedup_interval"], w["speedup"]
    span = f"95% interval {lo:.2f}–{hi:.2f}×"
    over = _over(c)
    if not w["measurable"]:
        why = f"{span} holds 1.00×"
        few = min(c.base.steady_steps, c.new.steady_steps)
        if few < few_steps:
            why += f"; with {few} steady steps on a side the noise is wide: record more steps"
        text = (
            f"no measurable difference in work per second: NEW does {s:.2f}× BASE's per "
            f"{unit}, within the noise ({why}{', ' + over if over else ''})"
        )
    else:
        text = "NEW" if s >= 1.0 else "NEW is slower: it"
        text += f" does {s:.2f}× the work per second of BASE ({span}, per {unit}"
        text += f", {over})" if over else ")"
        few = min(c.base.steady_steps, c.new.steady_steps)
        if few < few_steps:
            text += f"; only {few} steady steps on a side: record more for a firmer figure"
    if unit == "sample" and c.base.global_batch != c.new.global_batch:
        text += f"; batch {c.base.global_batch} → {c.new.global_batch}"
    return text


def _median(c: Comparison) -> str:
    """The median step beside the speed, and when a side's steps fall in two groups, what
    that means for its median."""
    b, n = c.base.median_step_ms, c.new.median_step_ms
    if b is None or n is None or c.step_time_ratio is None:
        return ""
    text = f"median step {b:.1f} → {n:.1f} ms (×{c.step_time_ratio:.2f}, a distribution fact"
    text += ", not the speed-up)" if c.work is not None else ")"
    for name, r in (("BASE", c.base), ("NEW", c.new)):
        m = r.bimodal
        if m:
            text += (
                f"; {name}'s steps fall in two groups, {100 * (1 - m['slow_share']):.0f}% near "
                f"{m['fast_ms']:.1f} ms and {100 * m['slow_share']:.0f}% near "
                f"{m['slow_ms']:.1f} ms ({m['meaning']}), so its median is no measure "
                "of its speed"
            )
    return text


def _stops(c: Comparison) -> str:
    parts = []
    for name, r in (("BASE", c.base), ("NEW", c.new)):
        if r.stopped and c.work is not None:
            parts.append(
                f"{name} {r.stopped} after {r.steps} steps: its speed is that of the "
                f"{r.steady_steps} steady steps it ran, and no gate judges it"
            )
    return "; ".join(parts)


def _attribution(c: Comparison) -> str:
    if c.differences:
        return (
            "; BASE and NEW are different programs ("
            + ", ".join(c.differences)
            + "): "
            + ("the figure compares them as they are; " if c.work else "")
            + "nothing is attributed to a remedy, and no gate judges them"
        )
    applied = [r for r in c.remedies if r.status == "applied"]
    if applied:
        what = (
            "; the remedy BASE suggested was applied: "
            if len(applied) == 1
            else "; remedies BASE suggested were applied (the speed-up is theirs together): "
        )
        return what + ", ".join(f"{r.title} ({r.note.split(';')[0]})" for r in applied)
    if c.changes:
        return "; changed: " + ", ".join(c.changes) + " (not a remedy BASE suggested)"
    if c.remedies and all(r.status == "unknown" for r in c.remedies) and not c.unmeasured:
        return "; the traces do not record what changed, so no remedy can be named as applied"
    return ""


def _contended(c: Comparison) -> str:
    w = c.work
    if not w or not w["contended"]:
        return ""
    who = " and ".join(f"{k} ({v:.0f}%)" for k, v in w["contended"].items())
    return (
        f"; other processes took the host CPU during {who}, so the difference may be "
        "theirs, not the change's: time both again on a quiet machine (no gate fires)"
    )


def summary(c: Comparison, few_steps: int) -> str:
    parts = [_speed(c, few_steps), _median(c), _stops(c)]
    text = "; ".join(p for p in parts if p)
    return text + _contended(c) + _attribution(c)
