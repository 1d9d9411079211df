"""Whether two runs can be compared as before/after one change, and whether each ran to its
end. Pure.

A comparison claims that NEW is BASE with a change applied. Two runs of different programs
(another framework, another model, another number of processes, another kind of device) differ
in ways no remedy explains: their ratio is a fact about two programs, not a change's effect,
so it is shown as such, attributed to no remedy, and fires no gate. A batch change is one a
remedy can explain when it is what a remedy prescribes: a bigger batch on each of the same
replicas, fewer replicas, a global batch made a multiple of the replicas.

A run that stopped early (an exception, Ctrl-C, a killed process) is named, and its speed is
only measured over the steady steps it ran.

    differences(base, new)   # ["framework tensorflow → torch", "world size 1 → 128"]
    stopped(diagnosis)       # "stopped early (an exception or Ctrl-C)" or None
"""

from __future__ import annotations

from typing import Any

from gpudiag.analyze.diagnosis import Diagnosis

# The limitation lines the recorder and the reader write (record/session.py,
# trace/native/reader.py), and how a comparison names each.
STOPS = (
    ("training stopped early", "stopped early (an exception or Ctrl-C)"),
    ("trace cut short", "its trace is cut short (the process was killed, or is still running)"),
)
FRAMEWORKS = {"pytorch": "torch"}


def stopped(d: Diagnosis) -> str | None:
    """How the run ended early, when its trace says it did; None for a run that ended."""
    for needle, words in STOPS:
        if any(needle in lim for lim in d.limitations):
            return words
    return None


def _framework(cfg: dict[str, Any]) -> str | None:
    f = cfg.get("framework")
    return None if not f else FRAMEWORKS.get(str(f), str(f))


def _device(d: Diagnosis) -> str | None:
    cfg = d.config
    kind = cfg.get("device_type")
    model = cfg.get("gpu_model")
    return f"{kind} {model}" if kind and model else kind or model


def _explained_batch(b: dict[str, Any], n: dict[str, Any]) -> bool:
    """A global batch change some remedy prescribes (the same replicas, each with more work;
    fewer replicas; a batch made a multiple of the replicas)."""
    rb, rn = b.get("replicas") or 1, n.get("replicas") or 1
    gb, gn = b["global_batch"], n["global_batch"]
    if rn == rb and gn > gb:
        return True
    if rn < rb:
        return True
    return gb % rb != 0 and gn % rn == 0


def _params(n: int) -> str:
    return f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.1f}k" if n >= 1e3 else str(n)


def differences(base: Diagnosis, new: Diagnosis) -> list[str]:
    """What makes NEW another program than BASE (empty: one program before and after)."""
    b, n = base.config, new.config
    out = []
    fb, fn = _framework(b), _framework(n)
    if fb and fn and fb != fn:
        out.append(f"framework {fb} → {fn}")
    pb, pn = b.get("params"), n.get("params")
    if pb and pn and pb != pn:
        out.append(f"model {_params(pb)} → {_params(pn)} parameters")
    wb, wn = (base.run or {}).get("world_size"), (new.run or {}).get("world_size")
    if wb and wn and wb != wn:
        out.append(f"world size {wb} → {wn} processes")
    db, dn = _device(base), _device(new)
    if db and dn and db != dn:
        out.append(f"device {db} → {dn}")
    gb, gn = b.get("global_batch"), n.get("global_batch")
    if gb and gn and gb != gn and not _explained_batch(b, n):
        out.append(
            f"global batch {gb} → {gn} on {n.get('replicas') or 1} replica(s) "
            "(a change no remedy prescribes)"
        )
    return out
