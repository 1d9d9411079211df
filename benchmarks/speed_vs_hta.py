"""``gpudiag analyze --json`` against HolisticTraceAnalysis on the same PyTorch (Kineto) trace.

What is measured, and why this way:

* **Whole processes.** A user runs ``gpudiag analyze TRACE --json`` in a shell or CI step, so
  its cost includes interpreter start-up, imports, gunzip, JSON decoding, analysis, output
  and tear-down. HTA is measured the same way: ``hta_temporal_breakdown.py`` run by the
  interpreter of HTA's own venv (``--hta-python``; HTA is never a gpudiag dependency) does
  ``TraceAnalysis(trace_dir=...)`` (parse, align, drop the incomplete last step) and
  ``get_temporal_breakdown(visualize=False)``: the closest HTA counterpart of gpudiag's
  step-time breakdown. HTA takes a directory, so each trace is symlinked alone into one.
* **Wall time**: median of ``--runs`` runs (default 3) after one warm-up run per tool and
  trace (the warm-up fills the page cache and the bytecode cache); gpudiag and HTA runs are
  interleaved so a slow spell on a shared machine hits both. CPU time (user + sys) is kept
  in the ``--json-out`` results too.
* **Peak RSS** of each process: the benchmark starts the child with ``subprocess.Popen`` and
  reaps it itself with ``os.wait4(pid)``, which returns the rusage of *that* child alone
  (its ``ru_maxrss`` high-water mark, plus any of its own reaped children's, max not sum).
  No ``RUSAGE_CHILDREN`` deltas (a high-water mark over all children cannot be
  differenced), no polling (which misses short peaks), no dependency on ``/usr/bin/time``.
  Linux carries the high-water mark of the image before ``exec`` over to the child, i.e.
  this process's RSS at spawn time is a floor (not an addition) under every child's figure:
  the benchmark therefore never loads a trace itself (generation and event counting run in
  subprocesses) and stays at about the size of a bare interpreter, and that floor is
  printed (``python -c pass``). Reported: the largest peak of the measured runs.
* **Bytecode**: children get ``PYTHONPYCACHEPREFIX`` pointing into the work directory (and no
  ``PYTHONDONTWRITEBYTECODE``), so both tools run from cached bytecode as after a normal
  install, without writing into the repository or the venvs.
* **Traces**: the largest Kineto trace in ``shared/traces/kineto`` (a real A100 run with
  NCCL, about 109k events) and a synthetic one ``--factor`` (10) times larger made from it
  by ``make_synthetic_kineto.py`` (its ProfilerStep iterations replicated with shifted
  timestamps and fresh correlation ids), written gzipped into the work directory (a temp dir
  unless ``--work-dir``). Linear scaling of gpudiag is checked on the ``--scaling`` factors
  (1, 2, 5, 10 by default): seconds and MiB per million events, and a least-squares fit.

Targets: gpudiag at least 3x faster than HTA, and a lower peak RSS.

    python benchmarks/speed_vs_hta.py
    python benchmarks/speed_vs_hta.py --runs 5 --hta-python ../hta-venv/bin/python
    python benchmarks/speed_vs_hta.py --no-hta --scaling 1,2,5,10,20

HTA's venv (once): ``python3 -m venv ../hta-venv && ../hta-venv/bin/pip install
HolisticTraceAnalysis``. POSIX only (``os.wait4``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
GENERATOR = HERE / "make_synthetic_kineto.py"
HTA_RUNNER = HERE / "hta_temporal_breakdown.py"
SPEEDUP_TARGET = 3.0
MIB = 2**20


@dataclass
class Run:
    """One finished child process."""

    wall_s: float
    cpu_s: float  # user + sys of the child
    peak_bytes: int  # ru_maxrss of the child
    rc: int
    stdout: str
    stderr: str


@dataclass
class Result:
    """Measured runs of one tool on one trace (the warm-up not included)."""

    tool: str
    runs: list[Run] = field(default_factory=list)
    error: str | None = None
    output: dict[str, Any] | None = None  # the tool's JSON answer, from the last run

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.runs)

    @property
    def wall_s(self) -> float:
        return statistics.median(r.wall_s for r in self.runs)

    @property
    def cpu_s(self) -> float:
        return statistics.median(r.cpu_s for r in self.runs)

    @property
    def peak_mib(self) -> float:
        return max(r.peak_bytes for r in self.runs) / MIB

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"tool": self.tool, "error": self.error}
        if self.ok:
            d.update(
                wall_s_median=round(self.wall_s, 3),
                cpu_s_median=round(self.cpu_s, 3),
                peak_mib_max=round(self.peak_mib, 1),
                wall_s_runs=[round(r.wall_s, 3) for r in self.runs],
                peak_mib_runs=[round(r.peak_bytes / MIB, 1) for r in self.runs],
            )
        return d


@dataclass
class Trace:
    label: str
    path: Path
    events: int
    json_bytes: int
    file_bytes: int


def run_process(cmd: list[str], env: dict[str, str], cwd: Path) -> Run:
    """Run ``cmd`` to completion; wall time, and CPU time and peak RSS from ``os.wait4``."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env, cwd=cwd
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    # Linux reports ru_maxrss in KiB, macOS in bytes.
    peak = usage.ru_maxrss if sys.platform == "darwin" else usage.ru_maxrss * 1024
    return Run(
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        peak_bytes=peak,
        rc=proc.returncode,
        stdout=stdout,
        stderr=stderr,
    )


