"""docs/causes.md stays honest: every row marked "covered" names a rule id that exists in
the registry and that a test exercises, and every rule id the page names exists."""

from __future__ import annotations

import re

from gpudiag.analyze.rules import RULES
from tests.helpers.paths import REPO

COVERAGE = {"covered", "partial", "seen only", "not seen"}


def rows() -> list[list[str]]:
    out = []
    for line in (REPO / "docs" / "causes.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 5 and cells[4] in COVERAGE:
            out.append(cells)
    return out


def ids_under_test() -> set[str]:
    """Rule ids a test names, by id or by module (``rules import x`` / ``rules.x``)."""
    text = "\n".join(
        p.read_text() for p in (REPO / "tests").rglob("*.py") if p.name != "test_docs_causes.py"
    )
    return {
        r.ID for r in RULES if r.ID in text or re.search(rf"\b{r.__name__.split('.')[-1]}\b", text)
    }


def test_every_covered_cause_is_a_tested_rule():
    ids = {r.ID for r in RULES}
    tested = ids_under_test()
    covered = [r for r in rows() if r[4] == "covered"]
    assert len(covered) >= 30
    for cause, _, detection, _, _ in covered:
        named = re.findall(r"`([a-z0-9-]+)`", detection)
        assert named, f"{cause}: no rule id"
        assert named[0] in ids, f"{cause}: {named[0]} is no rule"
        assert named[0] in tested, f"{cause}: {named[0]} is not tested"


def test_every_rule_id_the_page_names_exists():
    ids = {r.ID for r in RULES}
    for cause, _, detection, _, _ in rows():
        for name in re.findall(r"`([a-z0-9]+(?:-[a-z0-9]+)+)`", detection):
            assert name in ids, f"{cause}: {name}"
