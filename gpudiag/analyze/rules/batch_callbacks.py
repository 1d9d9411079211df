"""``batch-callbacks``: other callbacks' per-batch hooks (``on_train_batch_begin/end``) take a
large share of the fit: a metric computed in NumPy, a ``model.predict`` every few batches, a
checkpoint every N batches, a progress bar, a logger.

Why it costs time: Keras calls these hooks on the training thread between two steps (once a
callback overrides a batch-end hook, Keras also waits for each step's logs), so their work
adds to every step's time; and ``predict`` inside a hook builds its own data iterator and
callbacks at every call (measured here: ``predict`` on 256 samples 185 ms, the same batch
through ``predict_on_batch`` 6.8 ms). The callback times each other callback's batch hooks,
summed per class (record/fit_clock.py): the time is measured, not guessed.

Example: "Per-batch callbacks take 58% of the fit (PredictCallback 9.1 s, 24 ms a batch;
predict called 150 times)". Fix, by what the class is and does: ``model.predict_on_batch``
or a direct call instead of ``predict``; a ``ModelCheckpoint`` every more batches (and
``save_weights_only``); one progress line per epoch (``verbose=2``); any other callback's
work every more batches, at the epoch's end, or off the training thread. Each gain is
bounded by that class's own measured time.
"""

from __future__ import annotations

import math
from typing import Any

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.fit_account import FitAccount
from gpudiag.analyze.fit_gain import PART_NOTE, PART_SHARE, fit_gain, part_severity
from gpudiag.analyze.needs import Needs, OneOf

ID = "batch-callbacks"
NEEDS = {
    "predict-on-batch": Needs(requires={"keras": OneOf(True)}),
    "checkpoint-less-often": Needs(requires={"keras": OneOf(True)}),
    "save-weights-only": Needs(requires={"keras": OneOf(True)}),
    "progress-per-epoch": Needs(requires={"keras": OneOf(True)}),
    "callback-less-often": Needs(),
}
NAMED_SHARE = 0.2  # a class named in the title holds this share of the per-batch time
TARGET_SHARE = 0.05  # a callback run less often is brought to about this share of the fit
MAX_EVERY = 10  # ... but never asked to run more than 10x less often (every 10th batch)
# Of a predict call's time, what predict_on_batch (or calling the model) saves: predict
# builds a data adapter, an iterator and callbacks at each call. Measured here on 256
# samples: 185 ms against 6.8 ms (0.96); the point keeps 0.9, the low end half
PREDICT_SETUP = (0.5, 0.9, 0.96)
# a .weights.h5 written instead of a .keras archive: half the time (epoch_end_callbacks.py)
WEIGHTS_ONLY_SAVED = 0.5
PROGBAR = "ProgbarLogger"


def detect(ev: RankEvidence) -> Finding | None:
    acc = ev.fit
    share = acc.share("batch_callbacks")
    if not acc.measured or share < PART_NOTE:
        return None
    total = acc.parts["batch_callbacks"]
    ranked = sorted(acc.batch_callbacks.items(), key=lambda kv: -kv[1].get("s", 0.0))
    named = [(k, v) for k, v in ranked if v.get("s", 0.0) >= NAMED_SHARE * total]
    who = ", ".join(_who(k, v) for k, v in named) or "not named"
    top = named[0][1] if named else {}
    evidence: dict[str, Any] = {
        "batch_callbacks_pct": pct(share),
        "batch_callbacks_s": round(total, 3),
        "callbacks": who,
        "calls": int(top.get("calls", 0)),
        "predict_calls": int(sum(v.get("predict_calls", 0) for _, v in ranked)),
    }
    return Finding(
        ID,
        part_severity(share),
        f"Per-batch callbacks take {pct(share)}% of the fit ({who})",
        evidence,
    )


def _who(name: str, row: dict[str, float]) -> str:
    calls = max(1.0, row.get("calls", 1.0))
    text = f"{name} {row.get('s', 0.0):.1f} s, {1e3 * row.get('s', 0.0) / calls:.1f} ms a call"
    n = int(row.get("predict_calls", 0))
    return text + (f"; predict called {n} times" if n else "")


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    acc = s.fit
    if acc is None or not acc.measured:
        return []
    total = acc.parts["batch_callbacks"]
    facts = {str(x.get("class")): x for x in acc.callback_facts}
    out: list[Suggestion] = []
    for name, row in sorted(acc.batch_callbacks.items(), key=lambda kv: -kv[1].get("s", 0.0)):
        seconds = min(row.get("s", 0.0), total)
        if seconds < PART_SHARE * total / 2:
            continue
        fact = facts.get(name, {})
        if row.get("predict_calls"):
            out += _predict(acc, name, row)
        if isinstance(fact.get("save_freq"), int):
            out += _checkpoint(acc, name, seconds, fact)
        elif name == PROGBAR:
            out += _progress(acc, seconds)
        else:
            out += _less_often(acc, name, seconds, row)
    return out


