"""``epoch-end-callbacks``: the time between epochs that callbacks take (checkpoints,
TensorBoard writes, custom metrics, early stopping) is a large share of the fit.

Why it costs time: epoch hooks run on the training thread; a checkpoint written to slow storage
or a histogram per weight stops training for as long as it takes, every epoch.

Example: "Epoch-end callbacks take 39.0% of the fit (SlowStorageCheckpoint 3.0 s)". Fix, by
the callbacks in the fit (named by class where Keras lists them; each one's epoch hooks
timed, gpudiag's own time apart): a checkpoint less often, ``save_weights_only=True`` (not
when already set), a local-disk save copied in the background; TensorBoard with
``histogram_freq=0`` and ``write_images=False`` (where on); any other callback's epoch work
less often or off the training thread. Each gain is bounded by that callback's own time.
"""

from __future__ import annotations

from typing import Any

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.fit_account import FitAccount
from gpudiag.analyze.fit_gain import PART_NOTE, PART_SHARE, dividing, fit_gain, part_severity

ID = "epoch-end-callbacks"
KERAS_OWN = ("History", "ProgbarLogger")  # Keras adds them; never the cause
NAMED_SHARE = 0.2  # a callback named in the title holds this share of the callbacks' time
TARGET_SHARE = 0.05  # a callback is run every N epochs so it falls to about this share
# a .weights.h5 file written directly instead of a .keras archive (config, then the same
# weights and optimizer variables zipped): half the time (measured 0.40 s against 0.80 s for
# a 9.4 M-parameter Adam model, both 113 MB; docs/thresholds.md)
WEIGHTS_ONLY_SAVED = 0.5


def detect(ev: RankEvidence) -> Finding | None:
    acc = ev.fit
    share = acc.share("callbacks")
    if not acc.measured or share < PART_NOTE:
        return None
    seconds = acc.parts["callbacks"]
    ranked = sorted(acc.callbacks.items(), key=lambda kv: -kv[1])
    named = [(k, v) for k, v in ranked if v >= NAMED_SHARE * seconds]
    present = [c for c in _classes(acc) if c not in KERAS_OWN]
    who = ", ".join(f"{k} {v:.1f} s" for k, v in named) or ", ".join(present) or "not timed"
    evidence: dict[str, Any] = {
        "callbacks_pct": pct(share),
        "callbacks_s": round(seconds, 3),
        "per_epoch_s": round(seconds / max(1, acc.epochs), 3),
        "callbacks": who,
        "timed": acc.callbacks_timed,
    }
    return Finding(
        ID,
        part_severity(share),
        f"Epoch-end callbacks take {pct(share)}% of the fit ({who})",
        evidence,
    )


def _classes(acc: FitAccount) -> list[str]:
    return [str(f.get("class")) for f in acc.callback_facts if f.get("class")]


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    acc = s.fit
    if acc is None or not acc.measured:
        return []
    total = acc.parts["callbacks"]
    out: list[Suggestion] = []
    facts = {str(x.get("class")): x for x in acc.callback_facts}
    if acc.callbacks_timed:
        times = {k: v for k, v in acc.callbacks.items() if k not in KERAS_OWN}
    else:  # which one took the time is not known: each is bounded by all of it
        times = {k: total for k in facts if k not in KERAS_OWN}
    for name, seconds in sorted(times.items(), key=lambda kv: -kv[1]):
        if seconds < PART_SHARE * total / 2:
            continue
        known = acc.callbacks_timed
        fact = facts.get(name, {})
        if "save_freq" in fact:  # Keras's ModelCheckpoint (or a subclass)
            out += _checkpoint(acc, name, seconds, fact, known)
        elif "histogram_freq" in fact:
            out += _tensorboard(acc, name, seconds, fact, known)
        else:
            out += _any(acc, name, seconds, known)
    return out


