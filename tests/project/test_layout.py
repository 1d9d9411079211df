"""The package's shape: flow record → trace → analyze → show, no import circle, small modules.

Imports are read from the source (those inside functions included), so a lazy import that
closes a circle is caught as well as a top-level one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import gpudiag

PACKAGE = Path(gpudiag.__file__).parent
ROOT = "gpudiag"  # the facade: lazy re-exports only, imported by nothing inside the package
COMMAND_LINE = "gpudiag.cli"  # the top: called by ``gpudiag.__main__``, imported by nothing


def _modules() -> dict[str, Path]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        parts = [ROOT, *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


def _imports(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """The gpudiag modules ``name`` imports, anywhere in its source."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in mods)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for a in node.names:
                full = f"{base}.{a.name}"
                if full in mods:
                    out.add(full)
                elif base in mods:
                    out.add(base)
    out.discard(name)
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {n: _imports(n, p, mods) for n, p in mods.items()}


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    assert _cycles(_graph()) == []


def test_analyze_and_record_import_nothing_from_show():
    graph = _graph()
    wrong = {
        name: sorted(d for d in deps if d.startswith("gpudiag.show"))
        for name, deps in graph.items()
        if name.startswith(("gpudiag.analyze", "gpudiag.record", "gpudiag.trace"))
    }
    assert {k: v for k, v in wrong.items() if v} == {}


def test_every_module_is_small():
    """One job per module: none over 400 lines (a module that grows past it holds two)."""
    sizes = {
        str(p.relative_to(PACKAGE)): len(p.read_text(encoding="utf-8").splitlines())
        for p in PACKAGE.rglob("*.py")
    }
    assert {k: n for k, n in sizes.items() if n > 400} == {}


def test_nothing_imports_the_command_line():
    """The library sits below ``cli/``: notebooks (``api.py``), the MCP server and the
    command line all call down into ``gpudiag.diagnose_files``."""
    graph = _graph()
    wrong = {
        name: sorted(d for d in deps if _within(d, COMMAND_LINE))
        for name, deps in graph.items()
        if not _within(name, COMMAND_LINE) and name != "gpudiag.__main__"
    }
    assert {k: v for k, v in wrong.items() if v} == {}


def test_nothing_imports_the_package_root():
    """The root re-exports the public names; a module below that imported it would import
    upward (its ``__version__`` lives in ``gpudiag.version``)."""
    assert sorted(name for name, deps in _graph().items() if ROOT in deps) == []


TRACE = "gpudiag.trace"
READERS_MAY_IMPORT = {"model", "names", "source", "errors", "quiet"}
# each part of gpudiag.trace: the other parts it may import (its own modules always)
TRACE_PARTS = {
    "model": {"errors"},  # the data model, under everything
    "names": {"model"},
    "source": {"model", "errors"},  # bytes, Chrome JSON events, bounds
    "native": READERS_MAY_IMPORT,  # one sub-package per format: never another format
    "kineto": READERS_MAY_IMPORT,
    "tf": READERS_MAY_IMPORT,
}


def _trace_part(name: str) -> str | None:
    parts = name.split(".")
    return parts[2] if _within(name, TRACE) and len(parts) > 2 else None


def test_trace_imports_nothing_from_the_layers_above():
    graph = _graph()
    wrong = {
        name: sorted(d for d in deps if not _within(d, TRACE))
        for name, deps in graph.items()
        if _within(name, TRACE)
    }
    assert {k: v for k, v in wrong.items() if v} == {}


def test_trace_formats_import_only_the_model_names_and_sources():
    """A format's reader builds on ``model/``, ``names/`` and ``source/`` only, and never on
    another format: one can be added or removed without touching the others."""
    graph = _graph()
    wrong = {}
    for name, deps in graph.items():
        part = _trace_part(name)
        if part not in TRACE_PARTS:
            continue
        allowed = TRACE_PARTS[part] | {part}
        bad = sorted(d for d in deps if _trace_part(d) not in allowed)
        if bad:
            wrong[name] = bad
    assert wrong == {}


def test_the_trace_viewer_reader_never_loads_the_xspace_side():
    """``tf/xspace/`` decodes into trace-viewer events and hands them to ``tf/viewer/``; the
    reverse would load the protobuf side for every JSON trace."""
    graph = _graph()
    wrong = {
        name: sorted(d for d in deps if _within(d, f"{TRACE}.tf.xspace"))
        for name, deps in graph.items()
        if _within(name, f"{TRACE}.tf.viewer")
    }
    assert {k: v for k, v in wrong.items() if v} == {}


def test_every_trace_part_is_placed():
    """A new module of gpudiag.trace lands in a part the rules above know (or is one of the
    few at the top: the table of formats, loading, errors, quiet)."""
    top = {"formats", "load", "errors", "quiet"}
    known = set(TRACE_PARTS) | top | {"ranks"}
    assert sorted({p for n in _modules() if (p := _trace_part(n)) and p not in known}) == []


def test_the_command_lines_verdicts_are_the_analysis_verdicts():
    """cli/parser.py keeps its own copy so that ``gpudiag --help`` imports no analysis."""
    from gpudiag.analyze.diagnosis import VERDICTS
    from gpudiag.cli.parser import VERDICTS as PARSED

    assert PARSED == VERDICTS


def test_tests_sit_in_their_part_and_helpers_in_one_package():
    """A test file lives in the folder of the part it tests (tests/<part>/test_*.py), a
    shared helper in tests/helpers/ (the rule tests keep their kit beside them)."""
    tests = PACKAGE.parent / "tests"
    for path in tests.rglob("*.py"):
        rel = path.relative_to(tests)
        if rel.name.startswith("test_"):
            assert len(rel.parts) == 2, f"{rel}: put it in the folder of the part it tests"
        elif rel.name not in ("__init__.py", "conftest.py"):
            assert rel.parts[0] == "helpers" or rel.as_posix() == "rules/kit.py", rel
