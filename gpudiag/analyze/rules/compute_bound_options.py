"""``compute-bound-options``: a compute-bound run, told what would still help and what not.

Why it matters: without it a cached, prefetched model on a CPU ends with "compute-bound" and
nothing to do. Once input and synchronisation are not the problem three levers are left: a
bigger batch (per-step fixed cost shared by more samples; on a CPU, idle cores filled),
several steps per execution (only where host time between short steps is the cost, which
``host-overhead`` judges) and an accelerator (on a CPU-only run). Each is offered with its
modelled gain (never measured here, and said so) or named with the reason it is not.

Example: "Compute-bound (96.2% compute): what can still help", evidence ``bigger_batch``:
"not offered: per-step fixed cost 1% and 100% of the cores busy: a 2x batch gains under 2%
per sample (modelled)". Fix: "Train on a GPU or TPU" (1-20x, not measured), "Try a 2x bigger
batch" where the model says it pays.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import HostFacts, RankEvidence, Situation, pct
from gpudiag.analyze.gain import Gain, batch_scaled, capacity, removed
from gpudiag.analyze.needs import Needs, OneOf
from gpudiag.analyze.rules import host_overhead, low_sm_activity, small_batch
from gpudiag.analyze.verdict import decide
from gpudiag.trace.model.runconfig import RunConfig

ID = "compute-bound-options"
NEEDS = {
    "bigger-batch": Needs(requires={"training": OneOf(True)}),
    "accelerator": Needs(requires={"vendor": OneOf("cpu")}),
}
# a 2x batch: the growth memory and convergence allow most often (small-batch, for batches
# under 32, proposes 4x)
BATCH_FACTOR = 2


@dataclass
class Option:
    key: str  # evidence key
    gain: Gain | None  # None: not offered here
    reason: str  # why not, or where it is offered
    title: str = ""
    detail: str = ""

    def line(self) -> str:
        if self.gain is None:
            return f"not offered: {self.reason}"
        return f"offered ({self.gain.point:.2f}x, {self.gain.low:.2f}-{self.gain.high:.2f}x)"


def detect(ev: RankEvidence) -> Finding | None:
    b = ev.breakdown
    if b is None or ev.config.training is False:
        return None
    if decide(ev.shares)[0] != "compute-bound":
        return None
    elsewhere = set()
    if small_batch.detect(ev) is not None:
        elsewhere.add(small_batch.ID)
    if host_overhead.detect(ev) is not None:
        elsewhere.add(host_overhead.ID)
    if low_sm_activity.detect(ev) is not None:
        elsewhere.add(low_sm_activity.ID)
    opts = options(ev.shares, ev.config, ev.host, ev.cpu_device, b.step_time_us / 1e3, elsewhere)
    return Finding(
        ID,
        "info",
        f"Compute-bound ({pct(ev.shares['compute'])}% compute): what can still help",
        {"compute_share_pct": pct(ev.shares["compute"]), **{o.key: o.line() for o in opts}},
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    elsewhere = {i for i in (small_batch.ID, host_overhead.ID, low_sm_activity.ID) if s.has(i)}
    opts = options(s.shares, s.config, s.host, s.cpu_device, s.step_ms, elsewhere)
    return [
        o.gain.suggestion(
            o.title,
            o.detail,
            ID,
            o.key.replace("_", "-"),
            batch_factor=BATCH_FACTOR if o.key == "bigger_batch" else None,
        )
        for o in opts
        if o.gain is not None
    ]


def options(
    shares: dict[str, float],
    cfg: RunConfig,
    host: HostFacts,
    cpu: bool,
    step_ms: float | None,
    elsewhere: set[str],
) -> list[Option]:
    """Each lever with its modelled gain, or the reason it is not offered."""
    return [
        _batch(shares, cfg, host, cpu, elsewhere),
        _steps_per_execution(shares, cfg, step_ms, elsewhere),
        _accelerator(shares, cfg, cpu),
    ]


def _batch(
    shares: dict[str, float], cfg: RunConfig, host: HostFacts, cpu: bool, elsewhere: set[str]
) -> Option:
    key = "bigger_batch"
    if small_batch.ID in elsewhere:
        return Option(key, None, "offered by small-batch (4x)")
    if low_sm_activity.ID in elsewhere:
        return Option(key, None, "offered by low-sm-activity (the SMs are mostly idle)")
    k = BATCH_FACTOR
    fixed = shares["other"] + shares["input"]
    low = batch_scaled(fixed, k)
    own = host.own_cores()
    # the cores its ops may use: a capped thread pool leaves the rest idle whatever the batch
    cores = cfg.compute_cores
    use = min(1.0, own / cores) if cpu and own is not None and cores else None
    if use is not None:
        high = 1.0 / max(1e-6, fixed / k + (1.0 - fixed) * use)
        basis = (
            f"fixed cost {fixed:.0%} of a step shared by {k}x the samples; {use:.0%} of cores busy"
        )
    else:
        # on an accelerator the idle share may be per-step cost (amortised) or per-kernel
        # launch gaps (not): from no gain to all of it
        high, low = low, 1.0
        basis = f"idle {fixed:.0%} of a step shared by {k}x the samples if it is per-step cost"
    free = Gain.of((low * high) ** 0.5, low, high, basis + " (per sample, modelled)")
    g = free.capped(
        capacity(cfg.cores, own, host.cpu_others) if cpu else None,
        "the cores other processes leave free are in use",
    )
    if g.high < T.MIN_GAIN:
        if free.high >= T.MIN_GAIN:
            why = "other processes hold the cores it would fill"
        else:
            busy = f" and {use:.0%} of the cores busy" if use is not None else ""
            why = f"per-step fixed cost {fixed:.0%}{busy}"
        return Option(key, None, f"{why}: a {k}x batch gains under 2% per sample (modelled)")
    batch = cfg.per_replica_batch
    size = f"batch_size={int(batch) * k}" if batch else f"a {k}x batch"
    return Option(
        key,
        g,
        "",
        f"Try a {k}x bigger batch",
        f"{size} (scale the learning rate with it): each step's fixed cost is shared by more "
        "samples" + (" and idle cores get work." if use is not None and use < 0.9 else "."),
    )


def _steps_per_execution(
    shares: dict[str, float], cfg: RunConfig, step_ms: float | None, elsewhere: set[str]
) -> Option:
    key = "steps_per_execution"
    if (cfg.steps_per_execution or 1) > 1:
        return Option(key, None, f"already in place ({cfg.steps_per_execution})")
    if cfg.framework not in host_overhead.KERAS:
        return Option(key, None, f"a Keras option; this is a {cfg.framework or 'non-Keras'} run")
    if cfg.run_eagerly:
        return Option(key, None, "the step runs eagerly: compile it first (run-eagerly)")
    if host_overhead.ID in elsewhere:
        return Option(key, None, "offered by host-overhead")
    other = shares["other"]
    steps = f"{step_ms:.0f} ms steps" if step_ms else "steps"
    return Option(
        key,
        None,
        f"host time between steps is {other:.0%} of {steps}; it pays off only below "
        f"{host_overhead.SHORT_STEP_MS:.0f} ms steps with >= "
        f"{host_overhead.OVERHEAD_SHARE:.0%} host time (host-overhead)",
    )


def _accelerator(shares: dict[str, float], cfg: RunConfig, cpu: bool) -> Option:
    key = "accelerator"
    if not cpu:
        return Option(key, None, f"already on an accelerator ({cfg.device_type or 'device'})")
    c = shares["compute"]
    bound = removed(c)
    g = Gain.of(
        1.0,
        1.0,
        bound,
        f"not measured: an accelerator speeds only the compute ({c:.0%} of the step); the "
        f"rest bounds the gain at {bound:.1f}x",
    )
    return Option(
        key,
        g,
        "",
        "Train on a GPU or TPU",
        "This model spends its steps computing on the CPU, the part an accelerator takes "
        "over; how much faster it runs there is not measured here, and the input pipeline "
        "then has to keep up with it.",
    )
