"""The profiler windows never cost the user anything (issue: hardening, profiler parts):
stderr lines the program writes meanwhile are not lost, a profiler session of the program's
own is left alone (the window is skipped and the report says so), no temp dir is left.

One real Keras run in a subprocess (TensorFlow's own logging on, a private TMPDIR) serves the
three tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.helpers.paths import REPO

pytestmark = [pytest.mark.train, pytest.mark.timeout(240)]
pytest.importorskip("tensorflow")

LINES = 1500

SCRIPT = textwrap.dedent(
    """
    import json, os, sys, threading, time
    import numpy as np
    import keras
    import tensorflow as tf
    from gpudiag import DiagnoseCallback

    out = {}
    rng = np.random.default_rng(0)
    x = rng.random((64 * 40, 32), dtype=np.float32)
    y = rng.random((64 * 40, 1), dtype=np.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(64)
    m = keras.Sequential([keras.Input((32,)), keras.layers.Dense(256, activation="relu"),
                          keras.layers.Dense(1)])
    m.compile("adam", "mse")

    # 1. a thread of the program writes to stderr all through a fit with several windows
    stop = threading.Event()
    def talk():
        for i in range(%(lines)d):
            sys.stderr.write("user line %%d\\n" %% i)
            sys.stderr.flush()
            time.sleep(0.002)
    t = threading.Thread(target=talk)
    cb = DiagnoseCallback(trace_path=sys.argv[1] + "/a.json", quiet=True)
    t.start()
    m.fit(ds, epochs=3, verbose=0, callbacks=[cb])
    t.join()
    out["windows"] = cb.windows_taken

    # 2. the program runs its own profiler session across a fit
    user_dir = sys.argv[1] + "/user-profile"
    tf.profiler.experimental.start(user_dir)
    cb2 = DiagnoseCallback(trace_path=sys.argv[1] + "/b.json", quiet=True)
    m.fit(ds, epochs=1, verbose=0, callbacks=[cb2])
    tf.profiler.experimental.stop()
    out["limitations"] = cb2.diagnosis.limitations
    out["user_profile"] = [f for _, _, fs in os.walk(user_dir) for f in fs]

    # 3. an exception mid-window
    class Boom(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 7:
                raise RuntimeError("boom")
    cb3 = DiagnoseCallback(trace_path=sys.argv[1] + "/c.json", quiet=True, profile_start=5)
    try:
        m.fit(ds, epochs=1, verbose=0, callbacks=[cb3, Boom()])
    except RuntimeError:
        pass
    deadline = time.time() + 10  # the watchdog notices that fit was left and cleans up
    while time.time() < deadline and any(
            th.name.startswith("gpudiag") for th in threading.enumerate()):
        time.sleep(0.1)
    out["tmp_left"] = sorted(os.listdir(os.environ["TMPDIR"]))
    print("RESULT " + json.dumps(out), flush=True)
    sys.stdout.flush()
    os._exit(0)
    """
) % {"lines": LINES}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    work = tmp_path_factory.mktemp("profiler-faults")
    tmp = work / "tmp"
    tmp.mkdir()
    env = {
        **os.environ,
        "TMPDIR": str(tmp),
        "TF_CPP_MIN_LOG_LEVEL": "0",
        "TF_ENABLE_ONEDNN_OPTS": "0",
        "PYTHONPATH": str(REPO),
    }
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(work)],
        capture_output=True,
        text=True,
        timeout=200,
        env=env,
        cwd=REPO,
    )
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line is not None, r.stderr[-3000:]
    return json.loads(line[len("RESULT ") :]), r.stderr


def test_user_stderr_lines_survive_the_profiler_windows(run):
    result, stderr = run
    assert len(result["windows"]) >= 2  # several windows started, stopped and decoded
    got = [ln for ln in stderr.splitlines() if ln.startswith("user line ")]
    # every line arrives (a line written while fd 2 was redirected comes a moment later)
    assert sorted(got) == sorted(f"user line {i}" for i in range(LINES))
    # and what gpudiag's own calls said is not printed
    assert (
        "profiler_session.cc"
        not in stderr.split("user line 0")[-1].split(f"user line {LINES - 1}")[0]
    )


def test_a_profiler_session_of_the_program_is_left_alone(run):
    result, _ = run
    assert any(
        "skipped" in lim and "tf.profiler session of the program's own" in lim
        for lim in result["limitations"]
    ), result["limitations"]
    assert any(f.endswith(".xplane.pb") for f in result["user_profile"])  # theirs is whole


def test_no_profiler_temp_dir_is_left(run):
    result, _ = run
    assert not [d for d in result["tmp_left"] if d.startswith("gpudiag-profile-")]
