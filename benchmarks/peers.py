"""gpudiag's figures beside xprof's and HolisticTraceAnalysis's (HTA) on the same real traces.

Each figure both tools measure is printed side by side with the difference and, where the
difference is one of definition rather than an error, which definition (docs/peers.md):

* **xprof** (``.xplane.pb``): ``overview_page`` and ``input_pipeline_analyzer`` through
  ``xprof.convert.raw_to_tool_data``. xprof writes an ``ALL_HOSTS.op_stats_v2.pb`` cache
  beside its input and reuses it for every other profile of that folder, so each profile is
  copied alone into its own temporary directory first.
* **HTA** (Kineto ``.json[.gz]``): temporal breakdown, communication/computation overlap and
  idle time, from ``hta_peers.py`` run by the interpreter of HTA's own venv
  (``--hta-python``; HTA is never a gpudiag dependency), on a directory holding the one trace.
  HTA measures over its own window (first to last GPU event); gpudiag's figures are given
  both over its analysed steps and over that same window, so a difference of window is told
  apart from a difference of classification.

    python benchmarks/peers.py                       # sample_traces/ and shared/traces/
    python benchmarks/peers.py TRACE... --hta-python /tmp/hta-venv/bin/python
    python benchmarks/peers.py --json-out peers.json

HTA's venv (once): ``python3 -m venv /tmp/hta-venv && /tmp/hta-venv/bin/pip install
HolisticTraceAnalysis``. Traces HTA or xprof cannot read are reported with their error.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from gpudiag.analyze import diagnose  # noqa: E402
from gpudiag.trace.errors import TraceError  # noqa: E402
from gpudiag.trace.load import load_file  # noqa: E402
from gpudiag.trace.model.timeline import Kind, Timeline, union_many  # noqa: E402
from gpudiag.trace.quiet import quiet_stderr  # noqa: E402

HTA_RUNNER = HERE / "hta_peers.py"
INPUT_RE = re.compile(r"([\d.]+)% of the total step time")
Row = dict[str, Any]

SPAN = (
    "span: HTA, first to last kernel of the ProfilerSteps it keeps (it drops the last); "
    "gpudiag, first to last device event"
)
# why a figure differs by definition, keyed by figure
DEFINITIONS = {
    "non-compute % (device span)": SPAN,
    "idle % (device span)": SPAN,
    "comm/comp overlap % (device span)": SPAN,
    "compute % (gpudiag steps)": "window: gpudiag's analysed steps, HTA first to last GPU event",
    "compute % (device span)": SPAN,
    "idle % (gpudiag steps)": "window; gpudiag splits idle into input wait and other",
    "comm/comp overlap %": "gpudiag: collectives under compute in its steps; HTA: whole window",
    "idle by cause": "HTA: per stream, why it idles (host did not enqueue, gaps between "
    "kernels); gpudiag: per step, input wait vs the rest",
    "step ms": "xprof averages every step line of the host; gpudiag: median per worker",
    "device compute ms": "xprof: device op time per step; gpudiag: union of kernels per step",
    "input %": "xprof 2.24 cites its 'All Others' share (I/O or Python) as potentially input; "
    "gpudiag: host input-wait ops while the device idles",
    "infeed ms": "xprof: infeed ops (TPU, or GPU with step markers); gpudiag: input-wait ops",
    "off-device ms": "gpudiag input + other; xprof 'All Others' + infeed + host compute",
    "copies ms": "xprof: device-to-device copies only; gpudiag: every copy not under compute",
}


def shared_traces() -> Path | None:
    """The shared traces folder beside a checkout (looked for in the repo's parents)."""
    for parent in REPO.parents:
        cand = parent / "shared" / "traces"
        if cand.is_dir():
            return cand
    return None


def default_traces() -> list[Path]:
    found = sorted((REPO / "sample_traces").glob("*.gz"))
    found += sorted((REPO / "sample_traces").glob("*.xplane.pb"))
    shared = shared_traces()
    if shared is not None:
        names = {p.name for p in found}
        found += [
            p
            for p in sorted(shared.rglob("*"))
            if p.is_file() and p.name.endswith((".json.gz", ".xplane.pb")) and p.name not in names
        ]
    return found


def _pct(x: float | None) -> float | None:
    return None if x is None else round(100.0 * x, 2)


def row(trace: str, who: str, figure: str, ours: float | None, theirs: float | None) -> Row:
    diff = None if ours is None or theirs is None else round(ours - theirs, 2)
    return {
        "trace": trace,
        "rank": who,
        "figure": figure,
        "gpudiag": ours,
        "peer": theirs,
        "diff": diff,
        "definition": DEFINITIONS.get(figure, ""),
    }


# ---- gpudiag ---------------------------------------------------------------------------------
def window_figures(tl: Timeline) -> dict[str, float] | None:
    """gpudiag's classification over HTA's window (first to last device event, all devices):
    compute, non-compute (busy, not computing) and idle, as shares; and the share of
    collective time under compute."""
    sets = [iv for iv in tl.activity.values() if len(iv)]
    if not sets:
        return None
    busy = union_many(sets)
    lo, hi = float(busy.starts[0]), float(busy.ends[-1])
    span = hi - lo
    if span <= 0:
        return None
    compute = union_many([tl.device_activity(d, Kind.COMPUTE) for d in tl.devices])
    coll = union_many([tl.device_activity(d, Kind.COLLECTIVE) for d in tl.devices])
    c, b = compute.total(), busy.total()
    out = {"compute": c / span, "non_compute": (b - c) / span, "idle": 1.0 - b / span}
    if coll.total() > 0:
        both = c + coll.total() - union_many([compute, coll]).total()
        out["overlap"] = both / coll.total()
    return out


def gpudiag_side(path: Path) -> tuple[list[Timeline], dict[str, Any]]:
    with quiet_stderr():
        tls = load_file(str(path))
    return tls, diagnose(tls).to_dict()


# ---- HTA -------------------------------------------------------------------------------------
def hta_side(path: Path, python: str, work: Path) -> dict[str, Any]:
    stage = work / ("hta-" + path.name.replace(".", "_"))
    stage.mkdir()
    (stage / path.name).symlink_to(path.resolve())
    r = subprocess.run(
        [python, str(HTA_RUNNER), str(stage)], capture_output=True, text=True, timeout=600
    )
    if r.returncode != 0 or not r.stdout.strip():
        return {"error": (r.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def _by_rank(records: Any) -> dict[int, dict[str, Any]]:
    if not isinstance(records, list):
        return {}
    return {int(r["rank"]): r for r in records if isinstance(r, dict) and "rank" in r}


def compare_hta(
    path: Path, tls: list[Timeline], d: dict[str, Any], hta: dict[str, Any]
) -> list[Row]:
    name = path.name
    if "error" in hta:
        return [row(name, "-", f"HTA failed: {hta['error']}", None, None)]
    temporal = _by_rank(hta.get("temporal"))
    overlap = _by_rank(hta.get("overlap"))
    idle = hta.get("idle") if isinstance(hta.get("idle"), list) else []
    idle_error = (hta.get("idle") or {}).get("error") if not idle else None
    rows: list[Row] = []
    for tl, rank_row in zip(tls, d.get("ranks") or [{}], strict=False):
        rank = tl.meta.rank or 0
        who = f"rank {rank}"
        t = temporal.get(rank, {})
        w = window_figures(tl) or {}
        b = rank_row.get("breakdown") or d.get("breakdown") or {}
        for fig, ours in (
            ("compute % (device span)", w.get("compute")),
            ("non-compute % (device span)", w.get("non_compute")),
            ("idle % (device span)", w.get("idle")),
        ):
            key = fig.split(" %")[0].replace("-", "_") + "_time_pctg"
            rows.append(row(name, who, fig, _pct(ours), t.get(key)))
        rows.append(
            row(
                name,
                who,
                "compute % (gpudiag steps)",
                _pct(b.get("compute")),
                t.get("compute_time_pctg"),
            )
        )
        rows.append(
            row(
                name,
                who,
                "idle % (gpudiag steps)",
                _pct((b.get("input") or 0.0) + (b.get("other") or 0.0)) if b else None,
                t.get("idle_time_pctg"),
            )
        )
        o = overlap.get(rank, {})
        rows.append(
            row(
                name,
                who,
                "comm/comp overlap % (device span)",
                _pct(w.get("overlap")),
                o.get("comp_comm_overlap_pctg"),
            )
        )
        cats = {
            r.get("idle_category"): r
            for r in idle
            if r.get("rank") == rank and r.get("stream") == _busiest_stream(idle, rank)
        }
        if idle_error:
            rows.append(row(name, who, f"idle by cause: HTA failed ({idle_error})", None, None))
        if cats and b:
            rows.append(
                {
                    **row(name, who, "idle by cause", None, None),
                    "gpudiag": f"input {_pct(b.get('input'))}% / other {_pct(b.get('other'))}% "
                    "of the step",
                    "peer": " / ".join(
                        f"{c.replace('_', ' ')} {_pct(float(r.get('idle_time_ratio') or 0))}%"
                        for c, r in sorted(cats.items())
                    )
                    + f" of stream {next(iter(cats.values())).get('stream')}'s idle",
                    "definition": DEFINITIONS["idle by cause"],
                }
            )
    return rows


def _busiest_stream(idle: list[dict[str, Any]], rank: int) -> Any:
    """The stream of the rank with the least idle time (the one that works most)."""
    totals: dict[Any, float] = {}
    for r in idle:
        if r.get("rank") == rank:
            totals[r.get("stream")] = totals.get(r.get("stream"), 0.0) + float(
                r.get("idle_time") or 0.0
            )
    return min(totals, key=lambda k: totals[k]) if totals else None


# ---- xprof -----------------------------------------------------------------------------------
def xprof_side(path: Path) -> dict[str, Any]:
    """overview_page and input_pipeline_analyzer of the profile, alone in its own folder."""
    with quiet_stderr():
        from xprof.convert import raw_to_tool_data as r2t

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="peers-xprof-") as tmp:
        private = Path(tmp) / path.name
        shutil.copyfile(path, private)
        for tool in ("overview_page", "input_pipeline_analyzer"):
            try:
                with quiet_stderr():
                    data, _ = r2t.xspace_to_tool_data([str(private)], tool, {})
                tables = json.loads(data)
            except Exception as e:  # xprof's failure is the answer
                out[tool] = {"error": f"{type(e).__name__}: {e}"[:300]}
                continue
            props: dict[str, Any] = {}
            for t in tables if isinstance(tables, list) else []:
                props.update(t.get("p") or {})
            out[tool] = props
    return out


def _f(props: dict[str, Any], key: str) -> float | None:
    try:
        return round(float(str(props[key]).rstrip("%")), 3)
    except (KeyError, ValueError):
        return None


# xprof's step parts that are not device work: its "All Others" and input (infeed) time
OFF_DEVICE = ("other_time_ms_avg", "infeed_time_ms_avg", "host_compute_time_ms_avg")


def _sum(props: dict[str, Any], keys: tuple[str, ...]) -> float | None:
    vals = [_f(props, k) for k in keys]
    return None if all(v is None for v in vals) else round(sum(v or 0.0 for v in vals), 3)


def off_device(b: dict[str, Any], step: Any) -> float | None:
    if not step or not b:
        return None
    return round((b.get("input", 0.0) + b.get("other", 0.0)) * step, 3)


def compare_xprof(path: Path, d: dict[str, Any], xp: dict[str, Any]) -> list[Row]:
    name = path.name
    ov = xp.get("overview_page") or {}
    ip = xp.get("input_pipeline_analyzer") or {}
    if "error" in ov:
        return [row(name, "-", f"xprof failed: {ov['error']}", None, None)]
    rows: list[Row] = []
    for r in d.get("ranks") or []:
        b, step = r.get("breakdown") or {}, r.get("step_ms")
        who = r.get("label", "run")

        def ms(share: str, b: dict[str, Any] = b, step: Any = step) -> float | None:
            return round(b[share] * step, 3) if step and share in b else None

        rows += [
            row(name, who, "step ms", step, _f(ov, "steptime_ms_average")),
            row(
                name, who, "device compute ms", ms("compute"), _f(ov, "device_compute_time_ms_avg")
            ),
            row(name, who, "collectives ms", ms("sync"), _f(ov, "device_collectives_time_ms_avg")),
            row(
                name,
                who,
                "copies ms",
                ms("transfer"),
                _f(ov, "device_to_device_time_ms_avg"),
            ),
            row(name, who, "off-device ms", off_device(b, step), _sum(ov, OFF_DEVICE)),
        ]
        m = INPUT_RE.search(str(ip.get("input_conclusion") or ov.get("input_conclusion") or ""))
        rows.append(
            row(name, who, "input %", _pct(b.get("input")), float(m.group(1)) if m else None)
        )
        rows.append(row(name, who, "infeed ms", ms("input"), _f(ov, "infeed_time_ms_avg")))
    rows.append(
        {
            **row(name, "-", "training?", None, None),
            "gpudiag": next(
                (f["id"] for f in d.get("findings") or [] if f["id"] == "inference-trace"),
                "training",
            ),
            "peer": f"is_training={ov.get('is_training')}",
        }
    )
    rows.append(
        {
            **row(name, "-", "verdict", None, None),
            "gpudiag": d.get("verdict"),
            "peer": str(ov.get("input_conclusion") or "")[:70],
        }
    )
    return rows


# ---- main ------------------------------------------------------------------------------------
def markdown(rows: list[Row]) -> str:
    head = "| trace | rank | figure | gpudiag | peer | diff | definition that differs |"
    lines = [head, "|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        cells = [
            "" if r.get(k) is None else str(r[k])
            for k in ("trace", "rank", "figure", "gpudiag", "peer", "diff", "definition")
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*", type=Path)
    ap.add_argument("--hta-python", help="python of a venv with HolisticTraceAnalysis")
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args(argv)
    traces = args.traces or default_traces()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        for path in traces:
            try:
                tls, d = gpudiag_side(path)
            except TraceError as e:
                rows.append(row(path.name, "-", f"gpudiag: {e}", None, None))
                continue
            if path.name.endswith(".xplane.pb"):
                rows += compare_xprof(path, d, xprof_side(path))
            elif args.hta_python:
                rows += compare_hta(path, tls, d, hta_side(path, args.hta_python, Path(tmp)))
            print(f"{path.name}: done", file=sys.stderr)
    print(markdown(rows))
    if args.json_out:
        args.json_out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
