"""What a remedy needs from the run before it may be offered. Pure.

Each rule declares, next to its thresholds, a ``NEEDS`` table: for each remedy it can give
(``Suggestion.remedy``), the facts it requires (``analyze/workload.py``), and the known
combinations where it breaks or cannot help, each with its source. ``admit`` checks one
suggestion against the run's facts:

* a fact that contradicts a requirement, or a known incompatibility whose facts all match:
  the remedy is withheld, and the diagnosis lists it with the reason (``withheld``);
* a required fact the run cannot tell: the remedy is offered with what to check first, and
  its gain becomes a range whose point is its low end (the claim rests on an assumption);
* an incompatibility whose known facts match and whose others are unknown: the remedy says
  when not to apply it, with the source.

    NEEDS = {"steps-per-execution": Needs(requires={"keras": OneOf(True)}, breaks=(...))}
    verdict = admit(suggestion, NEEDS.get(suggestion.remedy), facts)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from gpudiag.analyze.diagnosis import Suggestion


@dataclass(frozen=True)
class OneOf:
    """The fact is one of these values."""

    values: tuple[Any, ...]

    def __init__(self, *values: Any) -> None:
        object.__setattr__(self, "values", values)

    def holds(self, value: Any) -> bool:
        return value in self.values

    def __str__(self) -> str:
        return " or ".join(_word(v) for v in self.values)


@dataclass(frozen=True)
class Below:
    """The fact is a number below ``limit`` (a compute capability, a worker count)."""

    limit: float

    def holds(self, value: Any) -> bool:
        return _number(value) and value < self.limit

    def __str__(self) -> str:
        return f"below {self.limit:g}"


@dataclass(frozen=True)
class AtLeast:
    limit: float

    def holds(self, value: Any) -> bool:
        return (
            isinstance(value, int | float) and not isinstance(value, bool) and value >= self.limit
        )

    def __str__(self) -> str:
        return f"{self.limit:g} or more"


Cond = OneOf | Below | AtLeast


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class Breaks:
    """A known incompatibility: with every fact in ``when`` holding, the remedy fails or buys
    nothing. ``why`` says what happens; ``source`` where that is established."""

    when: Mapping[str, Cond]
    why: str
    source: str = ""


@dataclass(frozen=True)
class Needs:
    """``requires``: facts the remedy needs (each with what to check where it is unknown, in
    ``check``); ``breaks``: the known incompatibilities."""

    requires: Mapping[str, Cond] = field(default_factory=dict)
    breaks: tuple[Breaks, ...] = ()
    check: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Admission:
    suggestion: Suggestion | None  # None: withheld
    withheld: str = ""  # why, when withheld
    source: str = ""


def admit(sug: Suggestion, needs: Needs | None, facts: Mapping[str, Any]) -> Admission:
    """The suggestion as this run's facts allow it: unchanged, qualified, or withheld."""
    if needs is None:
        return Admission(sug)
    unknown: list[str] = []
    for name, cond in needs.requires.items():
        value = facts.get(name)
        if value is None:
            unknown.append(name)
        elif not cond.holds(value):
            return Admission(None, f"needs {_fact(name)} {cond}; this run: {_word(value)}", "")
    cautions: list[str] = []
    for b in needs.breaks:
        known = {k: c for k, c in b.when.items() if facts.get(k) is not None}
        if not all(c.holds(facts[k]) for k, c in known.items()):
            continue  # a known fact rules the incompatibility out
        if len(known) == len(b.when):
            return Admission(None, b.why, b.source)
        if known or len(b.when) == 1:
            open_facts = [k for k in b.when if k not in known]
            cautions.append(
                f"not where {', '.join(f'{_fact(k)} is {b.when[k]}' for k in open_facts)}: "
                f"{b.why}" + (f" ({b.source})" if b.source else "")
            )
    if not unknown and not cautions:
        return Admission(sug)
    checks = [needs.check.get(k, f"{_fact(k)} ({needs.requires[k]})") for k in unknown]
    assumes = checks + cautions
    detail = sug.detail.rstrip()
    if checks:
        detail += " Check first: " + "; ".join(checks) + "."
    if cautions:
        detail += " " + "; ".join(c[0].upper() + c[1:] for c in cautions) + "."
    low = sug.expected_gain_range[0] if sug.expected_gain_range and checks else None
    return Admission(
        replace(
            sug,
            detail=detail,
            expected_gain=low if low is not None else sug.expected_gain,
            basis=sug.basis
            + (
                "; the point is the range's low end until that is checked"
                if low is not None
                else ""
            ),
            assumes=assumes,
        )
    )


_FACT_WORDS = {
    "keras": "Keras's fit driving the loop",
    "keras_major": "the Keras major version",
    "training": "training (not inference)",
    "decode_loop": "a token-by-token decode loop",
    "vendor": "the GPU's maker",
    "compute_capability": "the GPU's compute capability",
    "device_measured": "device time measured",
    "stopped_early": "a run that stopped early",
    "input_kind": "the input",
    "use_multiprocessing": "worker processes",
}


def _fact(name: str) -> str:
    return _FACT_WORDS.get(name, name.replace("_", " "))


def _word(value: Any) -> str:
    if value is True:
        return "yes"
    if value is False:
        return "no"
    return str(value)


def describe(needs: Needs) -> tuple[str, str]:
    """``needs`` in words: (what it requires, what rules it out) for docs and audits."""
    req = "; ".join(f"{_fact(k)}: {c}" for k, c in needs.requires.items()) or "—"
    out = "; ".join(
        " and ".join(f"{_fact(k)} {c}" for k, c in b.when.items())
        + f": {b.why}"
        + (f" ({b.source})" if b.source else "")
        for b in needs.breaks
    )
    return req, out or "—"
