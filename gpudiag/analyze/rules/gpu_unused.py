"""``gpu-unused``: the NVIDIA driver shows this process a GPU, the framework lists none, and
the model trains on the CPU.

Why it costs time: among the most reported reasons a fit is slow (Q&A "Keras not using
GPU"; tensorflow/tensorflow's install issues): a CPU-only build (``tensorflow-cpu``, a
``pip install tensorflow`` without ``[and-cuda]``, a CPU wheel of torch, JAX without its
CUDA plugin), CUDA/cuDNN libraries the build cannot load (missing or of other versions), or
TensorFlow 2.11 and later on native Windows, which have no GPU support. The run then
computes everything on the host's cores.

Example: "A GPU is visible (1 to NVML) but TensorFlow lists none: a CPU-only build". Fix,
by what the run shows (``RunConfig.gpu_build``, ``os``): install the GPU build; load the
CUDA/cuDNN versions the build names; on Windows, WSL2. Shown first whatever its gain (a
set-up to repair, like a correctness fix); the gain is not measured here: an accelerator
speeds only the compute, so it is bounded by the compute share.
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.gain import at_most
from gpudiag.analyze.needs import Needs

ID = "gpu-unused"
SHOWN_FIRST = "set-up"  # a set-up to repair before anything else is worth measuring
NEEDS = {"use-the-gpu": Needs()}
NAMES = {"tensorflow": "TensorFlow", "jax": "JAX", "torch": "PyTorch", "pytorch": "PyTorch"}


def detect(ev: RankEvidence) -> Finding | None:
    cfg = ev.config
    if not cfg.nvml_gpus or cfg.framework_gpus != 0:
        return None
    fw = NAMES.get(cfg.framework or "", cfg.framework or "the framework")
    cause = cause_of(cfg.framework, cfg.gpu_build, cfg.os)
    evidence: dict[str, object] = {
        "nvml_gpus": cfg.nvml_gpus,
        "framework_gpus": 0,
        "cause": cause,
    }
    if cfg.gpu_build:
        evidence["gpu_build"] = cfg.gpu_build
    if ev.breakdown is not None:
        evidence["compute_share_pct"] = pct(ev.shares["compute"])
    return Finding(
        ID,
        "high",
        f"A GPU is visible ({cfg.nvml_gpus} to NVML) but {fw} lists none: {cause}",
        evidence,
    )


def cause_of(framework: str | None, build: str | None, os_name: str | None) -> str:
    """The likeliest reason, from what the run shows."""
    if framework == "tensorflow" and os_name == "win32":
        return "TensorFlow 2.11 and later have no GPU support on native Windows"
    if build == "cpu-only":
        return "a CPU-only build"
    if build:
        return f"the build ({build}) could not load its CUDA libraries"
    return "a CPU-only build or CUDA libraries it cannot load"


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    cfg = s.config
    c = s.shares["compute"] if s.shares else 0.0
    g = at_most(
        c,
        f"not measured: a GPU speeds only the compute ({c:.0%} of the step here)",
    )
    if cfg.framework == "tensorflow" and cfg.os == "win32":
        detail = (
            "Train under WSL2 (pip install tensorflow[and-cuda] there), or keep native Windows "
            "with TensorFlow 2.10, the last release with GPU support there."
        )
    elif cfg.framework == "tensorflow":
        detail = (
            "pip install 'tensorflow[and-cuda]' (Linux) brings the CUDA and cuDNN it was built "
            "for; TensorFlow's log at import names the library it could not load "
            "('Could not load dynamic library ...'). tf.config.list_physical_devices('GPU') "
            "must list the GPU."
        )
        if cfg.gpu_build and cfg.gpu_build != "cpu-only":
            detail += f" This build wants {cfg.gpu_build}."
    elif cfg.framework == "jax":
        detail = "pip install -U 'jax[cuda12]': without the CUDA plugin JAX runs on the CPU."
    else:
        detail = (
            "Install the CUDA build of torch (the index URL pytorch.org gives for your CUDA); "
            "torch.cuda.is_available() must be True."
        )
    return [g.suggestion("Train on the GPU this run leaves unused", detail, ID, "use-the-gpu")]
