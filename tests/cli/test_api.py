"""``gpudiag.analyze_traces`` / ``compare_runs``: the Python calls give what the CLI prints."""

from __future__ import annotations

import json

import pytest

import gpudiag
from gpudiag.cli import main
from tests.helpers.paths import SAMPLES

W0 = SAMPLES / "resnet50_dataloader_workers0.pt.trace.json.gz"
W4 = SAMPLES / "resnet50_dataloader_workers4.pt.trace.json.gz"


def cli_json(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_analyze_traces_is_the_cli_diagnosis(capsys):
    d = gpudiag.analyze_traces(W0, progress=False)  # a Path, as a notebook would pass it
    assert isinstance(d, gpudiag.Diagnosis)
    assert json.loads(json.dumps(d.to_dict())) == cli_json(capsys, ["analyze", str(W0), "--json"])


def test_a_pattern_and_a_list_read_as_the_cli_reads_them(capsys):
    pattern = str(SAMPLES / "resnet50_dataloader_workers*.pt.trace.json.gz")
    expected = cli_json(capsys, ["analyze", pattern, "--ranks", "--json"])
    assert gpudiag.analyze_traces(pattern, ranks=True, progress=False).to_dict() == expected
    listed = gpudiag.analyze_traces([str(W0), str(W4)], ranks=True, progress=False)
    assert listed.to_dict() == expected


def test_compare_runs_is_the_cli_comparison(capsys):
    c = gpudiag.compare_runs(W0, W4, progress=False)
    assert c.to_dict() == cli_json(capsys, ["compare", str(W0), str(W4), "--json"])


def test_bad_input_raises_one_line_naming_the_file(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(gpudiag.InputError) as e:
        gpudiag.analyze_traces(missing, progress=False)
    assert str(missing) in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(gpudiag.InputError, match="no trace given"):
        gpudiag.analyze_traces([], progress=False)