def tail(text: str, lines: int = 6) -> str:
    return "\n".join("    " + ln for ln in text.strip().splitlines()[-lines:])


class Tool:
    """How to run one analyzer as a whole process on a trace."""

    name = ""

    def __init__(self, python: str) -> None:
        self.python = python

    def command(self, trace: Trace) -> list[str]:
        raise NotImplementedError

    def parse(self, run: Run) -> dict[str, Any]:
        return json.loads(run.stdout.strip().splitlines()[-1])


class Gpudiag(Tool):
    name = "gpudiag"

    def command(self, trace: Trace) -> list[str]:
        return [self.python, "-m", "gpudiag", "analyze", str(trace.path), "--json"]

    def parse(self, run: Run) -> dict[str, Any]:
        return json.loads(run.stdout)

    @staticmethod
    def summary(out: dict[str, Any]) -> str:
        b = out.get("breakdown") or {}
        parts = ", ".join(f"{k} {100 * v:.1f}%" for k, v in b.items())
        return f"verdict {out.get('verdict')}; breakdown {parts}"


class Hta(Tool):
    name = "HTA"

    def __init__(self, python: str, stage_dir: Path) -> None:
        super().__init__(python)
        self.stage_dir = stage_dir

    def trace_dir(self, trace: Trace) -> Path:
        """A directory holding only this trace (HTA reads every trace file in its dir)."""
        d = self.stage_dir / trace.label
        link = d / trace.path.name
        if not link.exists():
            d.mkdir(parents=True, exist_ok=True)
            link.symlink_to(trace.path.resolve())
        return d

    def command(self, trace: Trace) -> list[str]:
        return [self.python, str(HTA_RUNNER), str(self.trace_dir(trace))]

    @staticmethod
    def summary(out: dict[str, Any]) -> str:
        rows = out.get("breakdown") or [{}]
        r = rows[0]
        return (
            f"HTA {out.get('hta_version')}: {out.get('iterations')} iterations; "
            f"idle {r.get('idle_time_pctg')}%, compute {r.get('compute_time_pctg')}%, "
            f"non-compute {r.get('non_compute_time_pctg')}% (in-process: import "
            f"{out.get('import_s')} s, parse {out.get('parse_s')} s, breakdown "
            f"{out.get('breakdown_s')} s)"
        )


def measure(
    tools: list[Tool], trace: Trace, runs: int, env: dict[str, str], cwd: Path, log: bool = True
) -> dict[str, Result]:
    """Warm up each tool once on ``trace``, then ``runs`` interleaved measured runs each."""
    results = {t.name: Result(t.name) for t in tools}
    for rnd in range(runs + 1):
        for tool in tools:
            res = results[tool.name]
            if res.error:
                continue
            run = run_process(tool.command(trace), env, cwd)
            what = "warm-up" if rnd == 0 else f"run {rnd}/{runs}"
            if log:
                print(
                    f"  {trace.label:<14} {tool.name:<8} {what:<9} {run.wall_s:8.2f} s "
                    f"{run.peak_bytes / MIB:8.0f} MiB",
                    file=sys.stderr,
                    flush=True,
                )
            if run.rc != 0:
                res.error = f"exit {run.rc}:\n{tail(run.stderr)}"
                continue
            try:
                res.output = tool.parse(run)
            except (ValueError, IndexError) as e:
                res.error = f"unreadable output ({e}):\n{tail(run.stdout)}"
                continue
            if rnd > 0:
                res.runs.append(run)
    return results


