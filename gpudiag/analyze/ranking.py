"""The ranking policy: the rules' remedies as one ordered list, each remedy once.

Every finding's rule offers its remedies (``advise``); each is checked against the run's
facts (``analyze/needs.py``: withheld, with why, where the run rules it out) and against
memory where it asks for a bigger batch (``analyze/headroom.py``). What is left is shown
when it is worth the reader's time (``thresholds.MIN_GAIN``, or an unestimated remedy that
could reach ``thresholds.UNESTIMATED_MIN_HIGH``) and ranked: the remedies of a rule that
declares ``SHOWN_FIRST`` (a correctness fix, resources freed for others, a crash prevented:
none is a speed-up) first, whatever their gain; then by expected gain.

    advice = advise_run(findings, situation)
    advice.suggestions      # ranked [Suggestion]
    advice.withheld         # [{"title", "remedy", "finding", "why", "source"}]
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gpudiag.analyze import batch_gate, headroom, input_arrays, input_plan
from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import Situation
from gpudiag.analyze.fit_gain import over_fit
from gpudiag.analyze.needs import Needs, admit
from gpudiag.analyze.rules import RULES
from gpudiag.analyze.wording import in_fits_keras
from gpudiag.analyze.workload import workload_facts

# findings whose remedies are shown first, whatever their gain: each rule says so itself
SHOWN_FIRST = frozenset(rule.ID for rule in RULES if getattr(rule, "SHOWN_FIRST", ""))


def _worth_showing(s: Suggestion) -> bool:
    if s.finding in SHOWN_FIRST:
        return True
    if s.expected_gain >= T.MIN_GAIN:
        return True
    return bool(s.expected_gain_range) and s.expected_gain_range[-1] >= T.UNESTIMATED_MIN_HIGH


def remedy_needs() -> dict[str, Needs]:
    """Every remedy's needs, from the rule modules' ``NEEDS`` tables (and the input plan's,
    which the input rules share)."""
    table: dict[str, Needs] = {**input_arrays.NEEDS, **input_plan.NEEDS}
    for rule in RULES:
        table.update(getattr(rule, "NEEDS", {}))
    return table


@dataclass
class Advice:
    """The ranked remedies, and those the run's facts ruled out (with why)."""

    suggestions: list[Suggestion] = field(default_factory=list)
    withheld: list[dict[str, str]] = field(default_factory=list)


def advise(findings: list[Finding], s: Situation) -> list[Suggestion]:
    """One ranked list: each remedy once (first finding that offers it), correctness fixes
    first, then by expected gain; only what the run's facts allow (``advise_run``)."""
    return advise_run(findings, s).suggestions


def advise_run(findings: list[Finding], s: Situation) -> Advice:
    """``advise`` with the remedies withheld because the run rules them out. A run that
    stopped early keeps its remedies but no gain modelled from its partial steps."""
    by_id = {rule.ID: rule for rule in RULES}
    needs = remedy_needs()
    facts = workload_facts(s.config, s.device_measured)
    advice = Advice()
    out = advice.suggestions
    seen: set[str] = set()
    for f in findings:
        rule = by_id.get(f.id)
        if rule is None:
            continue
        for offered in (in_fits_keras(x, s.config) for x in rule.advise(f, s)):
            checked = admit(offered, needs.get(offered.remedy), facts)
            if offered.remedy == batch_gate.BATCH_REMEDY and (held := batch_gate.held_by(s)):
                checked = replace(checked, suggestion=None, withheld=held, source="")
            sug = checked.suggestion
            if sug is not None:  # a batch remedy: does the bigger batch fit in memory?
                sug, too_big = headroom.attach(sug, s.memory, s.config)
                if too_big:
                    checked, sug = replace(checked, withheld=too_big, source=""), None
            if sug is None:
                if offered.title not in seen:
                    seen.add(offered.title)
                    advice.withheld.append(
                        {
                            "title": offered.title,
                            "remedy": offered.remedy,
                            "finding": offered.finding,
                            "why": checked.withheld,
                            "source": checked.source,
                        }
                    )
                continue
            if s.config.stopped_early and sug.finding not in SHOWN_FIRST:
                sug = _unmodelled(sug, s.stopped_note)
            if sug.title not in seen and (s.config.stopped_early or _worth_showing(sug)):
                seen.add(sug.title)
                out.append(sug)
    out = over_fit(out, s.fit)  # step gains as gains of the fit where steps are a minority
    out.sort(
        key=lambda x: (
            x.finding not in SHOWN_FIRST,
            -x.expected_gain,
            -(x.expected_gain_range[-1] if x.expected_gain_range else 1.0),
        )
    )
    for sug in out:
        sug.expected_gain = round(sug.expected_gain, 2)
    return advice


def _unmodelled(sug: Suggestion, why: str) -> Suggestion:
    """No gain from a run that stopped: its few steps need not stand for the run."""
    return replace(sug, expected_gain=1.0, expected_gain_range=[], basis=f"not modelled: {why}")
