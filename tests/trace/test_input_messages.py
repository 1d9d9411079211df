"""What a user is told about an input gpudiag cannot read as it is: read it where possible
(a byte-order mark, UTF-16), else name the real problem in one line (another compression,
two documents in one gzip, a malformed event, a file still being written)."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import time
import zlib

import pytest

from gpudiag.cli import main
from gpudiag.trace.load import load_file
from gpudiag.trace.model.timeline import Metadata
from tests.helpers.foreign import rocm_hipfree
from tests.helpers.synth import periodic, record_profiled


def _kineto() -> bytes:
    return json.dumps(rocm_hipfree()).encode()


def _analyze(capsys, path) -> tuple[int, dict | None, str]:
    code = main(["analyze", str(path), "--json"])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert len(err.splitlines()) <= 1, err
    return code, (json.loads(out) if code == 0 else None), err.strip()


def test_a_utf8_byte_order_mark_is_read(tmp_path, capsys):
    plain, marked = tmp_path / "plain.json", tmp_path / "bom.json"
    plain.write_bytes(_kineto())
    marked.write_bytes(b"\xef\xbb\xbf" + _kineto())
    code, doc, err = _analyze(capsys, marked)
    assert code == 0, err
    _, want, _ = _analyze(capsys, plain)
    assert doc["verdict"] == want["verdict"] and doc["breakdown"] == want["breakdown"]


@pytest.mark.parametrize("codec", ["utf-16", "utf-16-be"])
def test_utf16_json_as_powershell_writes_it_is_read(tmp_path, capsys, codec):
    path = tmp_path / "ps.json"
    text = _kineto().decode()
    path.write_bytes(text.encode(codec) if codec == "utf-16" else b"\xfe\xff" + text.encode(codec))
    code, doc, err = _analyze(capsys, path)
    assert code == 0, err
    assert doc["steps"]["analyzed"] > 0


@pytest.mark.parametrize(
    "name, pack, said",
    [
        ("t.json.bz2", bz2.compress, "bzip2-compressed"),
        ("t.json.xz", lzma.compress, "xz-compressed"),
        ("t.json.z", zlib.compress, "zlib-compressed"),
    ],
)
def test_other_compressions_are_named_not_sent_to_xprof(tmp_path, capsys, name, pack, said):
    path = tmp_path / name
    path.write_bytes(pack(_kineto()))
    code, _, err = _analyze(capsys, path)
    assert code == 2 and said in err and "xprof" not in err and str(path) in err


def test_two_gzip_documents_concatenated_are_refused(tmp_path, capsys):
    one = gzip.compress(_kineto())
    path = tmp_path / "twice.json.gz"
    path.write_bytes(one + one)
    code, _, err = _analyze(capsys, path)
    assert code == 2 and "two JSON documents" in err


def test_two_gzip_documents_of_gpudiag_streams_are_refused(tmp_path, capsys):
    src = tmp_path / "run.json"
    _write_gpudiag(src)
    path = tmp_path / "twice.json.gz"
    one = gzip.compress(src.read_bytes())
    path.write_bytes(one + one)  # was read as one run with every step twice
    code, _, err = _analyze(capsys, path)
    assert code == 2 and "two JSON documents" in err


def test_one_document_in_several_gzip_members_is_read(tmp_path):
    """Members that continue one document (a writer flushing per block) are valid gzip."""
    raw = _kineto()
    cut = raw.index(b"},", len(raw) // 2) + 2  # between two events
    path = tmp_path / "members.json.gz"
    path.write_bytes(gzip.compress(raw[:cut]) + gzip.compress(raw[cut:]) + b"\0" * 8)
    whole = tmp_path / "whole.json.gz"
    whole.write_bytes(gzip.compress(raw))
    (a,), (b,) = load_file(str(path)), load_file(str(whole))
    assert len(a.steps) == len(b.steps) > 0


def test_a_virtual_file_of_size_zero_is_read_not_called_empty(tmp_path, capsys):
    if not os.path.exists("/proc/self/status"):
        pytest.skip("no /proc")
    code, _, err = _analyze(capsys, "/proc/self/status")
    assert code == 2 and "empty" not in err and "not a trace" in err


def test_a_malformed_event_is_named_not_an_internal_error(tmp_path, capsys):
    doc = rocm_hipfree()
    doc["traceEvents"][3]["args"] = [1, 2]
    path = tmp_path / "args.json"
    path.write_text(json.dumps(doc))
    code, _, err = _analyze(capsys, path)
    assert code == 2 and "args is a list, expected an object" in err
    assert "AttributeError" not in err


def test_unforeseen_errors_in_pool_workers_state_no_internal_text(tmp_path, monkeypatch):
    from gpudiag.trace.ranks import runs

    def broken(path, limits=None):
        raise AttributeError("'list' object has no attribute 'get'")

    monkeypatch.setattr("gpudiag.trace.load.load_file", broken)
    _, error = runs.read_summaries("x.json", True, runs.ReadLimits())
    assert error is not None and "'list'" not in error.problem and "AttributeError" in error.problem


def test_json_still_being_written_is_said_plainly(tmp_path, capsys):
    raw = _kineto()
    for name, data in [("w.json", raw[: len(raw) // 2]), ("w.json.gz", gzip.compress(raw)[:-40])]:
        path = tmp_path / name
        path.write_bytes(data)
        code, _, err = _analyze(capsys, path)
        assert code == 2 and "still being written" in err, err
        old = time.time() - 3600  # an hour old: not being written, cut short
        os.utime(path, (old, old))
        code, _, err = _analyze(capsys, path)
        assert code == 2 and "still being written" not in err and "truncated" in err


def _write_gpudiag(path) -> None:
    tl = periodic(steps=30, input_frac=0.35, compute_frac=0.5)
    record_profiled(path, tl, Metadata(producer="gpudiag", devices=["GPU 0"]))


def test_gzip_gpudiag_stream_being_written_reads_up_to_the_cut(tmp_path, capsys):
    src = tmp_path / "run.json"
    _write_gpudiag(src)
    path = tmp_path / "run.json.gz"
    path.write_bytes(gzip.compress(src.read_bytes())[:-200])
    code, doc, err = _analyze(capsys, path)
    assert code == 0, err
    assert doc["steps"]["analyzed"] > 0
    assert any("cut short" in lim for lim in doc["limitations"])


def test_gzip_inside_gzip_is_named(tmp_path):
    from gpudiag.trace.errors import TraceError

    inner = gzip.compress(b'{"traceEvents": []}')
    path = tmp_path / "twice.json.gz"
    path.write_bytes(gzip.compress(inner))
    with pytest.raises(TraceError, match="gzip inside a gzip"):
        load_file(str(path))
