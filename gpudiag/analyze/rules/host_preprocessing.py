"""``host-preprocessing``: the device idles while the host runs CPU work that launches nothing
(decoding, resizing, tokenising in the training or serving loop itself).

Why it costs time: the next step's kernels cannot start before the host has prepared its
input; with that work on the step's own thread, the device waits for all of it, every step.
Counted is device idle time inside the analysed steps during which the host ran framework
ops with no kernel launch or copy inside (Kineto's CPU ops: ``trace/kineto/reader.py``), not the
host's launches, nor idle time the profile leaves unexplained.

Example: "The device idles 58.1% of the time while the host preprocesses (CPU ops that
launch nothing)". Fix: move that work off the step's thread (DataLoader workers, a pipeline
that prepares the next input during the step) or onto the device.
"""

from __future__ import annotations

import re

from gpudiag.analyze import host_calls as H
from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct, shown
from gpudiag.analyze.gain import Gain, removed
from gpudiag.analyze.needs import Needs, OneOf
from gpudiag.analyze.wording import dialect, inference
from gpudiag.trace.model.timeline import HOST_COMPUTE, Intervals, subtract

ID = "host-preprocessing"
# xprof's input-bound levels (5% and 20%, thresholds.INPUT_HIGH), the lower one taken a step
# up: host ops in idle gaps also hold some launch overhead
SHARE = 0.10
NEEDS = {"move-preprocessing": Needs(requires={"device_measured": OneOf(True)})}


# An idle stretch is the host preprocessing when it lasts at least GAP_US and the host's
# non-launching ops cover at least GAP_COVERED of it: between an eager model's tiny kernels
# the host is launching (its ops hold launches), and a few allocation or view ops there are
# dispatch overhead, not preparation of the input (kernel-launch-bound names those gaps).
GAP_US = 1000.0
GAP_COVERED = 0.5


def preprocessing(ev: RankEvidence) -> tuple[Intervals, float] | None:
    """Device-idle time covered by non-launching host ops, in idle stretches they mostly
    fill, outside the input waits (input-wait names those); and the time judged (µs)."""
    tl = ev.timeline
    spans = tl.meta.extra.get(HOST_COMPUTE)
    if not isinstance(spans, Intervals) or not len(spans) or not tl.activity:
        return None
    win = H.windows(ev)
    span = H.length(win)
    if span <= 0:
        return None
    idle = subtract(subtract(win, H.device_busy(tl)), tl.input_wait.merged()).merged()
    long = (idle.ends - idle.starts) >= GAP_US
    gaps = Intervals(idle.starts[long], idle.ends[long])
    host = spans.merged()
    covered = host.covered_in(gaps.starts, gaps.ends)
    full = covered >= GAP_COVERED * (gaps.ends - gaps.starts)
    return H.within(host, Intervals(gaps.starts[full], gaps.ends[full])), span


def detect(ev: RankEvidence) -> Finding | None:
    found = preprocessing(ev)
    if found is None:
        return None
    busy, span = found
    share = H.total(busy) / span
    if share < SHARE:
        return None
    steps = max(1, len(H.windows(ev)))
    top = ev.timeline.meta.extra.get("host_compute_ops_ms") or {}
    evidence: dict[str, object] = {
        "host_preprocessing_pct": pct(share),
        "host_preprocessing_ms_per_step": round(H.total(busy) / steps / 1000.0, 2),
    }
    if isinstance(top, dict) and top:
        evidence["top_host_ops_ms"] = dict(top)
    what = "preprocesses" if _preparing(top) else "runs CPU-only ops"
    first = f" ({next(iter(top))})" if isinstance(top, dict) and top else ""
    return Finding(
        ID,
        "high" if share >= T.INPUT_HIGH else "moderate",
        f"The device idles {pct(share)}% of the time while the host {what}{first}",
        evidence,
        measured=share,
    )


# op names that say the host is preparing input (images, video, text) rather than running
# the framework's own host work (gradient bucket bookkeeping, Python-side optimizers)
_PREPARING = re.compile(
    r"resize|interpolate|upsample|decode|normali[sz]e|to_tensor|crop|flip|rotate|affine|"
    r"color|image|video|frame|tokeni[sz]|pad_sequence|collate|augment|pil|cv2",
    re.IGNORECASE,
)


def _preparing(top: object) -> bool:
    return isinstance(top, dict) and any(_PREPARING.search(str(n)) for n in list(top)[:3])


_TEXT: dict[str, tuple[str, str]] = {
    "pytorch": (
        "Move preprocessing off the step's thread",
        "Decode, resize and normalise in DataLoader workers (num_workers > 0, pin_memory="
        "True), or on the GPU (torchvision.transforms.v2 on CUDA tensors, NVIDIA DALI); in a "
        "serving loop, prepare the next request while the GPU runs this one.",
    ),
    "*": (
        "Move preprocessing off the step's thread",
        "Prepare inputs in a pipeline that runs ahead of the step (tf.data with "
        "num_parallel_calls and prefetch, a PyDataset with workers), or move the "
        "transformations into the model so they run on the device.",
    ),
}


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    share = f.measured
    if share is None:
        return []
    g = Gain.of(
        removed(share * 0.8),
        removed(share / 2),
        removed(share),
        f"device idle {shown(share):.0%} of the time while the host preprocesses; overlapped with "
        "the device's work most of it goes (not measured on this run)",
    )
    top = f.evidence.get("top_host_ops_ms")
    if isinstance(top, dict) and top and not _preparing(top):
        ops = ", ".join(list(top)[:3])
        title, detail = (
            "Take the host's CPU work out of the step",
            f"The host runs {ops} between kernels while the device waits (no launch inside "
            "them): do it less often, overlap it with the device's work (before the step "
            "that needs it, on another thread), or do it on the device.",
        )
    else:
        title, detail = _TEXT.get(dialect(s.config), _TEXT["*"])
    if inference(s.config):
        detail = detail.replace("DataLoader workers", "worker processes")
    return [g.suggestion(title, detail, ID, "move-preprocessing")]
