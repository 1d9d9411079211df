"""Advice audit: every remedy gpudiag offers on the sample traces, the facts it relied on and
the facts it could not read; and the table of what each remedy needs (docs/remedies.md).

    python benchmarks/advice_audit.py                 # the audit over sample_traces/
    python benchmarks/advice_audit.py TRACE...        # over these traces
    python benchmarks/advice_audit.py --needs-table   # the docs table, from the rules' NEEDS

A remedy's facts are those its ``NEEDS`` requires or its incompatibilities name
(``analyze/needs.py``); "unknown" lists those the trace could not tell, which the remedy then
says to check first.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpudiag.analyze import diagnose, ranking  # noqa: E402
from gpudiag.analyze.needs import describe  # noqa: E402
from gpudiag.trace.load import load_file  # noqa: E402

TRACE_ENDINGS = (".pt.trace.json.gz", ".json.gz", ".xplane.pb")
NOT_TRACES = ("nvml_replay", "smi_pairs", "runs.json")


def needs_table() -> str:
    rows = ["| remedy | needs | ruled out by (why, source) |", "|---|---|---|"]
    for remedy, needs in sorted(ranking.remedy_needs().items()):
        requires, rules_out = describe(needs)
        rows.append(f"| `{remedy}` | {requires} | {rules_out} |")
    return "\n".join(rows)


def facts_of(remedy: str) -> list[str]:
    needs = ranking.remedy_needs().get(remedy)
    if needs is None:
        return []
    names = list(needs.requires)
    for b in needs.breaks:
        names += [k for k in b.when if k not in names]
    return names


def audit(paths: list[str]) -> None:
    for path in paths:
        # each trace alone in its own folder: xprof caches beside its input
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, os.path.basename(path))
            shutil.copy(path, copy)
            try:
                d = diagnose(load_file(copy))
            except Exception as e:  # an unreadable file is reported, the audit goes on
                print(f"{os.path.basename(path)}: not read ({type(e).__name__}: {e})")
                continue
        print(f"\n{os.path.basename(path)} — {d.verdict}")
        for s in d.suggestions:
            relied = {k: d.workload.get(k) for k in facts_of(s.remedy)}
            known = {k: v for k, v in relied.items() if v != "unknown"}
            unknown = [k for k, v in relied.items() if v == "unknown"]
            print(
                f"  {s.expected_gain:5.2f}x  {s.title[:60]:60s} [{s.remedy or '-'}]\n"
                f"          relied on {known or '-'}; unknown {unknown or '-'}"
            )
        for w in d.withheld:
            print(f"  withheld  {w['title'][:60]} [{w['remedy']}]: {w['why']}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("traces", nargs="*")
    p.add_argument("--needs-table", action="store_true")
    a = p.parse_args()
    if a.needs_table:
        print(needs_table())
        return 0
    paths = a.traces or sorted(
        str(p)
        for p in (ROOT / "sample_traces").rglob("*")
        if p.name.endswith(TRACE_ENDINGS) and not p.name.startswith(NOT_TRACES)
    )
    audit(paths)
    return 0


if __name__ == "__main__":
    sys.exit(main())
