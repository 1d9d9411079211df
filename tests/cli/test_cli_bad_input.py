"""Every malformed input exits 2 with one line naming the file and the problem."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import SAMPLES

GOOD = str(SAMPLES / "nccl_world128_rank0.json.gz")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "120"}
    return subprocess.run(
        [sys.executable, "-m", "gpudiag", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def assert_bad(path: str, *needles: str) -> None:
    r = run_cli("analyze", path)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert path in lines[0]
    for n in needles:
        assert n in lines[0], lines[0]
    assert r.stdout == ""


def _write(tmp_path, name: str, data: bytes) -> str:
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


def test_missing_path(tmp_path):
    assert_bad(str(tmp_path / "nope.json"), "no such file")


def test_directory(tmp_path):
    # a directory is a run's rank files (docs/multi-worker.md); an empty one is bad input
    assert_bad(str(tmp_path), "directory holds no trace files")


def test_empty_file(tmp_path):
    assert_bad(_write(tmp_path, "empty.json", b""), "empty")


def test_whitespace_file(tmp_path):
    assert_bad(_write(tmp_path, "blank.json", b"  \n\n"), "empty")


def test_truncated_json(tmp_path):
    raw = gzip.decompress(Path(GOOD).read_bytes())
    assert_bad(_write(tmp_path, "cut.json", raw[: len(raw) // 2]), "truncated JSON")


def test_truncated_gzip(tmp_path):
    raw = Path(GOOD).read_bytes()
    assert_bad(_write(tmp_path, "cut.json.gz", raw[: len(raw) // 2]), "truncated gzip")


def test_corrupt_gzip(tmp_path):
    raw = bytearray(Path(GOOD).read_bytes())
    raw[200:260] = b"\x00" * 60
    assert_bad(_write(tmp_path, "bad.json.gz", bytes(raw)), "gzip")


def test_random_bytes(tmp_path):
    data = bytes((i * 7919 + 13) % 256 for i in range(4096))
    assert_bad(_write(tmp_path, "random.pb", data))


def test_plain_text(tmp_path):
    assert_bad(_write(tmp_path, "notes.txt", b"hello, this is not a trace\n"), "not a trace")


def test_json_of_wrong_shape(tmp_path):
    assert_bad(_write(tmp_path, "list.json", b"[1, 2, 3]"), "not a trace")
    assert_bad(_write(tmp_path, "obj.json", b'{"foo": 1}'), "traceEvents")
    assert_bad(_write(tmp_path, "te.json", b'{"traceEvents": 5}'), "traceEvents")


def test_wrong_types_inside_events(tmp_path):
    doc = {
        "schemaVersion": 1,
        "traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": "soon", "dur": 5}
        ],
    }
    assert_bad(_write(tmp_path, "types.json", json.dumps(doc).encode()), "malformed")
    doc2 = {"schemaVersion": 1, "traceEvents": ["not an event"]}
    assert_bad(_write(tmp_path, "types2.json", json.dumps(doc2).encode()), "expected an object")


def test_unknown_producer(tmp_path):
    doc = {"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1}]}
    assert_bad(_write(tmp_path, "other.json", json.dumps(doc).encode()), "unknown producer")


def test_xprof_result_that_is_not_a_trace(tmp_path):
    table = [{"cols": [{"id": "stepnum"}], "p": {"steptime_ms_average": "21.3"}, "rows": []}]
    assert_bad(_write(tmp_path, "overview.json", json.dumps(table).encode()), "xprof tool result")


def test_one_bad_file_among_good_ones_names_the_bad_one(tmp_path):
    bad = _write(tmp_path, "empty.json", b"")
    r = run_cli("analyze", GOOD, bad)
    assert r.returncode == 2
    assert bad in r.stderr and GOOD not in r.stderr


def test_bad_fail_on_value():
    r = run_cli("analyze", GOOD, "--fail-on", "slow")
    assert r.returncode == 2
    assert "unknown verdict" in r.stderr


@pytest.mark.parametrize(
    ("fail_on", "code"), [("sync-bound", 3), ("data-starved", 0), ("compute-bound,sync-bound", 3)]
)
def test_fail_on_gates(fail_on, code):
    assert run_cli("analyze", GOOD, "--fail-on", fail_on).returncode == code


def test_json_is_exactly_to_dict():
    from gpudiag.analyze import diagnose
    from gpudiag.trace.load import load_file

    r = run_cli("analyze", GOOD, "--json")
    assert r.returncode == 0
    assert json.loads(r.stdout) == json.loads(json.dumps(diagnose(load_file(GOOD)).to_dict()))
    assert r.stderr.strip() == ""


def test_report_renders_headline_and_fixes():
    r = run_cli("analyze", GOOD)
    assert r.returncode == 0
    assert "SYNC-BOUND" in r.stdout
    assert "exposed-collectives" in r.stdout
    assert "Top fixes" in r.stdout


def test_help_and_analyze_do_not_import_tensorflow():
    code = (
        "import sys; from gpudiag.cli import main; "
        f"main(['analyze', {GOOD!r}, '--json']); "
        "heavy = ('tensorflow', 'keras', 'xprof', 'jax', 'torch'); "
        "bad = [m for m in heavy if m in sys.modules]; "
        "print('IMPORTED', bad)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "IMPORTED []" in r.stdout
    r = run_cli("--help")
    assert r.returncode == 0 and "analyze" in r.stdout


def test_demo_without_tensorflow_says_how_to_install(tmp_path):
    code = (
        "import sys; sys.modules['tensorflow'] = None; "
        "from gpudiag.cli import main; raise SystemExit(main(['demo']))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "pip install 'gpudiag[cpu]'" in r.stderr


def test_xprof_binary_cache_file_is_not_a_trace(tmp_path):
    """xprof leaves ALL_HOSTS.op_stats*.pb beside the profiles it reads: a protobuf, not an
    XSpace."""
    pytest.importorskip("xprof")
    import shutil

    from gpudiag.trace.quiet import quiet_stderr

    src = tmp_path / "host.xplane.pb"
    shutil.copyfile(SAMPLES / "tf_gpu_multi_worker.xplane.pb", src)
    with quiet_stderr():
        from xprof.convert import raw_to_tool_data as r2t

        r2t.xspace_to_tool_data([str(src)], "overview_page", {})
    cached = [p for p in tmp_path.iterdir() if p.name != src.name]
    assert cached, "xprof wrote no cache file"
    assert_bad(str(cached[0]), "not a profiler trace")
