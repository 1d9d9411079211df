"""``threads-capped``: a CPU-only run whose framework may use fewer threads than the cores it
has (``tf.config.threading.set_intra_op_parallelism_threads(1)``, often copied from
reproducibility recipes).

Why it costs time: the ops of the step run on the intra-op pool; capped below the cores, the
rest of the machine stays idle while the model computes (tensorflow/tensorflow#31128,
#29968). How much it costs depends on whether the ops are large enough to split: measured
here on 2 cores, 1.0-1.5x from lifting a cap of 1 (docs/remedies.md). Under the cap a
bigger batch does not fill the idle cores either: ``compute-bound-options`` and
``small-batch`` count only the cores the pool may use (``RunConfig.compute_cores``).

Example: "TensorFlow's ops may use 1 thread of 2 cores (intra_op=1, inter_op=1); the
process kept 0.98 cores busy". Fix: remove the ``set_*_parallelism_threads`` calls (0, the
default, uses every core). Gain at most the compute spread over the cores the pool leaves
idle (and that other processes leave free); where the process does not fill its cap the cap
is not what holds it, nor where compute is under ``COMPUTE_SHARE`` of the step (point 1.0,
info).
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.gain import Gain, fair_share
from gpudiag.analyze.needs import Needs, OneOf

ID = "threads-capped"
NEEDS = {"lift-thread-cap": Needs(requires={"framework": OneOf("tensorflow")})}
# the process keeps its cap this full (cores busy / cap): the cap holds it back; below, the
# work itself is too small or too serial to use even the threads it has
BINDING = 0.8
# ... and the compute the idle cores would take is at least this share of the step: below,
# the step is held by host work a wider pool does not split (named at info severity)
COMPUTE_SHARE = 0.3


def detect(ev: RankEvidence) -> Finding | None:
    cfg = ev.config
    cap, cores = cfg.intra_op_threads, cfg.cores
    if not ev.cpu_device or not cap or not cores or cap >= cores or ev.breakdown is None:
        return None
    own = ev.host.own_cores()
    binding = own is not None and own >= BINDING * cap and ev.shares["compute"] >= COMPUTE_SHARE
    evidence: dict[str, object] = {
        "intra_op_threads": cap,
        "inter_op_threads": cfg.inter_op_threads if cfg.inter_op_threads is not None else -1,
        "cores": cores,
        "compute_share_pct": pct(ev.shares["compute"]),
    }
    busy = ""
    if own is not None:
        evidence["cpu_this_run_p50_cores"] = round(own, 2)
        busy = f"; the process kept {own:.2f} cores busy"
    return Finding(
        ID,
        "moderate" if binding else "info",
        f"TensorFlow's ops may use {cap} thread{'s' if cap > 1 else ''} of {cores} cores "
        f"(intra_op={cap}, inter_op={cfg.inter_op_threads}){busy}",
        evidence,
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    cap = int(f.evidence["intra_op_threads"])  # type: ignore[call-overload]
    cores = int(f.evidence["cores"])  # type: ignore[call-overload]
    c = s.shares["compute"]
    spread = 1.0 / max(1e-6, (1.0 - c) + c * cap / cores)  # compute over every core
    # beside other processes the scheduler shares the cores among busy threads: a pool of
    # ``cores`` threads gets its fair share of them (gain.fair_share, as the input remedies)
    room = fair_share(cores, s.host.own_cores(), s.host.cpu_others, cores, s.host.load)
    high = min(spread, room) if room is not None else spread
    binding = f.severity != "info"
    g = Gain.of(
        (high**0.5) if binding else 1.0,
        1.0,
        high,
        f"compute ({c:.0%} of the step) over {cores} cores instead of {cap}, at most the "
        "share of the cores other processes leave it; only as far as the ops split (measured "
        "1.0-1.5x on 2 cores)" + ("" if binding else "; the process does not fill its cap"),
    )
    return [
        g.suggestion(
            "Let TensorFlow use every core",
            "Remove tf.config.threading.set_intra_op_parallelism_threads("
            f"{cap}) (and the inter-op one), or set them to 0: TensorFlow then sizes its "
            f"pools to the {cores} cores. Keep the cap only where other jobs share the cores "
            "on purpose.",
            ID,
            "lift-thread-cap",
        )
    ]
