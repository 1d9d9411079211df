"""``host-to-device-heavy``: host<->device copies take a large share of the step and are
not hidden under compute.

Why it costs time: an exposed copy is time the device neither computes nor overlaps; pageable
memory and fat dtypes (float32 images) make copies slow and large.

Example: "Host<->device copies take 12.0% of step time (12.0% not overlapped)". Fix (worded
per framework, analyze/wording.py): pinned memory and non-blocking copies, compact dtypes
converted on the device, prefetch to the device.
"""

from __future__ import annotations

import numpy as np

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct, shown
from gpudiag.analyze.gain import Gain, removed
from gpudiag.analyze.needs import Needs
from gpudiag.analyze.wording import remedy

ID = "host-to-device-heavy"
NEEDS = {"overlap-copies": Needs()}
# exposed copies this large usually mean pageable memory or fat dtypes: half of it exposed,
# or all of it in total, raises the finding
TRANSFER_HIGH = 0.10


def detect(ev: RankEvidence) -> Finding | None:
    b = ev.breakdown
    if b is None:
        return None
    # host<->device copies only: device-local copies (DtoD, memsets) share the breakdown's
    # "transfer" but no host link can be relieved for them
    exposed = b.host_transfer
    used = [d for d in b.devices if d.computes] or b.devices
    total = float(np.mean([d.transfer_total for d in used])) if used else 0.0
    if exposed < TRANSFER_HIGH / 2 and total < TRANSFER_HIGH:
        return None
    return Finding(
        id=ID,
        severity="high" if exposed >= TRANSFER_HIGH else "moderate",
        title=f"Host<->device copies take {pct(total)}% of step time "
        f"({pct(exposed)}% not overlapped)",
        evidence={"transfer_pct": pct(total), "exposed_transfer_pct": pct(exposed)},
        measured=exposed,
    )


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    x = f.measured or 0.0
    g = Gain.of(
        removed(x / 2),
        1.0,
        removed(x),
        f"exposed copies are {shown(x):.0%} of step time; half hidden or shrunk at the point",
    )
    title, detail = remedy("overlap-copies", s.config) or ("Overlap host-to-device copies", "")
    return [g.suggestion(title, detail, ID, "overlap-copies")]
