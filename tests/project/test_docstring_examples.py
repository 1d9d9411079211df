"""The module docstrings' examples stay true.

Two checks over every module of the package:

- an example written as a doctest (``>>>``) runs, from the repository root (examples read
  ``sample_traces/``), and prints what it says;
- an example written as a plain indented block (a sketch with placeholders such as
  ``model`` or ``timelines``) still names only what exists: each function it calls is
  defined in its module, bound in the example, a builtin, or defined at the top of some
  gpudiag module; each method it calls on an object it builds from a gpudiag class is one
  that class has. Read from the source, so no example needs TensorFlow or a GPU.
"""

from __future__ import annotations

import ast
import builtins
import doctest
import importlib
import textwrap
from pathlib import Path

import pytest

import gpudiag

PACKAGE = Path(gpudiag.__file__).parent
ROOT = PACKAGE.parent

# Placeholders in the trace readers' sketches, left as they are until the readers' modules are
# regrouped by format (their examples are rewritten then): (module, name) -> what it stands for
KNOWN_PLACEHOLDERS = {
    ("gpudiag.trace.source.decoded", "utf8"): "a text decoder",
    ("gpudiag.trace.quiet", "noisy_native_call"): "any native call",
    ("gpudiag.trace.model.steps_infer", "read_something"): "a reader",
    ("gpudiag.trace.tf.xspace.counts", "refuse"): "the caller's refusal",
}


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def _top_level(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _class_members(cls: ast.ClassDef) -> set[str]:
    """Methods, class-level names and every ``self.x`` assigned in the class."""
    names = set(_top_level(ast.Module(body=cls.body, type_ignores=[])))
    for node in ast.walk(cls):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            names.add(node.attr)
    return names


OWN = {name: _top_level(tree) for name, tree in TREES.items()}
ANYWHERE = set().union(*OWN.values())
CLASSES = {
    node.name: _class_members(node)
    for tree in TREES.values()
    for node in ast.walk(tree)
    if isinstance(node, ast.ClassDef)
}


def _sketches(doc: str) -> list[str]:
    """The indented blocks of a module docstring that parse as Python and are not doctests."""
    blocks, cur = [], []
    for line in [*doc.splitlines(), "end"]:
        if line.startswith("    ") or (cur and not line.strip()):
            cur.append(line)
            continue
        if cur:
            blocks.append(textwrap.dedent("\n".join(cur)).strip())
        cur = []
    out = []
    for block in blocks:
        if not block or block.startswith(">>>"):
            continue
        try:
            ast.parse(block)
        except SyntaxError:  # a table or a signature, not code
            continue
        out.append(block)
    return out


def _bound(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def unknown_names(module: str) -> list[str]:
    """What the module's sketches call that does not exist."""
    doc = ast.get_docstring(TREES[module], clean=False) or ""
    missing = []
    for block in _sketches(doc):
        tree = ast.parse(block)
        known = _bound(tree) | OWN[module] | ANYWHERE | set(dir(builtins))
        built: dict[str, str] = {}  # variable -> the gpudiag class it was built from
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and node.value.func.id in CLASSES
            ):
                built[node.targets[0].id] = node.value.func.id
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            if isinstance(f, ast.Name) and f.id not in known:
                missing.append(f.id)
            elif isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                cls = built.get(f.value.id)
                if cls is not None and f.attr not in CLASSES[cls]:
                    missing.append(f"{cls}.{f.attr}")
    return missing


def test_sketches_call_only_what_exists():
    found = {(m, n) for m in MODULES for n in unknown_names(m)}
    assert found - set(KNOWN_PLACEHOLDERS) == set()
    assert set(KNOWN_PLACEHOLDERS) - found == set(), "fixed: drop them from KNOWN_PLACEHOLDERS"


def test_the_check_finds_a_name_that_does_not_exist():
    TREES["gpudiag.fake"] = ast.parse('"""x\n\n    d = diagnose(load_everything(paths))\n"""')
    OWN["gpudiag.fake"] = set()
    try:
        assert unknown_names("gpudiag.fake") == ["load_everything"]
    finally:
        del TREES["gpudiag.fake"], OWN["gpudiag.fake"]


WITH_DOCTESTS = [m for m, p in MODULES.items() if ">>>" in p.read_text(encoding="utf-8")]


def test_some_examples_run_as_doctests():
    assert {"gpudiag.analyze", "gpudiag.analyze.lints"} <= set(WITH_DOCTESTS)


@pytest.mark.parametrize("module", WITH_DOCTESTS)
def test_doctests_run(module, monkeypatch):
    monkeypatch.chdir(ROOT)
    mod = importlib.import_module(module)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(mod, optionflags=flags, verbose=False, report=True)
    assert result.attempted > 0
    assert result.failed == 0
