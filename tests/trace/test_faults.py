"""Hostile and broken inputs (issue: hardening, items 6-12): each test reproduces one original
failure. Inputs are generated small; where a bound matters, the bound is lowered for the test
instead of the input made large."""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import pytest
from rich.console import Console

from gpudiag.cli import main
from gpudiag.record.writer import TraceWriter
from gpudiag.show.follow import TraceFollower
from gpudiag.show.live import LiveState, TrainingStatus, render, run_live
from gpudiag.trace.errors import TraceError
from gpudiag.trace.load import load_file
from gpudiag.trace.model.timeline import Metadata
from gpudiag.trace.native.follow import TraceTail
from gpudiag.trace.source import files as source_files
from tests.helpers.paths import REPO, SAMPLES

GOOD = str(SAMPLES / "nccl_world128_rank0.json.gz")
KINETO_TOP = '{"schemaVersion": 1, "deviceProperties": [], "traceEvents": '


def analyze(capsys, *args: str) -> tuple[int, str, str]:
    """``gpudiag analyze`` in-process: (exit code, stdout, stderr)."""
    code = main(["analyze", *args])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(capsys, path: str, *needles: str) -> str:
    code, out, err = analyze(capsys, path)
    lines = err.splitlines()
    assert code == 2, err
    assert len(lines) == 1, err
    assert "Traceback" not in err and out == ""
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def kineto_file(tmp_path: Path, name: str, events_json: str) -> str:
    p = tmp_path / name
    p.write_text(KINETO_TOP + events_json + "}")
    return str(p)


def gpudiag_trace(path: Path, steps: int = 3, close: bool = True, run_id: str = "") -> Path:
    w = TraceWriter(str(path), Metadata(producer="gpudiag", run_id=run_id), flush_every=0.0)
    for i in range(steps):
        w.step(i, i * 1000.0, i * 1000.0 + 900.0)
    if close:
        w.close()
    else:
        w.flush()  # a run killed before close(): no closing bracket
    return path


# ---- 6. every reader streams, bounded -------------------------------------------------------


def test_gzip_bomb_stops_at_the_ratio_limit(tmp_path, capsys, monkeypatch):
    """Was: non-Kineto formats decompressed whole files (2.7 MB bomb -> 22 GB RSS)."""
    monkeypatch.setattr(source_files, "MIN_GZIP_LIMIT", 1 << 20)
    p = tmp_path / "bomb.json.gz"
    with gzip.open(p, "wb") as f:  # 8 MiB of blank lines in a ~8 KiB file
        f.write(b"\n" * (8 << 20))
    assert_one_line_error(capsys, str(p), "decompression bomb", "--max-gzip-ratio")
    # the limit is overridable, by flag and by environment; blank space then reads as empty
    code, _, err = analyze(capsys, str(p), "--max-gzip-ratio", "5000")
    assert code == 2 and "gzip holds an empty file" in err
    monkeypatch.setenv("GPUDIAG_MAX_GZIP_RATIO", "5000")
    assert analyze(capsys, str(p))[2].count("empty") == 1


def test_xplane_beyond_the_decode_bound_is_refused_before_decoding(capsys, monkeypatch):
    """Reading an XSpace takes memory in proportion to its size (about 2.7x): the size is
    checked first, with the override named; the flag and the environment raise the bound."""
    xplane = str(SAMPLES / "tf_gpu_multi_worker.xplane.pb")  # 3 MB
    monkeypatch.delenv("GPUDIAG_MAX_XPLANE_MB", raising=False)
    calls = []
    monkeypatch.setattr(
        "gpudiag.trace.tf.xspace.reader.read_xplane", lambda p, bounds=None: calls.append(p) or []
    )
    code, _, err = analyze(capsys, xplane, "--max-xplane-mb", "1")
    assert code == 2 and err.count("\n") == 1
    assert "3 MB xplane" in err and "--max-xplane-mb" in err and not calls
    monkeypatch.setenv("GPUDIAG_MAX_XPLANE_MB", "1")
    with pytest.raises(TraceError, match="beyond the 1 MB bound"):
        load_file(xplane)
    monkeypatch.setenv("GPUDIAG_MAX_XPLANE_MB", "4")
    load_file(xplane)  # within the bound: handed to the decoder
    assert calls == [xplane]


