"""The held-out check of docs/causes.md: training scripts with one cause of slowness planted
each, written apart from the tests' scenarios (other models, other callbacks, other
optimizers), run with ``DiagnoseCallback``, and scored by whether gpudiag names the planted
cause with a remedy that acts on it, and whether a bigger batch is offered anyway.

    python benchmarks/planted_causes.py            # every case, one process each
    python benchmarks/planted_causes.py --list

A case passes when its expected finding is reported and one of its expected remedies is
among the suggestions (a remedy whose gain the run cannot support may be withheld: then
the finding alone counts as "named, no remedy shown"); the control passes when none of the
causes' findings is reported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# case: (what is planted, expected finding, remedies that act on it)
CASES = {
    "control": ("a small conv net, nothing planted", None, ()),
    "fp16_conv": (
        "mixed_float16 on a conv net, on a CPU",
        "slow-mixed-precision",
        ("float32-policy",),
    ),
    "evaluate_cb": (
        "a callback calling model.evaluate on 128 samples every 3 batches",
        "batch-callbacks",
        ("callback-less-often", "predict-on-batch"),
    ),
    "logging_cb": (
        "a callback writing a JSON log line and waiting 8 ms every batch",
        "batch-callbacks",
        ("callback-less-often",),
    ),
    "rmsprop_text": (
        "RMSprop on a 200k-row Embedding under a Conv1D text model",
        "dense-embedding-updates",
        ("sparse-embedding-updates", "smaller-vocabulary"),
    ),
    "checkpoint_5": (
        "ModelCheckpoint(save_freq=5) of a 2.1 M-parameter model",
        "batch-callbacks",
        ("checkpoint-less-often", "save-weights-only"),
    ),
    "online_loop": ("30 fits of 5 steps on new data each", "repeated-fit", ("one-fit",)),
    "one_thread": (
        "intra-op threads set to 1 (inter-op left alone), a wide MLP at batch 256",
        "threads-capped",
        ("lift-thread-cap",),
    ),
}
CAUSES = (
    "slow-mixed-precision",
    "batch-callbacks",
    "dense-embedding-updates",
    "repeated-fit",
    "threads-capped",
)


def _conv():
    import keras

    m = keras.Sequential(
        [
            keras.Input((24, 24, 3)),
            keras.layers.Conv2D(16, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(10),
        ]
    )
    m.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def _images(n: int):
    import numpy as np

    rng = np.random.default_rng(3)
    return rng.random((n, 24, 24, 3), dtype=np.float32), rng.integers(0, 10, n)


def case(name: str, trace: str) -> dict:
    import keras
    import numpy as np

    from gpudiag import DiagnoseCallback

    cb = DiagnoseCallback(trace_path=trace, quiet=True)
    t = time.perf_counter()
    if name in ("control", "evaluate_cb", "logging_cb", "fp16_conv"):
        if name == "fp16_conv":
            keras.mixed_precision.set_global_policy("mixed_float16")
        x, y = _images(1280)
        m = _conv()
        extra: list = []
        if name == "evaluate_cb":

            class EvalEvery(keras.callbacks.Callback):
                def on_train_batch_end(self, batch, logs=None):
                    if batch % 3 == 0:
                        self.model.evaluate(x[:128], y[:128], verbose=0)

            extra = [EvalEvery()]
        elif name == "logging_cb":

            class JsonLog(keras.callbacks.Callback):
                def __init__(self) -> None:
                    super().__init__()
                    self.f = open(os.devnull, "w")  # noqa: SIM115

                def on_train_batch_end(self, batch, logs=None):
                    self.f.write(json.dumps({"batch": batch, **(logs or {})}, default=str))
                    time.sleep(0.008)

            extra = [JsonLog()]
        m.fit(x, y, batch_size=64, epochs=2, verbose=0, callbacks=[*extra, cb])
    elif name == "rmsprop_text":
        rng = np.random.default_rng(4)
        x = rng.integers(0, 200_000, (1280, 12)).astype("int32")
        y = rng.random((1280, 1)).astype("float32")
        m = keras.Sequential(
            [
                keras.Input((12,), dtype="int32"),
                keras.layers.Embedding(200_000, 48),
                keras.layers.Conv1D(32, 3, activation="relu"),
                keras.layers.GlobalMaxPooling1D(),
                keras.layers.Dense(1),
            ]
        )
        m.compile("rmsprop", "mse")
        m.fit(x, y, batch_size=64, epochs=2, verbose=0, callbacks=[cb])
    elif name == "checkpoint_5":
        rng = np.random.default_rng(5)
        x, y = rng.random((1280, 128), dtype=np.float32), rng.random((1280, 1), dtype=np.float32)
        m = keras.Sequential(
            [
                keras.Input((128,)),
                keras.layers.Dense(1400, activation="relu"),
                keras.layers.Dense(1400, activation="relu"),
                keras.layers.Dense(1),
            ]
        )
        m.compile("adam", "mse")
        path = os.path.join(tempfile.mkdtemp(), "m.keras")
        ck = keras.callbacks.ModelCheckpoint(path, save_freq=5)
        m.fit(x, y, batch_size=64, epochs=2, verbose=0, callbacks=[ck, cb])
    elif name == "online_loop":
        m = _conv()
        for i in range(30):
            x, y = _images(5 * 32)
            x += i * 1e-3
            m.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=[cb])
    elif name == "one_thread":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
        rng = np.random.default_rng(6)
        x, y = rng.random((256 * 30, 256), dtype=np.float32), rng.random((256 * 30, 1))
        m = keras.Sequential(
            [
                keras.Input((256,)),
                keras.layers.Dense(2048, activation="relu"),
                keras.layers.Dense(1),
            ]
        )
        m.compile("sgd", "mse")
        m.fit(x, y, batch_size=256, epochs=2, verbose=0, callbacks=[cb])
    wall = time.perf_counter() - t
    d = cb.diagnosis.to_dict()
    return {
        "wall_s": wall,
        "findings": {f["id"]: f["severity"] for f in d["findings"]},
        "remedies": [s["remedy"] for s in d["suggestions"]],
        "top": [f"{s['title']} ({s['expected_gain']}x)" for s in d["suggestions"][:3]],
    }


def score(name: str, r: dict) -> str:
    _, fid, wanted = CASES[name]
    if fid is None:
        named = [c for c in CAUSES if c in r["findings"]]
        return "pass" if not named else f"FALSE ALARM {named}"
    if fid not in r["findings"]:
        return "MISSED"
    if any(w in r["remedies"] for w in wanted):
        return "pass"
    return f"named ({r['findings'][fid]}), no remedy shown"


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        out = case(sys.argv[2], sys.argv[3])
        print("RESULT " + json.dumps(out), flush=True)
        os._exit(0)
    if "--list" in sys.argv:
        for k, (what, fid, _) in CASES.items():
            print(f"{k:14} {fid or '-':24} {what}")
        return 0
    names = [a for a in sys.argv[1:] if a in CASES] or list(CASES)
    env = {**os.environ, "PYTHONPATH": ROOT, "TF_CPP_MIN_LOG_LEVEL": "3"}
    print("| case | planted | expected finding | result | bigger batch offered | top suggestions |")
    print("|---|---|---|---|---|---|")
    for name in names:
        trace = os.path.join(tempfile.mkdtemp(), f"{name}.json")
        p = subprocess.run(
            [sys.executable, __file__, "--child", name, trace],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=900,
        )
        line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")), None)
        if line is None:
            print(f"| {name} | {CASES[name][0]} | | FAILED: {p.stderr[-300:]!r} | | |")
            continue
        r = json.loads(line[7:])
        batch = "yes" if "bigger-batch" in r["remedies"] else "no"
        print(
            f"| {name} | {CASES[name][0]} | {CASES[name][1] or '(none)'} | {score(name, r)} "
            f"| {batch} | {'; '.join(r['top'])} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
