"""What an input remedy can gain: the producer spread over more workers (``pipelined``),
bounded by the CPU a CPU-only run can get (the machine's cores; other processes' share). The
kind of input work decides whether the cores bound it: Python that mostly waits needs none.

    g = input_gain(situation, n_low, n, n_high, "4 worker processes")
    kind = input_work(situation)   # python | python-waiting | native | array | unknown
"""

from __future__ import annotations

from gpudiag.analyze.evidence import Situation
from gpudiag.analyze.gain import Gain, capacity, fair_share, pipelined

# Python input whose process keeps less than this many cores busy is waiting, not computing
# (a GIL-bound producer alone keeps one core busy; measured: see docs/thresholds.md).
WAITING_CORES = 0.6
# A GPU profile does not record the host's cores: the gain then assumes the fewest a GPU
# training host has (2), and says so; CPU-only runs claim no parallel speed-up unknown.
ASSUMED_GPU_HOST_CORES = 2


def input_work(s: Situation) -> str:
    cfg = s.config
    python = (
        bool(cfg.python_ops)
        or cfg.input_kind in ("generator", "pydataset")
        or s.has("python-generator")
    )
    if python:
        own = s.host.own_cores()
        if own is not None and own < WAITING_CORES and not s.has("gil-pressure"):
            return "python-waiting"
        return "python"
    if cfg.input_kind == "tf.data" or cfg.maps:
        return "native"
    if cfg.input_kind == "array":
        return "array"
    return "unknown"


def cores_of(s: Situation) -> int:
    if s.config.cores:
        return s.config.cores
    return 1 if s.cpu_device else ASSUMED_GPU_HOST_CORES  # unknown: claim little or none


def headroom(s: Situation) -> float | None:
    """How much more CPU the run could use at best: only bounded on CPU-only runs, where the
    model and the input pipeline share the cores. Which remedies are offered ignores other
    processes (their load comes and goes, and the same run must get the same remedies); the
    gains do not (``cpu_bounded``)."""
    if not s.cpu_device:
        return None
    return capacity(s.config.cores, s.host.own_cores())


def others_pct(s: Situation) -> float | None:
    f = s.findings.get("cpu-contention")
    pct = f.evidence.get("cpu_other_processes_p50_pct") if f is not None else None
    return float(pct) if isinstance(pct, int | float) else None


def cpu_bounded(g: Gain, s: Situation, threads: float) -> Gain:
    """The gain bounded by the CPU a CPU-only run can get: the machine's cores bound the
    high end; where other processes held part of them (``cpu-contention``), the point and the
    low end are the fair share a run with ``threads`` busy threads gets beside them
    (``gain.fair_share``), the high end what it gets once they are gone. One basis line."""
    head = headroom(s)
    if head is None:
        return g
    why = f"CPU-only run: at most {head:.2f}× more CPU on this machine"
    others = others_pct(s)
    here = fair_share(s.config.cores, s.host.own_cores(), others, threads, s.host.load)
    if here is None or here >= min(g.point, head):
        return g.bounded(head, None, why)
    load, own = s.host.load, s.host.own_cores() or 0.0
    held = (s.config.cores or 0) * (others or 0.0) / 100.0
    tasks = (
        f", {load - own:.1f} runnable tasks beside this run's" if load and load - own > held else ""
    )
    why += (
        f"; other processes held {others:.0f}% of it (cpu-contention{tasks}), and beside "
        f"them {threads:g} busy threads get at most {here:.2f}×: the point and low end "
        "assume their load stays, the high end that it goes"
    )
    return g.bounded(head, here, why)


def input_gain(s: Situation, n_low: float, n: float, n_high: float, spread: str) -> Gain:
    """Producer spread over ``n`` effective workers (``n_low``..``n_high`` for the range);
    ``spread`` says over what, in the user's terms."""
    inp = s.shares["input"]
    assumed = "" if s.config.cores else " (host cores not in the profile: 2 assumed)"
    g = Gain.of(
        pipelined(inp, n),
        pipelined(inp, n_low),
        pipelined(inp, n_high),
        f"input wait {inp:.0%} of step time, producer spread over {spread}{assumed}",
    )
    if input_work(s) == "python-waiting" and others_pct(s) is None:
        return g  # waiting work needs no CPU: the cores do not bound it
    # beside other processes a producer that keeps little CPU busy may be starved of it,
    # not waiting: the share of the cores it can get bounds it all the same
    return cpu_bounded(g, s, max(n_high, 1.0))
