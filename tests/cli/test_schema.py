"""The published JSON Schemas (gpudiag/data/*.schema.json) hold for what ``--json`` prints:
every sample trace analysed alone, all of them as the ranks of one run, and a comparison."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpudiag.analyze.diagnosis import SCHEMA_VERSION
from gpudiag.cli import main
from gpudiag.schemas import NAMES, schema
from tests.helpers.optional import require
from tests.helpers.paths import SAMPLES

jsonschema = require("jsonschema", "the reference validator of JSON Schema 2020-12")

TRACES = sorted(p.name for p in SAMPLES.iterdir() if p.is_file() and p.name != "README.md")
W0 = str(SAMPLES / "resnet50_dataloader_workers0.pt.trace.json.gz")
W4 = str(SAMPLES / "resnet50_dataloader_workers4.pt.trace.json.gz")


def validator(name: str) -> Any:
    s = schema(name)
    jsonschema.Draft202012Validator.check_schema(s)
    return jsonschema.Draft202012Validator(s, format_checker=jsonschema.FormatChecker())


def printed(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def problems(name: str, doc: dict) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator(name).iter_errors(doc)]


def test_schemas_are_valid_and_carry_the_version_the_output_carries():
    for name in NAMES:
        s = schema(name)
        jsonschema.Draft202012Validator.check_schema(s)
        assert s["$id"].endswith(f":{SCHEMA_VERSION}")
        assert s["properties"]["schema"]["const"] == SCHEMA_VERSION


@pytest.mark.parametrize("trace", TRACES)
def test_every_sample_trace_output_matches_the_schema(capsys, trace):
    if trace.endswith(".xplane.pb"):
        require("xprof", "decodes .xplane.pb, gpudiag[xplane]")
    doc = printed(capsys, ["analyze", str(SAMPLES / trace), "--json"])
    assert doc["schema"] == SCHEMA_VERSION
    assert problems("diagnosis", doc) == []


def test_all_samples_as_ranks_of_one_run_match_the_schema(capsys):
    require("xprof", "decodes the .xplane.pb among them, gpudiag[xplane]")
    files = [str(SAMPLES / t) for t in TRACES]
    doc = printed(capsys, ["analyze", *files, "--ranks", "--json", "--jobs", "1"])
    assert len(doc["ranks"]) >= len(TRACES)  # the .xplane.pb holds two workers
    assert problems("diagnosis", doc) == []


def test_compare_output_matches_the_schema(capsys):
    doc = printed(capsys, ["compare", W0, W4, "--json"])
    assert doc["schema"] == SCHEMA_VERSION
    assert problems("comparison", doc) == []


def test_the_schema_rejects_what_the_contract_forbids(capsys):
    good = printed(capsys, ["analyze", W0, "--json"])
    renamed = dict(good)
    renamed["result"] = renamed.pop("verdict")
    unknown = {**good, "verdict": "slow"}
    no_sync = {**good, "breakdown": {k: v for k, v in good["breakdown"].items() if k != "sync"}}
    bad_gain = {**good, "suggestions": [{**good["suggestions"][0], "expected_gain": "1.3x"}]}
    no_median = {**good, "steps": {"count": 3, "analyzed": 3}}
    for doc in (renamed, unknown, no_sync, bad_gain, no_median):
        assert problems("diagnosis", doc), doc
    # fields may be added within a schema number
    assert problems("diagnosis", {**good, "config": {"replicas": 2}, "new_field": 1}) == []


def test_unknown_schema_name_is_refused():
    with pytest.raises(ValueError, match="unknown schema"):
        schema("report")
