"""The fit account on real Keras fits (TF, CPU), each in its own process
(tests/helpers/fit_scenarios.py), held against the script's own timing callback: validation and a
blocking epoch-end callback named with their shares and a remedy each; a shuffle buffer
refilled through a per-element map at every epoch's start named as such; and neither named
where the run has none of it."""

from __future__ import annotations

import json

import pytest

from gpudiag.analyze import diagnose
from gpudiag.trace.load import load_file
from tests.helpers.script_io import run_script

pytestmark = [pytest.mark.train, pytest.mark.timeout(300)]
pytest.importorskip("tensorflow")

POINTS = 0.06  # a share within 6 points of what the script's own timing callback measured


def run(name: str, tmp_path) -> dict:
    return run_script("fit_scenarios", name, tmp_path / f"{name}.json", timeout=280, what=name)[0]


def finding(d: dict, fid: str) -> dict | None:
    return next((f for f in d["findings"] if f["id"] == fid), None)


def titles(d: dict, fid: str) -> list[str]:
    return [s["title"] for s in d["suggestions"] if s["finding"] == fid]


def test_validation_and_a_blocking_callback_are_named_with_their_shares(tmp_path):
    r = run("heavy_fit", tmp_path)
    d, fit = r["diagnosis"], r["diagnosis"]["run"]["fit"]
    assert fit["measured"] and fit["callbacks_timed"]
    validation, callbacks = r["validation_s"] / r["fit_s"], r["callback_s"] / r["fit_s"]
    assert fit["shares"]["validation"] == pytest.approx(validation, abs=POINTS)
    assert fit["shares"]["callbacks"] == pytest.approx(callbacks, abs=POINTS)
    assert fit["wall_s"] == pytest.approx(r["fit_s"], rel=0.05)
    v = finding(d, "validation-heavy")
    assert v is not None and v["evidence"]["validation_pct"] == pytest.approx(
        100 * validation, abs=100 * POINTS
    )
    c = finding(d, "epoch-end-callbacks")
    assert c is not None and "SlowStorageCheckpoint" in c["title"]
    assert "Validate every 3 epochs" in titles(d, "validation-heavy")
    assert "Run SlowStorageCheckpoint every 3 epochs" in titles(d, "epoch-end-callbacks")
    # the steps are a minority: the headline says so first, the step verdict follows
    steps = fit["shares"]["steps"]
    assert steps < 0.5 and d["reason"].startswith(f"training steps are {100 * steps:.0f}%")
    again = diagnose(load_file(r["trace_path"])).to_dict()
    assert json.loads(json.dumps(again))["run"]["fit"] == fit  # analyze reads the same account


def test_a_fit_without_validation_or_callbacks_gets_neither(tmp_path):
    r = run("plain_fit", tmp_path)
    d = r["diagnosis"]
    fit = d["run"]["fit"]
    assert fit["measured"] and fit["validation_runs"] == 0
    assert fit["shares"]["validation"] == 0 and fit["shares"]["callbacks"] < 0.02
    assert finding(d, "validation-heavy") is None
    assert finding(d, "epoch-end-callbacks") is None


def test_a_shuffle_buffer_refilled_through_the_map_every_epoch_is_named(tmp_path):
    r = run("shuffle_refill", tmp_path)
    d = r["diagnosis"]
    f = finding(d, "epoch-start-wait")
    assert f is not None and f["evidence"]["cause"] == "shuffle-map"
    assert "a shuffle buffer of 20000 elements filled through a per-element map" in f["title"]
    # what the script's timer reads from each epoch's start to its first batch's end
    # (compilation in) against gpudiag's figure with the first epoch's compilation in
    waited = sum(r["first_batch_s"]) / r["fit_s"]
    assert f["evidence"]["first_batch_wait_pct"] / 100 == pytest.approx(waited, abs=0.10)
    assert f"({f['evidence']['first_batch_wait_pct']}% of the fit" in f["title"]
    # the refill recurring every epoch, compilation apart: the later epochs' waits
    later = r["first_batch_s"][1:]
    assert f["evidence"]["per_epoch_s"] == pytest.approx(sum(later) / len(later), rel=0.35)
    # the top remedy acts on the wait
    top = d["suggestions"][0]
    assert top["finding"] == "epoch-start-wait", [s["title"] for s in d["suggestions"]]


def test_a_small_buffer_is_starved_by_the_map_every_step_instead(tmp_path):
    r = run("shuffle_small", tmp_path)
    d = r["diagnosis"]
    assert finding(d, "epoch-start-wait") is None
    assert d["verdict"] == "data-starved"
    assert any("batch before the map" in s["detail"] for s in d["suggestions"]), [
        s["title"] for s in d["suggestions"]
    ]