def _predict(acc: FitAccount, name: str, row: dict[str, float]) -> list[Suggestion]:
    p, n = row.get("predict_s", 0.0), int(row.get("predict_calls", 0))
    lo, mid, hi = (p * x for x in PREDICT_SETUP)
    g = fit_gain(
        acc,
        lo,
        mid,
        hi,
        f"{name}'s {n} predict calls took {p:.2f} s; most of a small predict "
        "is its set-up (measured 96% for 256 samples)",
    )
    return [
        g.suggestion(
            f"Call the model directly in {name}",
            f"{name} calls model.predict {n} times inside its batch hook: model.predict_on_batch"
            "(x) (or model(x, training=False) for a small batch) runs the same forward pass "
            "without building a data iterator, a progress bar and callbacks at every call.",
            ID,
            "predict-on-batch",
        )
    ]


def _every(acc: FitAccount, seconds: float) -> int:
    """How many times less often brings ``seconds`` to about TARGET_SHARE of the fit."""
    rest = max(1e-9, acc.wall_s - seconds)
    want = TARGET_SHARE * rest / (1 - TARGET_SHARE)
    return min(MAX_EVERY, max(2, math.ceil(seconds / max(1e-9, want))))


def _checkpoint(
    acc: FitAccount, name: str, seconds: float, fact: dict[str, Any]
) -> list[Suggestion]:
    freq = int(fact["save_freq"])
    k = _every(acc, seconds)
    cut = seconds * (1 - 1 / k)
    basis = f"{name}'s saves took {seconds:.2f} s at save_freq={freq}"
    out = [
        fit_gain(acc, cut / 2, cut, cut, basis).suggestion(
            f"Checkpoint every {freq * k} batches",
            f"{name}(..., save_freq={freq * k}) (now {freq}; save_freq counts batches, "
            "'epoch' saves once an epoch): each save writes the whole model on the training "
            "thread.",
            ID,
            "checkpoint-less-often",
        )
    ]
    if fact.get("save_weights_only") is not True:
        half = seconds * WEIGHTS_ONLY_SAVED
        out.append(
            fit_gain(acc, half / 2, half, seconds * 2 / 3, basis).suggestion(
                "Save the weights only",
                f"{name}(..., save_weights_only=True) with a .weights.h5 path: the weights are "
                "written directly instead of into a .keras archive with the model's config.",
                ID,
                "save-weights-only",
            )
        )
    return out


def _progress(acc: FitAccount, seconds: float) -> list[Suggestion]:
    g = fit_gain(
        acc,
        seconds / 2,
        seconds * 0.9,
        seconds,
        f"the progress bar took {seconds:.2f} s updating at every batch",
    )
    return [
        g.suggestion(
            "Print one line per epoch",
            "fit(..., verbose=2): the progress bar redraws at every batch on the training "
            "thread (slow in notebooks); verbose=2 prints one line per epoch.",
            ID,
            "progress-per-epoch",
        )
    ]


def _less_often(
    acc: FitAccount, name: str, seconds: float, row: dict[str, float]
) -> list[Suggestion]:
    k = _every(acc, seconds)
    cut = seconds * (1 - 1 / k)
    calls = max(1.0, row.get("calls", 1.0))
    g = fit_gain(
        acc,
        0.0,
        cut,
        seconds,
        f"{name}'s batch hooks took {seconds:.2f} s ({1e3 * seconds / calls:.1f} ms a call); "
        f"{k}x less often removes {1 - 1 / k:.0%} of it where its work scales with its calls",
    )
    return [
        g.suggestion(
            f"Run {name}'s per-batch work {k}x less often",
            f"{name}'s batch hooks take {seconds:.1f} s of the fit on the training thread: do "
            f"their work every {k}x more batches, at the epoch's end (on_epoch_end), or in a "
            "background thread that does not hold the training loop.",
            ID,
            "callback-less-often",
        )
    ]