@pytest.mark.parametrize("kind", ["kineto", "gpudiag"])
def test_gzip_bomb_in_each_format(tmp_path, kind, monkeypatch):
    monkeypatch.setattr(source_files, "MIN_GZIP_LIMIT", 1 << 20)
    head = (
        KINETO_TOP + "["
        if kind == "kineto"
        else '[\n{"name":"gpudiag.metadata","ph":"M","args":{"format":"gpudiag-trace"}}\n'
    )
    p = tmp_path / f"{kind}.json.gz"
    with gzip.open(p, "wb") as f:
        f.write(head.encode() + b" " * (8 << 20))
    with pytest.raises(TraceError, match="decompression bomb"):
        load_file(str(p))


def test_deep_nesting_is_refused_not_parsed(tmp_path, capsys):
    """Was: 80 KB of nested brackets took 3.95 GB through the streaming parser."""
    deep = "[" * 5000 + "]" * 5000
    p = kineto_file(tmp_path, "deep.json", f"[{deep}]")
    assert_one_line_error(capsys, p, "nested deeper than")
    q = tmp_path / "deep.gpudiag.json"
    q.write_text(
        '[\n{"name":"gpudiag.metadata","ph":"M","args":{"format":"gpudiag-trace"}}\n'
        f",{deep}\n,{{}}\n]\n"
    )
    assert_one_line_error(capsys, str(q), "corrupt gpudiag trace at line 3")


def test_a_huge_string_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(source_files, "MAX_STRING", 1 << 16)
    monkeypatch.setattr(
        source_files.JsonGuard.__init__, "__defaults__", (source_files.MAX_DEPTH, 1 << 16)
    )
    p = kineto_file(tmp_path, "long.json", '[{"ph":"X","name":"' + "a" * (1 << 18) + '"}]')
    with pytest.raises(TraceError, match="JSON string longer than"):
        load_file(p)


def test_json_guard_tracks_strings_and_escapes_across_chunks():
    """Brackets inside strings (also after escaped quotes split between reads) don't count."""
    doc = b'{"a": "[[[\\"[[", "b": [[1]], "c": "x\\\\", "d": "]]]"}'
    for size in range(1, len(doc) + 1):
        guard = source_files.JsonGuard("t", max_depth=3)
        for i in range(0, len(doc), size):
            guard.feed(doc[i : i + size])
        assert guard.depth == 0
    with pytest.raises(TraceError, match="deeper than 3"):
        source_files.JsonGuard("t", max_depth=3).feed(b'{"a": [[[1]]]}')


def test_a_line_without_end_is_refused(tmp_path, monkeypatch):
    from gpudiag.trace.native import reader as native_reader

    monkeypatch.setattr(native_reader, "MAX_LINE", 1 << 16)
    p = tmp_path / "flood.json"
    p.write_bytes(
        b'[\n{"name":"gpudiag.metadata","ph":"M","args":{"format":"gpudiag-trace"}}\n'
        + b"x" * (1 << 20)
    )
    with pytest.raises(TraceError, match="longer than"):
        load_file(str(p))


def test_gpudiag_trace_streams_blank_lines_fast(tmp_path):
    """A file of blank lines is scanned chunk by chunk, not split line by line."""
    p = gpudiag_trace(tmp_path / "t.json")
    raw = p.read_bytes()
    p.write_bytes(raw[:-2] + b"\n" * (4 << 20) + raw[-2:])
    (tl,) = load_file(str(p))
    assert len(tl.steps) == 3
    (tmp_path / "blank.json").write_bytes(b"\n" * (4 << 20))
    with pytest.raises(TraceError, match="empty"):
        load_file(str(tmp_path / "blank.json"))


