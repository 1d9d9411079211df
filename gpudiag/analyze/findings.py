"""Findings: one small pure detector per problem, each returning a Finding with numbers.

    findings = trace_findings(timeline, breakdown, gaps)
    findings += counter_findings(timeline)
"""

from __future__ import annotations

import numpy as np

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.breakdown import Breakdown
from gpudiag.analyze.diagnosis import Finding
from gpudiag.analyze.gaps import Gaps
from gpudiag.trace.timeline import Kind, Timeline


def _pct(x: float) -> float:
    return round(100.0 * x, 1)


def input_findings(tl: Timeline, b: Breakdown) -> list[Finding]:
    out: list[Finding] = []
    share = b.shares["input"]
    if share >= T.INPUT_MODERATE:
        top = sorted(tl.input_wait_names.items(), key=lambda kv: -kv[1])[:3]
        out.append(
            Finding(
                id="input-wait",
                severity="high" if share >= T.INPUT_HIGH else "moderate",
                title=f"Device waits for input {_pct(share)}% of step time",
                evidence={
                    "input_share_pct": _pct(share),
                    "waiting_in": {n: round(us / 1000.0, 2) for n, us in top},
                    "steps": b.steps_analyzed,
                },
            )
        )
    workers = tl.pipeline.get("dataloader_workers")
    if workers == 0:
        dl = sum(us for n, us in tl.input_wait_names.items() if "DataLoader" in n)
        step_total = float(np.sum(b.step_durations_us)) or 1.0
        out.append(
            Finding(
                id="dataloader-in-main-process",
                severity="high" if share >= T.INPUT_HIGH else "moderate",
                title="PyTorch DataLoader runs in the training process (num_workers=0)",
                evidence={
                    "num_workers": 0,
                    "dataloader_share_pct": _pct(dl / step_total),
                    "exposed_input_share_pct": _pct(share),
                },
            )
        )
    if tl.pipeline.get("sequential_map"):
        out.append(
            Finding(
                id="sequential-map",
                severity="high" if share >= T.INPUT_HIGH else "moderate",
                title="tf.data map runs sequentially (no num_parallel_calls)",
                evidence={
                    "input_share_pct": _pct(share),
                    "pipeline": (tl.pipeline.get("iterator_chains") or ["?"])[0],
                },
            )
        )
    # Iterator::Generator alone is also TF's own multi-device iterator: require Python ops
    if tl.pipeline.get("py_function"):
        out.append(
            Finding(
                id="python-generator",
                severity="high" if share >= T.INPUT_HIGH else "moderate",
                title="Input produced by Python code inside tf.data (generator / py_function)",
                evidence={
                    "input_share_pct": _pct(share),
                    "generator": bool(tl.pipeline.get("generator")),
                    "py_function": bool(tl.pipeline.get("py_function")),
                },
            )
        )
    return out


def transfer_finding(b: Breakdown) -> list[Finding]:
    exposed = b.shares["transfer"]
    total = float(np.mean([d.transfer_total for d in b.devices])) if b.devices else 0.0
    if exposed < T.TRANSFER_HIGH / 2 and total < T.TRANSFER_HIGH:
        return []
    return [
        Finding(
            id="host-to-device-heavy",
            severity="high" if exposed >= T.TRANSFER_HIGH else "moderate",
            title=f"Host<->device copies take {_pct(total)}% of step time "
            f"({_pct(exposed)}% not overlapped)",
            evidence={"transfer_pct": _pct(total), "exposed_transfer_pct": _pct(exposed)},
        )
    ]


def sync_finding(b: Breakdown) -> list[Finding]:
    exposed = b.shares["sync"]
    total = float(np.mean([d.collective_total for d in b.devices])) if b.devices else 0.0
    if exposed < T.SYNC_NOTE:
        return []
    overlapped = 1.0 - exposed / total if total > 0 else 0.0
    return [
        Finding(
            id="exposed-collectives",
            severity="high" if exposed >= T.SYNC_HIGH else "moderate",
            title=f"Gradient synchronisation stalls the device {_pct(exposed)}% of step time",
            evidence={
                "exposed_sync_pct": _pct(exposed),
                "collective_pct": _pct(total),
                "overlapped_pct": _pct(max(0.0, overlapped)),
            },
        )
    ]


def gap_finding(b: Breakdown, gaps: list[Gaps]) -> list[Finding]:
    if not gaps:
        return []
    worst = max(gaps, key=lambda g: g.share)
    if worst.share < T.GAPS_SHARE_FINDING:
        return []
    return [
        Finding(
            id="gpu-idle-gaps",
            severity="high" if worst.share >= 0.3 else "moderate",
            title=f"{worst.device} idles in {worst.count} gaps ({_pct(worst.share)}% of steps)",
            evidence={
                "device": worst.device,
                "gaps": worst.count,
                "gaps_per_step": round(worst.per_step, 2),
                "longest_gap_ms": round(worst.longest_us / 1000.0, 3),
                "gap_share_pct": _pct(worst.share),
                "at_step_boundary_pct": _pct(worst.boundary_share),
                "min_gap_ms": round(worst.min_gap_us / 1000.0, 3),
            },
        )
    ]


