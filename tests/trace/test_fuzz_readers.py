"""A small seeded run of the fuzz harness (``benchmarks/fuzz_readers.py``): the sample traces
mutated every way the harness knows, each mutant analyzed by ``gpudiag analyze --json`` in
its own process under a time limit and an address-space cap; any traceback, signal, other
exit code, timeout, non-finite or implausible figure, or noisy stderr fails the test."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from benchmarks.fuzz_mutations import Base, all_bases, mutants, mutations_for
from benchmarks.fuzz_readers import DEFECTS, fuzz, judge

pytestmark = pytest.mark.timeout(120)


def test_a_seeded_subset_of_mutants_has_no_defect(tmp_path: Path) -> None:
    bases = all_bases(events=300)
    # one base per reader: Kineto, trace-viewer JSON, gpudiag stream, xplane
    chosen = [b for b in bases if b.name in ("mi250_rocm_minitoy", "tf_trace_viewer")]
    chosen += [b for b in bases if b.kind in ("gpudiag", "xplane")]
    per_base = {"json": 9, "gpudiag": 9, "xplane": 3}
    outcomes = []
    for i, base in enumerate(chosen):
        outcomes += fuzz([base], per_base[base.kind], seed=i, workdir=tmp_path, timeout=20)
    defects = [f"{o.verdict}: {o.mutation}: {o.detail}" for o in outcomes if o.verdict in DEFECTS]
    assert not defects, "\n".join(defects)
    assert len(outcomes) == 30
    assert {o.verdict for o in outcomes} == {"answer", "refused"}  # both paths exercised


def test_mutants_are_deterministic_and_cover_every_mutation() -> None:
    base = Base("b", "json", b'{"traceEvents": [\n{"ph": "X", "name": "k", "ts": 1, "dur": 2}\n]}')
    first = list(mutants(base, 22, random.Random(5)))
    assert first == list(mutants(base, 22, random.Random(5)))
    assert {what for what, _ in first} == {m.__name__ for m in mutations_for(base)}


@pytest.mark.parametrize(
    ("code", "out", "err", "verdict"),
    [
        (0, b'{"steps": {"median_ms": 5.0}, "breakdown": {"input": 0.5}}', b"", "answer"),
        (2, b"", b"gpudiag: F: truncated JSON\n", "refused"),
        (2, b"", b"gpudiag: F: a\nsecond line\n", "stderr"),
        (2, b"", b"gpudiag: F: internal KeyError\n", "stderr"),
        (2, b"", b"gpudiag: other: wrong file named\n", "stderr"),
        (1, b"", b"Traceback (most recent call last):\n  x\nKeyError: 1\n", "traceback"),
        (-6, b"", b"", "signal"),
        (3, b"", b"", "exit"),
        (0, b'{"steps": {"median_ms": NaN}}', b"", "non-finite"),
        (0, b'{"steps": {"median_ms": 1e305}}', b"", "implausible"),
        (0, b'{"steps": {"median_ms": 1.0}, "breakdown": {"input": 7}}', b"", "implausible"),
        (0, b'{"steps": {"median_ms": 1.0}}', b"RuntimeWarning: overflow\n", "stderr"),
        (0, b'{"steps": {"median_ms": 9.0, "max_ms": 1e305}}', b"", "implausible"),
        (0, b'{"steps": {"sample_ms": [9.0, 1e305]}}', b"", "implausible"),
        (0, b'{"run": {"epochs": [{"seconds": 1e302}]}}', b"", "implausible"),
    ],
)
def test_the_judge_tells_answers_refusals_and_defects_apart(code, out, err, verdict) -> None:
    assert judge(code, out, err, "F")[0] == verdict


@pytest.mark.timeout(240)
def test_the_structure_aware_families_have_no_defect(tmp_path: Path) -> None:
    """Metadata counts (xplane), device counts and string boundaries (Kineto JSON),
    impossible times in bounds (every reader, which must name them): one mutant of each."""
    bases = {b.name: b for b in all_bases(events=300)}
    plan = [
        ("xplane", "metadata_counts"),
        ("xplane", "impossible_times"),
        ("mi250_rocm_minitoy", "device_counts"),
        ("mi250_rocm_minitoy", "string_boundaries"),
        ("mi250_rocm_minitoy", "impossible_times"),
        ("tf_trace_viewer", "impossible_times"),
        ("gpudiag_stream", "impossible_times"),
    ]
    outcomes = []
    for i, (name, what) in enumerate(plan):
        base = bases[name]
        per_base = len(mutations_for(base))  # each mutation once, in turn
        outcomes += fuzz([base], per_base, seed=i, workdir=tmp_path, timeout=60, only=(what,))
    defects = [f"{o.verdict}: {o.mutation}: {o.detail}" for o in outcomes if o.verdict in DEFECTS]
    assert not defects, "\n".join(defects)
    assert len(outcomes) == len(plan)
    assert max(o.rss_mb for o in outcomes) < 400
