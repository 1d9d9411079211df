"""The diagnosis next to the loss curves: scalars and text in a Keras TensorBoard log dir.

    for log_dir, per_epoch in tensorboard_targets(callbacks, steps_per_epoch):
        write_summaries(log_dir, diagnosis, per_epoch)   # -> <log_dir>/train/*.gpudiag

Per profiled window: ``gpudiag/<share>_share_pct`` for input, transfer, compute, sync and
other, and ``gpudiag/median_step_ms``, at the step that ends the window — on the callback's
own axis: the epoch when it logs per epoch (its default), else the training step (batch).
Once per run: ``gpudiag/verdict`` (text: verdict, confidence, reason, top fixes). The files go
into the callback's ``train`` run, in an event file of their own, so TensorBoard shows them
beside loss. ``tf.summary`` needs the ``tensorboard`` package, as Keras's callback does.
"""

from __future__ import annotations

import os
from typing import Any

from gpudiag.analyze.breakdown import CATEGORIES
from gpudiag.analyze.diagnosis import Diagnosis
from gpudiag.show.safe import clean
from gpudiag.show.units import gain_text


def tensorboard_targets(
    callbacks: Any, steps_per_epoch: int | None
) -> list[tuple[str, int | None]]:
    """(log dir, steps per epoch or None) of each Keras TensorBoard callback in a callback
    list or CallbackList. Steps per epoch is given when that callback logs per epoch, so our
    scalars land on its epoch axis; None means its axis is the training step."""
    items = getattr(callbacks, "callbacks", callbacks)
    if not isinstance(items, (list, tuple)):
        return []
    out: list[tuple[str, int | None]] = []
    for cb in items:
        if type(cb).__name__ != "TensorBoard" or not getattr(cb, "log_dir", None):
            continue
        per_epoch = getattr(cb, "update_freq", "epoch") == "epoch"
        target = (str(cb.log_dir), steps_per_epoch if per_epoch else None)
        if target[0] not in [t[0] for t in out]:
            out.append(target)
    return out


def verdict_markdown(d: Diagnosis) -> str:
    """The verdict as Markdown; text from the input cleaned (``show.safe``), as in every view."""
    lines = [f"**{d.verdict}** (confidence {d.confidence:.2f}): {clean(d.reason)}", ""]
    shares = ", ".join(f"{c} {100 * d.breakdown.get(c, 0.0):.1f}%" for c in CATEGORIES)
    lines.append(f"Step time: {shares}.")
    if d.steps.get("median_ms") is not None:
        lines.append(f"Median step {d.steps['median_ms']:.1f} ms over {d.steps['count']} steps.")
    if d.findings:
        lines += [
            "",
            "Findings: " + ", ".join(f"`{clean(f.id)}` ({f.severity})" for f in d.findings),
        ]
    for s in d.suggestions[:3]:
        gain = gain_text(s.expected_gain, s.expected_gain_range)
        lines.append(f"- {gain} {clean(s.title)}: {clean(s.detail)}")
    return "\n".join(lines)


def write_summaries(log_dir: str, d: Diagnosis, steps_per_epoch: int | None = None) -> int:
    """Write the per-window shares and the verdict; returns how many windows were written."""
    import tensorflow as tf

    windows = d.activity[0]["windows"] if d.activity else []
    writer = tf.summary.create_file_writer(
        os.path.join(log_dir, "train"), filename_suffix=".gpudiag"
    )
    last = 0
    written = 0
    with writer.as_default():
        for w in windows:
            shares = w.get("shares") or {}
            if not shares:
                continue
            step = int(w["last_step"])
            if steps_per_epoch:
                step //= steps_per_epoch
            last = max(last, step)
            for cat in CATEGORIES:
                tf.summary.scalar(
                    f"gpudiag/{cat}_share_pct", 100.0 * shares.get(cat, 0.0), step=step
                )
            tf.summary.scalar("gpudiag/median_step_ms", float(w["median_step_ms"]), step=step)
            written += 1
        tf.summary.text("gpudiag/verdict", verdict_markdown(d), step=last)
    writer.flush()
    writer.close()
    return written