def trace_info(label: str, path: Path, stats: dict[str, Any]) -> Trace:
    return Trace(
        label=label,
        path=path,
        events=int(stats["events"]),
        json_bytes=int(stats["json_bytes"]),
        file_bytes=int(stats["file_bytes"]),
    )


def stats_of(path: Path) -> dict[str, Any]:
    """Count events in a subprocess, so this process never holds a trace (see docstring)."""
    out = subprocess.run(
        [sys.executable, str(GENERATOR), "--stats", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)


def synthesize(src: Path, factor: int, work: Path) -> Trace:
    out = work / f"{src.name.split('.')[0]}_x{factor}.json.gz"
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(GENERATOR), str(src), "--factor", str(factor), "-o", str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    stats = json.loads(proc.stdout)
    print(
        f"  made {out.name}: {stats['events']:,} events, "
        f"{stats['file_bytes'] / MIB:.1f} MiB gz, {stats['json_bytes'] / MIB:.0f} MiB JSON "
        f"({time.perf_counter() - t0:.1f} s)",
        file=sys.stderr,
        flush=True,
    )
    return trace_info(f"synthetic x{factor}", out, stats)


def default_trace() -> Path | None:
    """The largest trace in shared/traces/kineto (in the checkout, or beside it)."""
    for d in (REPO / "shared" / "traces" / "kineto", REPO.parent / "shared" / "traces" / "kineto"):
        if d.is_dir():
            files = [p for p in d.iterdir() if p.name.endswith((".json", ".json.gz"))]
            if files:
                return max(files, key=lambda p: p.stat().st_size)
    return None


def default_hta_python() -> str:
    return os.environ.get("GPUDIAG_HTA_PYTHON") or str(REPO.parent / "hta-venv" / "bin" / "python")


def child_env(work: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    return env


def check_python(python: str, module: str, env: dict[str, str], cwd: Path) -> str | None:
    """None if ``python`` exists and can import ``module``; else why not."""
    if not (shutil.which(python) or Path(python).is_file()):
        return f"{python} not found"
    probe = subprocess.run(
        [python, "-c", f"import {module}"], capture_output=True, text=True, env=env, cwd=cwd
    )
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        return f"{python} cannot import {module} ({last})"
    return None


def fmt_table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(
        h.rjust(w) if i else h.ljust(w)
        for i, (h, w) in enumerate(zip(headers, widths, strict=True))
    )
    out = [line, "-" * len(line)]
    for r in rows:
        out.append(
            "  ".join(
                c.rjust(w) if i else c.ljust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
        )
    return "\n".join(out)


def comparison_table(traces: list[Trace], results: dict[str, dict[str, Result]]) -> str:
    headers = [
        "trace",
        "events",
        "size MB",
        "JSON MB",
        "gpudiag s",
        "HTA s",
        "speed-up x",
        "gpudiag peak MiB",
        "HTA peak MiB",
        f">={SPEEDUP_TARGET:g}x faster",
        "lower peak RSS",
    ]
    rows = []
    for t in traces:
        g, h = results[t.label]["gpudiag"], results[t.label].get("HTA")
        row = [
            t.label,
            f"{t.events:,}",
            f"{t.file_bytes / 1e6:.1f}",
            f"{t.json_bytes / 1e6:.0f}",
            f"{g.wall_s:.2f}" if g.ok else "failed",
        ]
        if h is not None and h.ok and g.ok:
            speedup = h.wall_s / g.wall_s
            row += [
                f"{h.wall_s:.2f}",
                f"{speedup:.2f}",
                f"{g.peak_mib:.0f}",
                f"{h.peak_mib:.0f}",
                "yes" if speedup >= SPEEDUP_TARGET else "NO",
                "yes" if g.peak_mib < h.peak_mib else "NO",
            ]
        else:
            why = "skipped" if h is None else "failed"
            row += [why, "-", f"{g.peak_mib:.0f}" if g.ok else "-", why, "-", "-"]
        rows.append(row)
    return fmt_table(headers, rows)


def scaling_table(points: list[tuple[int, Trace, Result]]) -> tuple[str, dict[str, float]]:
    ok = [(f, t, r) for f, t, r in points if r.ok]
    headers = ["factor", "events", "gpudiag s", "s / M events", "peak MiB", "MiB / M events"]
    rows = [
        [
            f"x{f}",
            f"{t.events:,}",
            f"{r.wall_s:.2f}",
            f"{r.wall_s / (t.events / 1e6):.2f}",
            f"{r.peak_mib:.0f}",
            f"{r.peak_mib / (t.events / 1e6):.0f}",
        ]
        for f, t, r in ok
    ]
    fit: dict[str, float] = {}
    if len(ok) >= 2:
        xs = [t.events / 1e6 for _, t, _ in ok]
        for key, ys in (("s", [r.wall_s for *_, r in ok]), ("MiB", [r.peak_mib for *_, r in ok])):
            slope, intercept = statistics.linear_regression(xs, ys)
            fit[f"{key}_per_M_events"] = slope
            fit[f"{key}_fixed"] = intercept
            if len(ok) >= 3:
                fit[f"{key}_r2"] = statistics.correlation(xs, ys) ** 2
    return fmt_table(headers, rows), fit


def profile_gpudiag(python: str, trace: Trace, env: dict[str, str], cwd: Path, top: int) -> str:
    cmd = [
        python,
        "-m",
        "cProfile",
        "-s",
        "cumtime",
        "-m",
        "gpudiag",
        "analyze",
        str(trace.path),
        "--json",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd).stdout
    lines = out.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("ncalls")), None)
    if start is None:
        return "(no profile output)"
    head = [ln for ln in lines[:start] if "function calls" in ln]
    return "\n".join(head + lines[start : start + 1 + top])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--trace",
        type=Path,
        default=default_trace(),
        help="real Kineto trace (default: the largest in shared/traces/kineto)",
    )
    ap.add_argument(
        "--factor",
        type=int,
        default=10,
        help="size of the synthetic trace, in copies of the real one (10)",
    )
    ap.add_argument(
        "--scaling",
        default="1,2,5,10",
        help="synthetic factors to time gpudiag on ('' to skip; default 1,2,5,10)",
    )
    ap.add_argument("--runs", type=int, default=3, help="measured runs per tool and trace (3)")
    ap.add_argument(
        "--gpudiag-python",
        default=sys.executable,
        help="interpreter with gpudiag installed (default: this one)",
    )
    ap.add_argument(
        "--hta-python",
        default=default_hta_python(),
        help="interpreter of a venv with HolisticTraceAnalysis (default: "
        "$GPUDIAG_HTA_PYTHON or ../hta-venv/bin/python)",
    )
    ap.add_argument("--no-hta", action="store_true", help="time gpudiag only")
    ap.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="where synthetic traces go (default: a temp dir, removed at the end)",
    )
    ap.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="also cProfile gpudiag on the largest trace, print the top N entries",
    )
    ap.add_argument("--json-out", type=Path, default=None, help="also write all figures here")
    args = ap.parse_args(argv)
    if args.trace is None or not args.trace.is_file():
        ap.error("no trace: pass --trace (shared/traces/kineto not found)")
    if args.runs < 1 or args.factor < 1:
        ap.error("--runs and --factor must be >= 1")
    try:
        scaling = sorted({int(x) for x in args.scaling.split(",") if x.strip()})
    except ValueError:
        ap.error(f"--scaling: comma-separated integers expected, got {args.scaling!r}")
    if any(f < 1 for f in scaling):
        ap.error("--scaling factors must be >= 1")

    temp = args.work_dir is None
    work = Path(tempfile.mkdtemp(prefix="gpudiag-vs-hta-")) if temp else args.work_dir
    work.mkdir(parents=True, exist_ok=True)
    cwd = work / "cwd"  # neutral cwd: `-m gpudiag` must import the installed package
    cwd.mkdir(exist_ok=True)
    env = child_env(work)
    try:
        return _bench(args, scaling, work, cwd, env)
    finally:
        if temp:
            shutil.rmtree(work, ignore_errors=True)


