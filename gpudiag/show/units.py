"""Figures as people read them: evidence with its unit, a gain with its range. Every view
(terminal, HTML, TensorBoard) formats through here, so they agree.

    evidence_item("input_share_pct", 40.0)      # "input share 40.0%"
    gain_text(1.45, [1.3, 1.6])                 # "1.45× (1.30–1.60×)"
"""

from __future__ import annotations

# evidence keys carry their unit as a suffix; the report prints the unit, not the suffix
UNIT_SUFFIXES = (
    ("_pct", "%"),
    ("_ms", " ms"),
    ("_us", " µs"),
    ("_cores", " cores"),
    ("_mib", " MiB"),
    ("_s", " s"),
)
KEY_UNITS = {"waiting_in": " ms"}  # keys kept for compatibility, with their unit
# keys whose name alone would leave a reader guessing what the figure covers
KEY_LABELS = {"waiting_in": "total wait over the profiled steps in", "steps": "profiled steps"}
# what each breakdown category (analyze.breakdown.CATEGORIES) is called in every view
LABELS = {
    "input": "input wait",
    "transfer": "copies",
    "compute": "compute",
    "sync": "exposed sync",
    "other": "other/idle",
}


def evidence_item(key: str, value: object) -> str:
    """``input_share_pct=40.0`` -> ``input share 40.0%``; dicts show their first two items."""
    unit = KEY_UNITS.get(key, "")
    for suffix, u in UNIT_SUFFIXES:
        if key.endswith(suffix):
            key, unit = key[: -len(suffix)], u
            break
    label = KEY_LABELS.get(key, key.replace("_", " "))
    if isinstance(value, dict):
        inner = ", ".join(f"{kk}: {vv}{unit}" for kk, vv in list(value.items())[:2])
        return f"{label}: {inner}"
    if value is None:
        return f"{label}: not measured"
    if isinstance(value, bool):
        return f"{label}: {'yes' if value else 'no'}"
    if not unit and isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)  # a count: "kernels per step 900", not "900.0"
    return f"{label} {value}{unit}"


def gain_text(point: float, rng: list[float], sep: str = " ") -> str:
    """``1.45× (1.30–1.60×)``; ``up to 1.80×`` when no point estimate is claimed; ``fix`` for
    correctness fixes."""
    if not rng:
        return "fix" if point <= 1.0 else f"{point:.2f}×"
    lo, hi = rng[0], rng[-1]
    if point <= 1.0:
        return f"up to {hi:.2f}×"
    if hi - lo < 0.02:
        return f"{point:.2f}×"
    return f"{point:.2f}×{sep}({lo:.2f}–{hi:.2f}×)"