def test_tf_trace_viewer_json_is_streamed_in_two_passes(tmp_path):
    """Names (M events) may come after the events that need them: a second pass, not a
    list of every event in memory."""
    events = [
        {"ph": "X", "pid": 1, "tid": 2, "name": "train 0", "ts": 0, "dur": 1000},
        {
            "ph": "X",
            "pid": 1,
            "tid": 3,
            "name": "IteratorGetNextOp::DoCompute",
            "ts": 0,
            "dur": 600,
        },
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "M", "pid": 1, "tid": 2, "name": "thread_name", "args": {"name": "python"}},
    ]
    p = tmp_path / "tf.trace.json.gz"
    with gzip.open(p, "wt") as f:
        json.dump({"displayTimeUnit": "ns", "traceEvents": events}, f)
    (tl,) = load_file(str(p))
    assert tl.meta.producer == "tf-trace-viewer"
    assert len(tl.steps) == 1 and tl.input_wait.total() == pytest.approx(600)


# ---- 7. live --follow and several runs ------------------------------------------------------


def _append(path: Path, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


def test_follow_survives_a_malformed_line_and_a_wrong_type(tmp_path):
    """Was: one bad line (or a counter value "high") froze the panel on old figures."""
    p = gpudiag_trace(tmp_path / "t.json", steps=2, close=False)
    follower = TraceFollower(str(p))
    assert follower.poll().steps_per_s is not None
    _append(p, ',{"ph":"X", broken\n')
    _append(p, ',{"ph":"C","name":"gpu_util","ts":5000,"args":{"GPU 0":"high"}}\n')
    _append(p, ',{"ph":"X","cat":"step","name":"s","ts":"soon","dur":1}\n')
    _append(p, ',{"ph":"X","cat":"step","name":"s","ts":9000,"dur":1e999}\n')
    for i in range(2, 6):
        _append(
            p,
            f',{{"ph":"X","cat":"step","name":"step {i}","pid":1,"tid":1,'
            f'"ts":{i * 1000.0},"dur":900.0,"args":{{"step":{i}}}}}\n',
        )
    status = follower.poll()
    assert "follow error" not in status.note
    assert follower.tail.bad_lines == 4
    assert "4 malformed line(s) skipped" in status.note
    assert len(follower.tail.timeline().steps) == 6


def test_follow_memory_is_bounded_for_a_flood_without_newlines(tmp_path, monkeypatch):
    from gpudiag.trace.native import follow

    monkeypatch.setattr(follow, "MAX_LINE", 1 << 16)
    p = gpudiag_trace(tmp_path / "t.json", steps=2, close=False)
    tail = TraceTail(str(p))
    tail.poll()
    for _ in range(8):
        _append(p, "x" * (1 << 15))
        tail.poll()
        assert len(tail._partial) <= 1 << 16
    _append(p, '\n,{"ph":"X","cat":"step","name":"s","pid":1,"tid":1,"ts":5000.0,"dur":1.0}\n')
    assert tail.poll() is True
    assert tail.bad_lines == 1 and len(tail.timeline().steps) == 3


def test_follow_a_fifo_is_refused_at_once(tmp_path, capsys):
    """Was: opening the FIFO to check its head blocked forever."""
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    done: list[int] = []
    t = threading.Thread(
        target=lambda: done.append(main(["live", "--once", "--follow", str(fifo)])), daemon=True
    )
    t.start()
    t.join(20)
    assert done == [2]
    err = capsys.readouterr().err
    assert "not a regular file" in err and "FIFO" in err and "empty" not in err
    assert_one_line_error(capsys, str(fifo), "not a regular file")


def test_follow_takes_several_files_or_a_glob_and_follows_the_newest(tmp_path):
    """Was: README's `--follow gpudiag-trace-*.json` waited for a file named with a '*', or
    failed on two files."""
    old = gpudiag_trace(tmp_path / "gpudiag-trace-1.json", steps=2)
    new = gpudiag_trace(tmp_path / "gpudiag-trace-2.json", steps=4)
    os.utime(old, (1, 1))
    for patterns in ([str(tmp_path / "gpudiag-trace-*.json")], [str(old), str(new)]):
        follower = TraceFollower(patterns)
        status = follower.poll()
        assert follower.tail.path == str(new)
        assert "gpudiag-trace-2.json" in status.note
    waiting = TraceFollower([str(tmp_path / "none-*.json")]).poll()
    assert "waiting for" in waiting.note


def test_live_once_follow_with_two_files_runs(tmp_path, capsys):
    a = gpudiag_trace(tmp_path / "a.json")
    b = gpudiag_trace(tmp_path / "b.json")
    assert main(["live", "--once", "--interval", "0.1", "--follow", str(a), str(b)]) == 0
    assert "Training" in capsys.readouterr().out


def test_analyze_refuses_to_merge_unrelated_runs(tmp_path, capsys):
    """Was: `analyze gpudiag-trace-*.json` merged separate runs as if they were ranks, with
    or without run ids in the headers."""
    for ids in (("a1", "b2"), ("", "")):
        a = gpudiag_trace(tmp_path / f"gpudiag-trace-1{ids[0]}.json", run_id=ids[0])
        # another run (not a copy of the first: copies are named as duplicates)
        b = gpudiag_trace(tmp_path / f"gpudiag-trace-2{ids[1]}.json", steps=4, run_id=ids[1])
        code, out, err = analyze(capsys, str(a), str(b))
        assert code == 2 and out == "" and len(err.splitlines()) == 1, err
        assert a.name in err and b.name in err and "2 runs" in err and "--ranks" in err
        assert analyze(capsys, str(a), str(b), "--ranks")[0] == 0
    # distinct ranks (two Kineto ranks) may be one run
    other = str(SAMPLES / "a100_overlapped_comm.json.gz")
    assert analyze(capsys, GOOD, other)[0] == 0


# ---- 8. nothing from input reaches the terminal unescaped ----------------------------------


def test_markup_in_a_path_is_shown_as_is(tmp_path, capsys, monkeypatch):
    """Was: `run[/]x.json` raised MarkupError; `[bold]y.json` was shown as `y.json`."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run[").mkdir()
    for p in ("run[/]x.json.gz", "[bold]y.json.gz"):
        (tmp_path / p).write_bytes(Path(GOOD).read_bytes())
        code, out, err = analyze(capsys, p)
        assert code == 0 and err == ""
        assert f"gpudiag — {p}" in out
    missing = str(tmp_path / "[red]gone[/].json")
    assert missing in assert_one_line_error(capsys, missing)  # "no file matches" (a glob)


def test_ansi_escapes_from_a_trace_are_not_printed(tmp_path, capsys):
    """Was: a JSON key or op name "\\u001b[2J" reached the terminal (also in error lines)."""
    bad = kineto_file(tmp_path, "esc.json", '[{"ph":"X","name":"\\u001b[2J","ts":"\\u001b[2J"}]')
    line = assert_one_line_error(capsys, bad, "malformed event")
    assert "\x1b" not in line and "\\x1b[2J" in line
    gpu = tmp_path / "esc.gpudiag.json"
    w = TraceWriter(str(gpu), Metadata(producer="gpudiag", hostname="\x1b[2Jhost"), flush_every=0.0)
    for i in range(3):
        w.step(i, i * 1000.0, i * 1000.0 + 900.0, profiled=True)
    w.update_meta(limitations=["\x1b]0;pwned\x07 no GPU"])
    w.close()
    code, out, _ = analyze(capsys, str(gpu))
    assert code == 0
    assert "\x1b]0" not in out and "\x07" not in out and "pwned" in out


def test_a_newline_in_a_filename_keeps_the_error_on_one_line(tmp_path, capsys):
    p = tmp_path / "two\nlines.json"
    p.write_text("not json at all\n")
    line = assert_one_line_error(capsys, str(p), "not a trace")
    assert "two\\nlines.json" in line


def test_live_frame_escapes_host_and_notes():
    state = LiveState()
    state.hostname = "\x1b[31mhost"
    state.gpu_reason = "none"
    state.follow = "t.json"
    state.training = TrainingStatus(note="\x1b[2J note")
    console = Console(record=True, width=100, force_terminal=True)
    console.print(render(state, 100, None))
    out = console.export_text(styles=False)
    assert "\x1b[2J" not in out and "\x1b[31mhost" not in out
    assert "␛[2J note" in out


# ---- 9. any terminal encoding, any file name -----------------------------------------------


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "gpudiag", *args],
        capture_output=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "100", **env},
    )


def test_ascii_terminal_and_undecodable_file_names(tmp_path):
    """Was: UnicodeEncodeError with LANG=C / PYTHONIOENCODING=ascii, a \\xff file name, or a
    lone surrogate inside the trace."""
    named = tmp_path / "x\udcff.json.gz"  # the name b"x\xff.json.gz" as Python sees it
    named.write_bytes(Path(GOOD).read_bytes())
    sur = tmp_path / "surrogate.json"
    sur.write_text(
        KINETO_TOP + '[{"ph":"X","cat":"kernel","name":"k\\ud800","pid":0,"tid":1,'
        '"ts":0,"dur":5},{"ph":"X","name":"ProfilerStep#1","ts":0,"dur":10}]}'
    )
    for env in ({"PYTHONIOENCODING": "ascii", "LANG": "C", "LC_ALL": "C"}, {}):
        for path in (str(named), str(sur), str(tmp_path / "gone\udcff.json")):
            r = _cli("analyze", path, **env)
            assert r.returncode in (0, 2), r.stderr
            assert b"Traceback" not in r.stderr and b"UnicodeEncodeError" not in r.stderr
        r = _cli("live", "--once", "--interval", "0.1", **env)
        assert r.returncode == 0 and b"Traceback" not in r.stderr
    r = _cli("analyze", str(named), "--json", PYTHONIOENCODING="ascii")
    assert json.loads(r.stdout)["verdict"] == "sync-bound"


# ---- 10. foreign traces with the wrong shape or impossible numbers -------------------------


@pytest.mark.parametrize(
    ("events", "what"),
    [
        ('{"a": 1}', "an object"),
        ('"events"', "a string"),
        ("5", "a number"),
        ("null", "null"),
    ],
)
def test_trace_events_must_be_a_list(tmp_path, capsys, events, what):
    """Was: exit 0 with a verdict."""
    p = kineto_file(tmp_path, "te.json", events)
    assert_one_line_error(capsys, p, f"'traceEvents' is {what}")


@pytest.mark.parametrize("dur", ["Infinity", "1e999", "NaN", "-Infinity", '"inf"', '"nan"'])
def test_non_finite_durations_are_refused(tmp_path, capsys, dur):
    """Was: an infinite kernel made the run compute-bound and --json printed Infinity; NaN
    printed a numpy RuntimeWarning."""
    p = kineto_file(
        tmp_path,
        "inf.json",
        f'[{{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":1,"ts":0,"dur":{dur}}}]',
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, out, err = analyze(capsys, p, "--json")
    assert code == 2 and out == "" and len(err.splitlines()) == 1


def test_non_finite_numbers_in_a_gpudiag_trace(tmp_path, capsys):
    p = gpudiag_trace(tmp_path / "t.json", close=False)
    _append(p, ',{"ph":"X","cat":"step","name":"s","pid":1,"tid":1,"ts":5000,"dur":NaN}\n')
    _append(p, "]\n")
    assert_one_line_error(capsys, str(p), "corrupt gpudiag trace at line")


def test_json_output_is_strict_even_for_non_finite_figures():
    from gpudiag.analyze.diagnosis import strict_json

    doc = {"a": float("inf"), "b": [float("nan"), 1.5], "c": {"d": -float("inf")}}
    assert json.loads(json.dumps(strict_json(doc), allow_nan=False)) == {
        "a": None,
        "b": [None, 1.5],
        "c": {"d": None},
    }


# ---- 11. exit codes, narrow terminals, clear messages --------------------------------------


class _Interrupting:
    def poll(self):
        raise KeyboardInterrupt

    def close(self):
        pass


def test_live_ctrl_c_exits_130(capsys):
    """Was: exit 0."""
    console = Console(file=open(os.devnull, "w"), width=100)  # noqa: SIM115
    assert (
        run_live(interval=0.1, console=console, training_source=_Interrupting(), duration=5) == 130
    )
    console.file.close()


@pytest.mark.parametrize("columns", ["0", "5", "20"])
def test_narrow_terminal_still_shows_the_verdict(columns, monkeypatch, capsys):
    """Was: COLUMNS=0 printed nothing, COLUMNS=5 hid the verdict."""
    monkeypatch.setenv("COLUMNS", columns)
    code, out, _ = analyze(capsys, GOOD)
    assert code == 0 and "SYNC-BOUND" in out
    state = LiveState()
    state.gpu_reason = "none"
    state.training = TrainingStatus(verdict="data-starved", confidence=0.8)
    buf = io.StringIO()
    from gpudiag.show.live.loop import _print_frame

    _print_frame(Console(width=int(columns), file=buf), state)
    assert buf.getvalue().startswith("verdict data-starved")


def test_each_bad_input_has_its_own_message(tmp_path, capsys):
    """Inputs that used to reach exit 2 only through the catch-all, with Python's wording."""
    header = '{"name":"gpudiag.metadata","ph":"M","args":{"format":"gpudiag-trace"'
    cases = {
        "ver.json": ("[\n" + header + ',"version":"two"}}\n]\n', "malformed version"),
        "hdr.json": (
            '[\n{"name":"gpudiag.metadata","ph":"M","args":[1]}\n]\n',
            "args is a list, expected an object",
        ),
        "arr.json": ("[1, 2, 3]", "not a trace"),
        "kev.json": (KINETO_TOP + '["x"]}', "expected an object"),
        "kts.json": (
            KINETO_TOP + '[{"ph":"X","cat":"kernel","name":"k","ts":[1]}]}',
            "malformed event",
        ),
        "utf.json": (None, "invalid bytes in UTF8"),
        "trunc.json": (KINETO_TOP + '[{"ph":"X"', "truncated JSON"),
    }
    for name, (content, needle) in cases.items():
        p = tmp_path / name
        if content is None:
            p.write_bytes(KINETO_TOP.encode() + b'[{"name":"\xff\xfe"}]}')
        else:
            p.write_text(content)
        line = assert_one_line_error(capsys, str(p), needle)
        assert "internal" not in line and "Error:" not in line, line


def test_a_killed_run_says_it_was_cut_short(tmp_path):
    (tl,) = load_file(str(gpudiag_trace(tmp_path / "killed.json", close=False)))
    assert any("cut short" in lim for lim in tl.meta.limitations)
    (tl,) = load_file(str(gpudiag_trace(tmp_path / "done.json")))
    assert not any("cut short" in lim for lim in tl.meta.limitations)


# ---- 12. the test suite itself -------------------------------------------------------------


def test_pytest_timeout_is_required_and_active(pytestconfig):
    """Was: declared but not active. pytest now refuses to start without the plugin."""
    assert pytestconfig.pluginmanager.hasplugin("timeout")
    assert float(pytestconfig.getini("timeout")) > 0
    assert any("pytest-timeout" in p for p in pytestconfig.getini("required_plugins"))


def test_tests_never_read_the_shared_folder():
    """Real traces come from sample_traces/ (they ship with the repository)."""
    for path in (REPO / "tests").rglob("*.py"):
        text = path.read_text()
        assert "../" + "shared" not in text and "SHARED_" + "TRACES" not in text, path.name
