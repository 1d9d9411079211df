"""``rnn-without-cudnn``: an LSTM or GRU layer on a GPU whose settings rule out the cuDNN
kernel, so it runs as a loop of small kernels, one time step after the other.

Why it costs time: Keras runs an LSTM/GRU as one fused cuDNN call only with its defaults
(``activation="tanh"``, ``recurrent_activation="sigmoid"``, ``recurrent_dropout=0``,
``unroll=False``, ``use_bias=True``, GRU ``reset_after=True``; keras/src/layers/rnn/lstm.py
and the backends' ``cudnn_ok``). Otherwise every time step is its own few kernels: reported
25x slower (tensorflow/tensorflow#38236; #40944; keras-team/keras#19644). Not measured here
(no GPU); on a CPU there is no cuDNN and the finding is not raised.

Example: "lstm (LSTM): recurrent_dropout=0.2 rules out the cuDNN kernel". Fix: the defaults
the message names (dropout on the inputs, ``dropout=``, keeps cuDNN; recurrent dropout does
not). Gain not measured: at most the compute share, which the recurrent loop holds.
"""

from __future__ import annotations

from gpudiag.analyze.diagnosis import Finding, Suggestion
from gpudiag.analyze.evidence import RankEvidence, Situation, pct
from gpudiag.analyze.gain import at_most
from gpudiag.analyze.needs import Breaks, Needs, OneOf

ID = "rnn-without-cudnn"
NEEDS = {
    "cudnn-rnn": Needs(
        requires={"keras": OneOf(True)},
        breaks=(Breaks({"vendor": OneOf("cpu")}, "no cuDNN on a CPU"),),
    )
}


def detect(ev: RankEvidence) -> Finding | None:
    why = ev.config.rnn_without_cudnn
    if not why or ev.cpu_device:
        return None
    evidence: dict[str, object] = {"layers": why}
    if ev.breakdown is not None:
        evidence["compute_share_pct"] = pct(ev.shares["compute"])
    return Finding(ID, "moderate", f"Recurrent layers off the cuDNN kernel: {why}", evidence)


def advise(f: Finding, s: Situation) -> list[Suggestion]:
    c = s.shares["compute"]
    g = at_most(
        c,
        f"not measured (reported up to 25x, tensorflow/tensorflow#38236): at most the compute "
        f"({c:.0%} of the step) the recurrent loop holds",
    )
    return [
        g.suggestion(
            "Let the recurrent layers use cuDNN",
            f"{f.evidence['layers']}: keep activation='tanh', recurrent_activation='sigmoid', "
            "recurrent_dropout=0, unroll=False, use_bias=True (GRU: reset_after=True); dropout "
            "on the inputs (dropout=...) keeps the cuDNN kernel.",
            ID,
            "cudnn-rnn",
        )
    ]