def _bench(
    args: argparse.Namespace, scaling: list[int], work: Path, cwd: Path, env: dict[str, str]
) -> int:
    problem = check_python(args.gpudiag_python, "gpudiag", env, cwd)
    if problem:
        print(f"error: {problem} (use --gpudiag-python)", file=sys.stderr)
        return 2
    tools: list[Tool] = [Gpudiag(args.gpudiag_python)]
    hta_note = "HTA: skipped (--no-hta)"
    if not args.no_hta:
        problem = check_python(args.hta_python, "hta.trace_analysis", env, cwd)
        if problem:
            venv = REPO.parent / "hta-venv"
            hta_note = (
                f"HTA: SKIPPED, {problem}. Install it in its own venv: python3 -m venv "
                f"{venv} && {venv}/bin/pip install HolisticTraceAnalysis, then pass "
                f"--hta-python {venv}/bin/python"
            )
        else:
            tools.append(Hta(args.hta_python, work / "hta"))
            hta_note = f"HTA: {args.hta_python}"
    print(hta_note, file=sys.stderr, flush=True)

    floors = {t.name: run_process([t.python, "-c", "pass"], env, cwd) for t in tools}

    real = trace_info(args.trace.name.split(".")[0], args.trace, stats_of(args.trace))
    synth: dict[int, Trace] = {}
    for f in sorted({args.factor, *scaling}):
        synth[f] = synthesize(args.trace, f, work)

    traces = [real, synth[args.factor]]
    results: dict[str, dict[str, Result]] = {}
    for t in traces:
        results[t.label] = measure(tools, t, args.runs, env, cwd)
    gpudiag_only = [tools[0]]
    points: list[tuple[int, Trace, Result]] = []
    for f in scaling:
        t = synth[f]
        if t.label not in results:
            results[t.label] = measure(gpudiag_only, t, args.runs, env, cwd)
        points.append((f, t, results[t.label]["gpudiag"]))

    print()
    print(
        f"gpudiag analyze --json vs HTA TraceAnalysis + get_temporal_breakdown: median of "
        f"{args.runs} runs after 1 warm-up; peak = largest ru_maxrss of the measured runs"
    )
    print(f"gpudiag: {args.gpudiag_python}")
    print(hta_note)
    print(
        "interpreter floor (python -c pass): "
        + ", ".join(
            f"{n} {r.wall_s:.2f} s / {r.peak_bytes / MIB:.0f} MiB" for n, r in floors.items()
        )
    )
    print()
    print(comparison_table(traces, results))
    print()
    for t in traces:
        for name, res in results[t.label].items():
            if res.error:
                print(f"{t.label} / {name} FAILED: {res.error}")
            elif res.output is not None:
                summary = (
                    Gpudiag.summary(res.output) if name == "gpudiag" else Hta.summary(res.output)
                )
                print(f"{t.label} / {name}: {summary}")
    fit: dict[str, float] = {}
    if points:
        print()
        print("gpudiag scaling on synthetic traces (same run protocol):")
        table, fit = scaling_table(points)
        print(table)
        if fit:
            print(
                f"least-squares fit: time = {fit['s_fixed']:.2f} s + "
                f"{fit['s_per_M_events']:.2f} s per M events"
                + (f" (R^2 {fit['s_r2']:.4f})" if "s_r2" in fit else "")
                + f"; peak = {fit['MiB_fixed']:.0f} MiB + {fit['MiB_per_M_events']:.0f} MiB "
                "per M events" + (f" (R^2 {fit['MiB_r2']:.4f})" if "MiB_r2" in fit else "")
            )
    if args.profile:
        largest = max((t for t in [*traces, *synth.values()]), key=lambda t: t.events)
        print()
        print(f"cProfile of gpudiag on {largest.label} (top {args.profile} by cumulative time):")
        print(profile_gpudiag(args.gpudiag_python, largest, env, cwd, args.profile))

    if args.json_out:
        blob = {
            "runs": args.runs,
            "floors": {
                n: {"wall_s": r.wall_s, "peak_mib": r.peak_bytes / MIB} for n, r in floors.items()
            },
            "traces": {
                t.label: {
                    "path": str(t.path),
                    "events": t.events,
                    "file_bytes": t.file_bytes,
                    "json_bytes": t.json_bytes,
                    **{name: res.as_dict() for name, res in results[t.label].items()},
                }
                for t in [real, *synth.values()]
                if t.label in results
            },
            "scaling_fit": fit,
        }
        args.json_out.write_text(json.dumps(blob, indent=2))
    failed = any(r.error for per in results.values() for r in per.values())
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
