"""Where the tests find the repository's files, from wherever a test file sits."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_traces"
H100 = SAMPLES / "h100_keras_jax"  # the real H100 recordings (README there)
DATA = REPO / "tests" / "data"
NVML_H100_BURSTY = DATA / "nvml_h100_bursty.json"  # NVML readings of a bursty H100 run


def sample(name: str) -> str:
    """A real trace copied into sample_traces/ (provenance in its README). Missing is a
    failure, not a skip: these files ship with the repository."""
    p = SAMPLES / name
    if not p.exists():
        raise FileNotFoundError(f"sample trace {name} is missing from sample_traces/")
    return str(p)