def launch_finding(tl: Timeline, b: Breakdown) -> list[Finding]:
    """Many tiny kernels and an idle device: the host cannot launch work fast enough."""
    idle = b.shares["other"]
    if idle < T.LAUNCH_IDLE_SHARE or not b.steps_analyzed:
        return []
    durations = [
        iv.ends - iv.starts for (d, k), iv in tl.activity.items()
        if k is Kind.COMPUTE and not d.startswith("CPU")
    ]
    if not durations:
        return []
    all_d = np.concatenate(durations)
    median = float(np.median(all_d))
    if median >= T.LAUNCH_MEDIAN_KERNEL_US:
        return []
    kernels_per_step = sum(tl.kernel_counts.values()) / max(1, len(tl.devices)) / max(
        1, len(tl.steps)
    )
    return [
        Finding(
            id="kernel-launch-bound",
            severity="high" if idle >= 0.3 else "moderate",
            title=f"Device idle {_pct(idle)}% between tiny kernels (median {median:.1f} µs)",
            evidence={
                "idle_pct": _pct(idle),
                "median_kernel_us": round(median, 2),
                "kernels_per_step": round(kernels_per_step, 1),
            },
        )
    ]


def _percentile(tl: Timeline, name: str, q: float) -> float | None:
    cs = tl.counter(name)
    vals = np.concatenate([c.values for c in cs]) if cs else np.zeros(0)
    vals = vals[np.isfinite(vals)]
    return float(np.percentile(vals, q)) if vals.size else None


def _gil_contended(p95: float, ref: float | None, cpu: float | None,
                   typical: float | None, input_share: float | None) -> bool:
    """The in-process probe is late and the out-of-process reference is not. On a saturated
    CPU a descheduled GIL holder delays the probe too (a compute-bound run shows it), so
    there it counts only if the lateness is typical, not just a tail, or if the device
    waits for input — the cost GIL contention in the input path would explain."""
    if p95 < T.GIL_P95_MS or (ref is not None and p95 < T.GIL_REFERENCE_RATIO * ref):
        return False
    if cpu is not None and cpu >= T.CPU_SATURATED:
        typical_late = typical is not None and typical >= T.GIL_TYPICAL_MS
        starved = input_share is not None and input_share >= T.INPUT_MODERATE
        return typical_late or starved
    return True


def counter_findings(tl: Timeline, input_share: float | None = None) -> list[Finding]:
    """Host signals sampled while training: GIL pressure and CPU saturation."""
    out: list[Finding] = []
    gil = _percentile(tl, "gil_lateness", 95)
    ref = _percentile(tl, "gil_reference_lateness", 95)
    cpu = _percentile(tl, "cpu_total", 50)
    typical = _percentile(tl, "gil_lateness_p50", 50)
    if gil is not None and _gil_contended(gil, ref, cpu, typical, input_share):
        out.append(
            Finding(
                id="gil-pressure",
                severity="high" if gil >= 2 * T.GIL_P95_MS else "moderate",
                title=f"Python threads fight for the GIL (probe lateness p95 {gil:.1f} ms)",
                evidence={
                    "gil_lateness_p95_ms": round(gil, 2),
                    "reference_lateness_p95_ms": None if ref is None else round(ref, 2),
                    "gil_lateness_typical_ms": None if typical is None else round(typical, 2),
                    "cpu_total_p50_pct": None if cpu is None else round(cpu, 1),
                },
                source="counters",
            )
        )
    if cpu is not None and cpu >= T.CPU_SATURATED:
        # on a CPU-only run the CPU is also the training device: busy is expected there,
        # and it matters only as far as the input pipeline competes with the model for it
        cpu_device = tl.meta.device_type == "CPU"
        starved = input_share is not None and input_share >= T.INPUT_MODERATE
        out.append(
            Finding(
                id="cpu-saturated",
                severity="high" if starved or not cpu_device else "info",
                title=f"Host CPU saturated (median {cpu:.0f}% of all cores)"
                + (" — it is also the training device" if cpu_device else ""),
                evidence={
                    "cpu_total_p50_pct": round(cpu, 1),
                    "cpu_process_p50_pct": round(_percentile(tl, "cpu_process", 50) or 0.0, 1),
                },
                source="counters",
            )
        )
    return out


def recorded_findings(tl: Timeline) -> list[Finding]:
    """Findings the recorder established itself (pipeline lints)."""
    return [Finding(f.id, f.severity, f.title, dict(f.evidence), "lint") for f in tl.findings]


def trace_findings(tl: Timeline, b: Breakdown, gaps: list[Gaps]) -> list[Finding]:
    return [
        *input_findings(tl, b),
        *transfer_finding(b),
        *sync_finding(b),
        *gap_finding(b, gaps),
        *launch_finding(tl, b),
    ]
