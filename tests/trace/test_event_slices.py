"""The fast reader (orjson, a slice of events at a time) against the bounded one (ijson and
the JSON guard): the same events, the same errors, the same diagnosis."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpudiag.analyze import diagnose
from gpudiag.trace.load import load_file
from gpudiag.trace.source import chrome, event_lines
from tests.helpers.paths import SAMPLES


def _bounded_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every read through ijson and the guard, as before the fast reader."""

    def not_lines(path: str) -> Any:
        raise chrome.NotLines
        yield

    def no_head(path: str) -> Any:
        raise chrome.NotLines

    monkeypatch.setattr(chrome, "event_slices", not_lines)
    monkeypatch.setattr(chrome, "read_top", no_head)


def _fast_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fall-back to ijson would fail the test."""
    monkeypatch.setattr("ijson.items", None)
    monkeypatch.setattr("ijson.parse", None)


@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.glob("*.json.gz")))
def test_fast_and_bounded_readers_give_the_same_diagnosis(monkeypatch, name):
    path = str(SAMPLES / name)
    with monkeypatch.context() as m:
        _fast_only(m)
        fast = diagnose(load_file(path)).to_dict()
    _bounded_only(monkeypatch)
    assert fast == diagnose(load_file(path)).to_dict()


def _events(path: Path) -> tuple[list[Any], str | None]:
    out: list[Any] = []
    try:
        out.extend(chrome.EventStream(str(path), "traceEvents.item"))
    except chrome.TraceError as e:
        return out, str(e)
    return out, None


def _kineto(events: list[Any], indent: int | None = 2) -> bytes:
    """Kineto's layout: run facts first, then each event indented over several lines."""
    head = '{\n  "schemaVersion": 1,\n  "deviceProperties": [{"id": 0}],\n  "traceEvents": [\n'
    body = ",\n".join(json.dumps(e, indent=indent) for e in events)
    return (head + body + '\n],\n  "traceName": "t.json"\n}\n').encode()


TRICKY = [
    {"ph": "X", "name": 'a "quoted" }, name', "ts": 1, "dur": 2, "args": {"l": [{}, {}]}},
    {"ph": "X", "name": "back\\slash\\", "ts": 3, "dur": 1, "args": {"s": '}, {\\"]'}},
    {"ph": "i", "name": "[[[{{{", "ts": 4.5},
    {"ph": "X", "name": "n", "ts": 5, "dur": 1, "args": {"d": [[[[1]]]], "e": {"f": {}}}},
] * 40


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
@pytest.mark.parametrize("indent", [None, 2])
def test_cuts_anywhere_give_the_events_ijson_gives(tmp_path, monkeypatch, chunk, indent):
    """Slices cut inside strings, objects and escapes are tried and refused: every cut that
    decodes gives ijson's events, in order, once each."""
    path = tmp_path / "t.json"
    path.write_bytes(_kineto(TRICKY, indent))
    monkeypatch.setattr(event_lines, "CHUNK", chunk)
    with monkeypatch.context() as m:
        _fast_only(m)
        fast = _events(path)
    _bounded_only(monkeypatch)
    assert fast == _events(path) == (TRICKY, None)


@pytest.mark.parametrize("depth", [63, 64, 65])
@pytest.mark.parametrize("chunk", [16, 1 << 20])
def test_nesting_is_bounded_as_the_guard_bounds_it(tmp_path, monkeypatch, depth, chunk):
    """The guard refuses JSON nested more than 64 levels, and so does the fast reader, with
    the guard's words (document, event list, event, args: 4 levels before the lists)."""
    lists = depth - 4
    deep = {"ph": "X", "ts": 1, "args": {"d": json.loads("[" * lists + "]" * lists)}}
    path = tmp_path / "t.json"
    path.write_bytes(_kineto([TRICKY[0], deep, TRICKY[1]], indent=None))
    monkeypatch.setattr(event_lines, "CHUNK", chunk)
    fast = _events(path)
    _bounded_only(monkeypatch)
    assert fast[1] == _events(path)[1]
    assert (fast[1] is None) == (depth <= 64)


def test_max_depth_skips_strings_and_escapes():
    assert event_lines.max_depth(b'{"a": "[[[\\"[[", "b": [[1]], "c": "x\\\\", "d": "]]]"}') == 3
    assert event_lines.max_depth(b'[], {"a": ["\\\\\\"]"]}') == 2
