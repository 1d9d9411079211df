"""What the model and its optimizer do that costs time whatever the input: an embedding table
the optimizer updates whole at every step, recurrent layers that cannot use cuDNN. Read from
the compiled model before the first step, for the ``RunConfig`` the rules judge.

    fields = model_run_facts(model)
    fields["embedding_rows"], fields["optimizer_sparse"], fields["rnn_without_cudnn"]

Which optimizers update only the rows a batch touches is Keras's own behaviour, not a
guess: its sparse-gradient tests (``keras/src/optimizers/optimizer_sparse_test.py``, Keras
3.15) expect sparse updates of both the variable and the optimizer's slots from SGD
without momentum and Adagrad only; Adam, AdamW, Adamax, Nadam, Lion, Ftrl, RMSprop and
SGD with momentum turn an embedding's sparse gradient into dense updates of the whole table
(their slots decay every row at every step). Keras 2 (tf.keras) applies the same sparse
updates from the same optimizers, and LazyAdam-style updates from neither.
"""

from __future__ import annotations

import contextlib
from typing import Any

# optimizers whose update of an IndexedSlices gradient touches only the rows it holds
SPARSE_OPTIMIZERS = ("SGD", "Adagrad")
# the layer classes whose cuDNN path Keras picks by their settings
RNN_CLASSES = ("LSTM", "GRU")


def model_run_facts(model: Any) -> dict[str, Any]:
    """RunConfig fields from the model: optimizer, largest embedding, RNN layers off cuDNN."""
    out: dict[str, Any] = {}
    if model is None:
        return out
    with contextlib.suppress(Exception):
        out.update(_optimizer(model.optimizer))
    layers: list[Any] = []
    with contextlib.suppress(Exception):
        layers = list(model._flatten_layers(include_self=False))
    with contextlib.suppress(Exception):
        out.update(_embedding(layers))
    with contextlib.suppress(Exception):
        why = [w for w in (_rnn_off_cudnn(layer) for layer in layers) if w]
        if why:
            out["rnn_without_cudnn"] = "; ".join(why[:4])
    return out


def _optimizer(opt: Any) -> dict[str, Any]:
    inner = getattr(opt, "inner_optimizer", opt)  # LossScaleOptimizer wraps the real one
    name = type(inner).__name__
    momentum = getattr(inner, "momentum", 0.0)
    try:
        momentum = float(momentum)
    except (TypeError, ValueError):
        momentum = 1.0  # a schedule or tensor: take it as on
    sparse = name in SPARSE_OPTIMIZERS and not (name == "SGD" and momentum)
    out: dict[str, Any] = {"optimizer_sparse": sparse}
    scope = getattr(inner, "name", None)
    if isinstance(scope, str) and scope:
        out["optimizer_scope"] = scope
    return out


def _embedding(layers: list[Any]) -> dict[str, Any]:
    """The largest trainable Embedding: its rows, values and lookups per sample."""
    best: tuple[int, Any] | None = None
    for layer in layers:
        if "Embedding" not in type(layer).__name__ or not getattr(layer, "trainable", True):
            continue
        rows, dim = getattr(layer, "input_dim", None), getattr(layer, "output_dim", None)
        if not isinstance(rows, int) or not isinstance(dim, int):
            continue
        if best is None or rows * dim > best[0]:
            best = (rows * dim, layer)
    if best is None:
        return {}
    values, layer = best
    out: dict[str, Any] = {
        "embedding_layer": str(getattr(layer, "name", "embedding")),
        "embedding_rows": int(layer.input_dim),
        "embedding_values": int(values),
    }
    lookups = _lookups(layer)
    if lookups:
        out["embedding_lookups"] = lookups
    return out


def _lookups(layer: Any) -> int | None:
    """Indices one sample looks up: the product of the layer's input shape after the batch."""
    with contextlib.suppress(Exception):
        shape = tuple(layer.input.shape)[1:]
        n = 1
        for d in shape:
            if d is None:
                return None
            n *= int(d)
        return n
    return None


def _rnn_off_cudnn(layer: Any) -> str | None:
    """Why an LSTM/GRU layer cannot take the cuDNN kernel (Keras's own conditions:
    keras/src/layers/rnn/lstm.py, gru.py; backend cudnn_ok), or None when it can."""
    kind = type(layer).__name__
    if kind not in RNN_CLASSES:
        return None
    cell = getattr(layer, "cell", layer)
    why = []
    if getattr(layer, "use_cudnn", "auto") is False:
        why.append("use_cudnn=False")
    if float(getattr(cell, "recurrent_dropout", 0.0) or 0.0) > 0:
        why.append(f"recurrent_dropout={cell.recurrent_dropout:g}")
    act = _name(getattr(cell, "activation", None))
    if act and act != "tanh":
        why.append(f"activation={act}")
    rec = _name(getattr(cell, "recurrent_activation", None))
    if rec and rec != "sigmoid":
        why.append(f"recurrent_activation={rec}")
    if getattr(layer, "unroll", False):
        why.append("unroll=True")
    if getattr(cell, "use_bias", True) is False:
        why.append("use_bias=False")
    if kind == "GRU" and getattr(cell, "reset_after", True) is False:
        why.append("reset_after=False")
    if not why:
        return None
    return f"{getattr(layer, 'name', kind.lower())} ({kind}): " + ", ".join(why)


def _name(fn: Any) -> str | None:
    if fn is None:
        return None
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return str(name)
