"""``layout-transposes``: GPU time spent converting tensors between NHWC and NCHW.

Why it costs time: Keras works channels-last (NHWC) while cuDNN's fastest float32
convolutions are often NCHW, so TensorFlow wraps convolutions in layout-conversion kernels,
each a launch and a full read and write of the tensor (cuDNN, cuBLAS and MIOpen do the same
inside some algorithms; PyTorch's NCHW models get the opposite conversion on Tensor Cores).
The kernel names are one table, ``trace.facts.LAYOUT_TRANSPOSE_RE``, fed by every reader; the
share is their time over all device kernel time (``meta.extra``).

Example: "23.6% of GPU compute time converts tensors between NHWC and NCHW". Fix, each gain
bounded by the conversions' part of the step: mixed precision so cuDNN runs NHWC Tensor Core
kernels (not on compute capability < 7.0; said to depend on it when unknown), channel counts
multiples of 8 when already mixed, XLA's layout assignment, ``channels_first`` for a float32
model; PyTorch: ``channels_last``. Mixed precision and XLA are left to ``full-precision`` and
``xla-off`` when those fire.
"""

from __future__ import annotations

from gpudiag.analyze import thresholds as T
from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct, shown
from gpudiag.analyze.gain import Gain, removed
from gpudiag.analyze.needs import Needs
from gpudiag.analyze.wording import dialect
from gpudiag.trace.model.runconfig import RunConfig
from gpudiag.trace.model.timeline import Timeline

ID = "layout-transposes"
NEEDS = {
    f"layout-{k}": Needs()
    for k in ("mixed-precision", "channels-multiple-of-8", "xla", "channels-first", "channels-last")
}
# Below 5% of kernel time, removing every conversion of a fully compute-bound step is worth
# less than 1.05x: not worth a model change. The real Keras profiles read here hold 0.7-4.9%
# (cuBLAS's FFT transposes, TF's few filter shuffles); the RTX 2060-class CNN 23.6%.
SHARE = 0.05
# Severity is "info" when the conversions' part of the step (share x compute share) is below
# SHARE: on an input- or launch-bound run they are real but do not limit the step.
# Point estimate: half of the conversions go. Some stay at the graph's edges (input and output
# stay NHWC) and where cuDNN still prefers another layout for a shape; not measured.
POINT_REMOVED = 0.5
TENSOR_CORES_CC = 7.0  # Volta: the first compute capability with Tensor Cores (NHWC fp16)


def layout_share(tl: Timeline) -> float | None:
    """Layout-conversion kernels' share of device kernel time; None when not measured."""
    extra = tl.meta.extra
    total, layout = extra.get("kernel_us"), extra.get("layout_transpose_us")
    if not isinstance(total, int | float) or not isinstance(layout, int | float) or total <= 0:
        return None
    return min(1.0, max(0.0, float(layout) / float(total)))


def detect(ev: RankEvidence) -> Finding | None:
    if ev.cpu_device or not ev.timeline.devices:
        return None
    share = layout_share(ev.timeline)
    if share is None or share < SHARE:
        return None
    extra, cfg = ev.timeline.meta.extra, ev.config
    compute = ev.breakdown.shares["compute"] if ev.breakdown else 1.0
    # "info": real, but not what limits this run's step
    severity = "high" if share >= T.SYNC_HIGH else "moderate"  # xprof's bottleneck level
    severity = "info" if share * compute < SHARE else severity
    return Finding(
        ID,
        severity,
        f"{pct(share)}% of GPU compute time converts tensors between NHWC and NCHW",
        {
            "layout_transpose_pct": pct(share),
            "layout_transpose_ms": round(float(extra["layout_transpose_us"]) / 1e3, 2),
            "kernel_ms": round(float(extra["kernel_us"]) / 1e3, 2),
            "precision": cfg.precision or "unknown",
            "compute_capability": cfg.compute_capability,
        },
        measured=share,
    )


def _tensor_cores(cfg: RunConfig) -> bool | None:
    cc = cfg.compute_capability
    return None if cc is None else cc >= TENSOR_CORES_CC


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    cfg = s.config
    if f.measured is None:
        return []
    x = f.measured * s.shares["compute"]
    if x <= 0:
        return []
    g = Gain.of(
        removed(x * POINT_REMOVED),
        1.0,
        removed(x),
        f"layout conversions are {shown(f.measured) * s.shares['compute']:.0%} of step time "
        f"({pct(f.measured)}% of GPU compute); {POINT_REMOVED:.0%} of them removed at the "
        "point, all at most (not measured)",
    )
    # the same change offered by another finding is listed once, there (its gain covers more)
    offered = {k for k, rule in OFFERED_BY.items() if s.has(rule)}
    return [g.suggestion(t, d, ID, f"layout-{k}") for k, t, d in _remedies(cfg) if k not in offered]


# remedies another finding offers as a whole when it fires
OFFERED_BY = {"mixed-precision": "full-precision", "xla": "xla-off"}


def _remedies(cfg: RunConfig) -> list[tuple[str, str, str]]:
    """The remedies that fit the framework, the GPU and the precision, none already in place."""
    half = cfg.precision not in (None, "float32")
    tc = _tensor_cores(cfg)
    if dialect(cfg) == "jax":
        return []  # XLA already chooses the layouts; no Keras or PyTorch knob applies
    if dialect(cfg) == "pytorch":
        return [
            (
                "channels-last",
                "Train in channels_last memory format",
                "model = model.to(memory_format=torch.channels_last) and inputs "
                "x.to(memory_format=torch.channels_last): cuDNN then runs NHWC kernels "
                "without converting"
                + ("" if half else " (with torch.autocast on Tensor Core GPUs, CC >= 7.0)"),
            )
        ]
    out: list[tuple[str, str, str]] = []
    if not half and tc is not False:
        need = (
            ""
            if tc
            else " This needs compute capability >= 7.0 (Volta, Turing and newer), which "
            "this trace does not give: on an older GPU it brings no NHWC kernels."
        )
        out.append(
            (
                "mixed-precision",
                "Use mixed precision so cuDNN runs NHWC Tensor Core convolutions",
                "keras.mixed_precision.set_global_policy('mixed_float16'): on Tensor Cores "
                "cuDNN's float16 convolutions are NHWC, Keras's own layout, so TensorFlow no "
                "longer converts around each one; keep channel counts multiples of 8." + need,
            )
        )
    elif half:
        out.append(
            (
                "channels-multiple-of-8",
                "Keep channel counts multiples of 8",
                "The run is already in mixed precision yet converts layouts: cuDNN's NHWC "
                "Tensor Core kernels need input and output channels divisible by 8 "
                "(pad the first layer's channels, round filter counts up).",
            )
        )
    if cfg.jit_compile is not True:
        out.append(
            (
                "xla",
                "Compile with XLA to choose layouts once",
                "model.compile(..., jit_compile=True): XLA's layout assignment picks one "
                "layout for the whole step, so conversions happen at its edges, not around "
                "every convolution.",
            )
        )
    if not half or tc is False:
        out.append(
            (
                "channels-first",
                "Build the convolutions channels-first",
                "keras.config.set_image_data_format('channels_first') (or data_format="
                "'channels_first' per layer) if the model stays in float32 on the GPU: it "
                "then computes in cuDNN's float32 layout and converts only its input "
                "(TensorFlow's CPU convolutions need channels-last).",
            )
        )
    return out
