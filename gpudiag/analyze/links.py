"""The peak of the link a GPU's collectives run over, from what the trace says of the GPU.

NCCL's bus bandwidth (nccl-tests, doc/PERFORMANCE.md) is comparable with the hardware's
peak in one direction: a ring all-reduce keeps every GPU sending and receiving at once, and
the slowest hop sets the pace. The vendors quote NVLink and Infinity Fabric as totals of
both directions over all of a GPU's links; the figure here is half of that, per GPU. Where
the GPU model is unknown, or the group spans more GPUs than one server holds (the network
between servers, which no trace names, is then the bound), there is no peak to compare with.

    link = link_of("NVIDIA A100-SXM4-80GB")
    link.name, link.gbps, link.source    # "NVLink 3 (12 links)", 300.0, "https://..."
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Link:
    name: str  # "NVLink 4 (18 links)"
    gbps: float  # GB/s one way, per GPU: what bus bandwidth is compared with
    total: str  # the vendor's own figure ("900 GB/s bidirectional")
    source: str
    gpus_per_server: int = 8  # the most GPUs one server joins over this link


_V100 = "https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf"
_A100 = "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
_H100 = "https://www.nvidia.com/en-us/data-center/h100/"
_H200 = "https://www.nvidia.com/en-us/data-center/h200/"
_B200 = "https://www.nvidia.com/en-us/data-center/dgx-b200/"
_MI300X = "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html"
_MI250X = "https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html"
_PCIE = "https://pcisig.com/specifications"  # 8 / 16 / 32 GT/s per lane, 128b/130b encoding


def pcie(gen: int, width: int = 16) -> Link | None:
    """A PCIe link's peak one way: 8, 16, 32, 64 GT/s per lane (gen 3 to 6), 128b/130b."""
    rate = {3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}.get(gen)
    if rate is None or width <= 0:
        return None
    gbps = rate * width * 128 / 130 / 8
    return Link(f"PCIe {gen}.0 x{width}", round(gbps, 1), f"{gbps:.1f} GB/s each way", _PCIE)


# (pattern on the GPU's name, its link); the first match wins, so specific names come first
LINKS: tuple[tuple[re.Pattern[str], Link], ...] = (
    (
        re.compile(r"V100.*(PCIE|PCIe)"),
        Link("PCIe 3.0 x16", 15.8, "32 GB/s bidirectional", _V100),
    ),
    (re.compile(r"V100"), Link("NVLink 2 (6 links)", 150.0, "300 GB/s bidirectional", _V100)),
    (
        re.compile(r"A100.*(PCIE|PCIe)"),
        Link("PCIe 4.0 x16", 31.5, "64 GB/s bidirectional", _A100),
    ),
    (
        re.compile(r"A800"),
        Link("NVLink 3 (8 links)", 200.0, "400 GB/s bidirectional", _A100),
    ),
    (re.compile(r"A100"), Link("NVLink 3 (12 links)", 300.0, "600 GB/s bidirectional", _A100)),
    (
        re.compile(r"H100.*NVL"),
        Link("NVLink bridge (H100 NVL)", 300.0, "600 GB/s bidirectional", _H100, 2),
    ),
    (
        re.compile(r"H100.*(PCIE|PCIe)"),
        Link("PCIe 5.0 x16", 63.0, "128 GB/s bidirectional", _H100),
    ),
    (
        re.compile(r"H800"),
        Link("NVLink 4 (8 links)", 200.0, "400 GB/s bidirectional", _H100),
    ),
    (re.compile(r"H100"), Link("NVLink 4 (18 links)", 450.0, "900 GB/s bidirectional", _H100)),
    (re.compile(r"H200"), Link("NVLink 4 (18 links)", 450.0, "900 GB/s bidirectional", _H200)),
    (re.compile(r"B200|B300"), Link("NVLink 5 (18 links)", 900.0, "1.8 TB/s bidirectional", _B200)),
    (
        re.compile(r"MI300X|MI325X"),
        Link("Infinity Fabric (7 links)", 448.0, "896 GB/s bidirectional", _MI300X),
    ),
    (
        re.compile(r"MI250"),
        Link("Infinity Fabric (8 links)", 400.0, "800 GB/s bidirectional", _MI250X),
    ),
    (re.compile(r"\bT4\b"), Link("PCIe 3.0 x16", 15.8, "PCIe 3.0 x16", _PCIE)),
    (
        re.compile(r"\b(A10G?|A30|A40|L4|L40S?)\b"),
        Link("PCIe 4.0 x16", 31.5, "PCIe 4.0 x16", _PCIE),
    ),
)


def link_of(gpu_model: str | None) -> Link | None:
    """The link this GPU's collectives run over inside one server; None when unknown."""
    if not gpu_model:
        return None
    for pattern, link in LINKS:
        if pattern.search(gpu_model):
            return link
    return None


def table_rows() -> list[tuple[str, str, str, str]]:
    """(GPU names matched, link, GB/s one way, source) for docs/method.md."""
    return [(p.pattern, lk.name, f"{lk.gbps:g}", lk.source) for p, lk in LINKS]
