"""Predicted, wall clock and ``gpudiag compare`` side by side, on before/after pairs where a
median step misleads.

Each case is a scenario of ``fix_gains.py`` trained as a multi-epoch fit with DiagnoseCallback
in every run (before and after alike). The before run's diagnosis gives the remedies and their
predicted gains; each remedy with a programmatic form is applied as a user would. Every run
is a fresh process; before and after alternate for ``--reps`` rounds. For each round:

- wall clock: samples over the seconds of epochs 2 and later, timed by a callback of the
  benchmark's own (Keras's ``on_epoch_begin``/``on_epoch_end``);
- compare: ``gpudiag compare BEFORE AFTER`` on the two traces of that round (its work per
  second, 95% interval, and whether it calls the difference measurable);
- load: the share of the host CPU other processes took during each run (psutil).

measured = median after / median before (wall clock); the prediction holds within ±25%;
compare agrees when its figure is within 15% of the same round's wall clock.

    python benchmarks/fix_pairs.py                    # every case (about 10 minutes quiet)
    python benchmarks/fix_pairs.py mirrored_tiny --reps 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fix_gains  # the scenarios, and how a remedy is applied

AGREE = 0.15  # compare's figure within 15% of the same round's wall clock

CASES = {
    "pydataset_workers": ("pydataset", "PyDataset(workers=1), Python per sample"),
    "generator_pool": ("generator", "Python generator (the remedy: a worker PyDataset)"),
    "mirrored_tiny": ("mirrored", "MirroredStrategy, 2 logical CPUs, tiny MLP"),
    "cached_decode": ("cached_decode", "Python decode in a map, then .cache()"),
}
# Changes timed beside the remedies although gpudiag does not suggest them: what a report
# read from the cache-filling first epoch alone would have asked for.
UNSUGGESTED = {
    "cached_decode": [("(not suggested) parallelise the map before .cache()", {"parallel": True})],
}
EPOCH_STEPS = {"pydataset": 40, "generator": 40, "mirrored": 64, "cached_decode": 128}
EPOCHS = 4


def child(scenario: str, variant: dict[str, Any], trace: str) -> dict[str, Any]:
    """One recorded fit: wall-clock samples/s over epochs 2+, others' CPU, the diagnosis."""
    import keras

    from gpudiag import DiagnoseCallback
    from gpudiag.record.host import HostMonitor

    steps = EPOCH_STEPS[scenario]
    model, data, batch, kw = fix_gains.build(scenario, variant)
    spans: list[list[float]] = []
    mon: list[Any] = []  # others' CPU over the timed epochs (2 and later)
    others: list[float | None] = [None]

    class Clock(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            spans.append([time.perf_counter()])
            if epoch == 1:
                mon.append(HostMonitor())

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            spans[-1].append(time.perf_counter())
            if epoch == EPOCHS - 1 and mon:
                others[0] = mon[0].read().cpu_others

    cb = DiagnoseCallback(trace_path=trace, dataset=data, quiet=True)
    model.fit(data, epochs=EPOCHS, steps_per_epoch=steps, verbose=0, callbacks=[Clock(), cb], **kw)
    seconds = sum(e - b for b, e in spans[1:])
    d = cb.diagnosis
    return {
        "samples_per_s": steps * batch * (EPOCHS - 1) / seconds,
        "others_pct": others[0],
        "trace": cb.trace_path,
        "diagnosis": d.to_dict() if d is not None else None,
    }


def run_child(scenario: str, variant: dict[str, Any], trace: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env["PYTHONPATH"] = fix_gains.ROOT + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, os.path.abspath(__file__), "--child", scenario, json.dumps(variant)]
    r = subprocess.run([*cmd, trace], capture_output=True, text=True, timeout=600, env=env)
    for line in reversed(r.stdout.splitlines()):
        if line.startswith("RESULT "):
            return dict(json.loads(line[7:]))
    tail = r.stderr.strip().splitlines()[-1:] if r.stderr else ""
    raise RuntimeError(f"{scenario} {variant}: no result (rc {r.returncode}): {tail}")


def compared(before: str, after: str) -> dict[str, Any]:
    """``gpudiag compare``'s figure for one round, as its ``--json`` gives it."""
    r = subprocess.run(
        [sys.executable, "-m", "gpudiag", "compare", before, after, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": fix_gains.ROOT},
    )
    d = json.loads(r.stdout)
    w = d.get("work") or {}
    return {
        "speedup": w.get("speedup"),
        "interval": w.get("speedup_interval"),
        "measurable": w.get("measurable"),
        "median_ratio": d.get("step_time_ratio"),
        "status": next(
            (m["status"] for m in d.get("remedies") or [] if m["status"] == "applied"), "-"
        ),
    }


@dataclass
class Row:
    case: str
    remedy: str
    predicted: float
    low: float
    high: float
    variant: dict[str, Any] | None
    offered: bool = True
    before: list[float] = field(default_factory=list)
    after: list[float] = field(default_factory=list)
    compare: list[dict[str, Any]] = field(default_factory=list)
    load: list[float] = field(default_factory=list)


def measure(case: str, reps: int, tmp: str) -> tuple[list[Row], str]:
    scenario = CASES[case][0]
    cores = os.cpu_count() or 2
    rows: list[Row] = []
    verdict = "?"
    for rep in range(reps):
        base = run_child(scenario, {}, os.path.join(tmp, f"{case}-{rep}-before.json"))
        if not rows:
            d = base["diagnosis"] or {}
            verdict = str(d.get("verdict"))
            for s in d.get("suggestions") or []:
                rng = s.get("expected_gain_range") or [s["expected_gain"]] * 2
                v = fix_gains.apply(s["title"], cores)
                rows.append(Row(case, s["title"], s["expected_gain"], rng[0], rng[-1], v))
            for label, v in UNSUGGESTED.get(case, []):
                rows.append(Row(case, label, 1.0, 1.0, 1.0, v, offered=False))
        for i, row in enumerate(rows):
            if row.variant is None:
                continue
            after = run_child(scenario, row.variant, os.path.join(tmp, f"{case}-{rep}-{i}.json"))
            row.before.append(base["samples_per_s"])
            row.after.append(after["samples_per_s"])
            row.load += [x for x in (base["others_pct"], after["others_pct"]) if x is not None]
            row.compare.append(compared(base["trace"], after["trace"]))
    return rows, verdict


def report(row: Row, verdict: str) -> str:
    pred = f"{row.predicted:.2f} ({row.low:.2f}–{row.high:.2f})" if row.offered else "—"
    if not row.after:
        return f"{row.case:18s} {verdict:14s} {row.remedy[:42]:42s} {pred:>17s}  not timed"
    walls = [a / b for a, b in zip(row.after, row.before, strict=True)]
    measured = statistics.median(row.after) / statistics.median(row.before)
    figs = [c["speedup"] for c in row.compare]
    agree = [f is not None and abs(f / w - 1) <= AGREE for f, w in zip(figs, walls, strict=True)]
    holds = abs(row.predicted / measured - 1) <= fix_gains.TOLERANCE
    result = ("holds" if holds else "off") if row.offered else "-"
    load = statistics.median(row.load) if row.load else float("nan")
    return (
        f"{row.case:18s} {verdict:14s} {row.remedy[:42]:42s} {pred:>17s} {measured:7.2f} "
        f"{result:5s}{' SLOWER' if measured < 1 and row.offered else '':7s}\n"
        f"{'':20s}per round: wall {'/'.join(f'{w:.2f}' for w in walls)}; compare "
        + "/".join(
            "-" if c["speedup"] is None else f"{c['speedup']:.2f}{'' if c['measurable'] else '~'}"
            for c in row.compare
        )
        + f" ({sum(agree)}/{len(agree)} within 15%); median step ×"
        + "/".join(f"{c['median_ratio']:.2f}" for c in row.compare if c["median_ratio"])
        + f"; remedy {row.compare[-1]['status']}; others' CPU {load:.0f}%"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*", help="default: all")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--child", nargs=3, metavar=("SCENARIO", "VARIANT", "TRACE"))
    args = ap.parse_args()
    if args.child:
        res = child(args.child[0], json.loads(args.child[1]), args.child[2])
        print("RESULT " + json.dumps(res), flush=True)
        os._exit(0)  # TF can hang at exit
    names = args.cases or list(CASES)
    for n in names:
        if n not in CASES:
            print(f"fix_pairs: unknown case {n!r} ({', '.join(CASES)})", file=sys.stderr)
            return 2
    print(
        f"{'case':18s} {'verdict':14s} {'remedy':42s} {'predicted':>17s} {'wall':>7s} result"
        "\n(compare: its work per second; ~ = within its noise)"
    )
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for n in names:
            rows, verdict = measure(n, args.reps, tmp)
            for row in rows:
                print(report(row, verdict), flush=True)
    print(f"({time.time() - t0:.0f} s; {args.reps} interleaved rounds, median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