def _every(acc: FitAccount, seconds: float) -> int:
    """The fewest epochs between runs that bring ``seconds`` to about TARGET_SHARE."""
    per = seconds / max(1, acc.epochs)
    rest = acc.wall_s - seconds
    for n in dividing(acc.epochs):  # the last epoch still runs it
        kept = per * (acc.epochs // n)
        if kept / (rest + kept) <= TARGET_SHARE:
            return n
    return max(2, acc.epochs)


def _less_often(acc: FitAccount, name: str, seconds: float, known: bool) -> tuple[int, Any]:
    n = _every(acc, seconds)
    removed = seconds * (1 - max(1, acc.epochs // n) / max(1, acc.epochs))
    basis = f"{name} took {seconds:.2f} s over {acc.epochs} epochs"
    if not known:
        basis = f"the callbacks took {seconds:.2f} s (not timed one by one)"
    return n, fit_gain(acc, removed if known else 0.0, removed, removed, basis)


def _checkpoint(
    acc: FitAccount, name: str, seconds: float, fact: dict[str, Any], known: bool
) -> list[Suggestion]:
    n, g = _less_often(acc, name, seconds, known)
    steps = int(acc.steps_per_epoch) or None
    freq = f"save_freq={n * steps}" if steps else f"save_freq=<{n} epochs of batches>"
    out = [
        g.suggestion(
            f"Checkpoint every {n} epochs",
            f"{name}(..., {freq}) (save_freq counts batches): {name} took {seconds:.1f} s "
            f"of the fit at the epochs' ends.",
            ID,
        )
    ]
    if fact.get("save_weights_only") is not True:
        cut = seconds * WEIGHTS_ONLY_SAVED
        low = cut / 2 if known else 0.0
        g = fit_gain(acc, low, cut, seconds * 2 / 3, _basis(name, seconds, known))
        out.append(
            g.suggestion(
                "Save the weights only",
                f"{name}(..., save_weights_only=True) with a .weights.h5 path: the weights "
                "are written directly instead of into a .keras archive with the model's "
                "config (keep one full save at the end to resume).",
                ID,
            )
        )
    g = fit_gain(acc, 0.0, 0.0, seconds, _basis(name, seconds, known) + "; not estimated")
    out.append(
        g.suggestion(
            "Save to local disk, copy in the background",
            f"Point {name} at a local disk and copy finished files to slow or remote storage "
            "in another thread or process: training then waits for the local write only.",
            ID,
        )
    )
    return out


def _tensorboard(
    acc: FitAccount, name: str, seconds: float, fact: dict[str, Any], known: bool
) -> list[Suggestion]:
    on = [k for k in ("histogram_freq", "write_images") if fact.get(k)]
    if not on:
        return _any(acc, name, seconds, known)
    g = fit_gain(acc, 0.0, seconds * 0.8, seconds, _basis(name, seconds, known))
    return [
        g.suggestion(
            "Write fewer TensorBoard summaries",
            f"{name}(histogram_freq=0, write_images=False) (now "
            + ", ".join(f"{k}={fact[k]}" for k in on)
            + "): histograms and images of every weight are written at each epoch's end."
            + (
                f" Its update_freq={fact['update_freq']!r} also writes every few batches, "
                "inside the steps: update_freq='epoch' takes that out too."
                if fact.get("update_freq") not in (None, "epoch")
                else ""
            ),
            ID,
        )
    ]


def _any(acc: FitAccount, name: str, seconds: float, known: bool) -> list[Suggestion]:
    n, g = _less_often(acc, name, seconds, known)
    return [
        g.suggestion(
            f"Run {name} every {n} epochs",
            f"{name}'s epoch hooks took {seconds:.1f} s: run its work every {n}th epoch, or "
            "hand it to a background thread so training does not wait for it.",
            ID,
        )
    ]


def _basis(name: str, seconds: float, known: bool) -> str:
    if known:
        return f"{name} took {seconds:.2f} s at the epochs' ends"
    return f"the epoch-end callbacks took {seconds:.2f} s (not timed one by one)"
