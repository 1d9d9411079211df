"""Test dependencies from the extras (``test`` installs them all) and the machine (Chromium):
missing in CI is a failure, elsewhere a skip naming what to install."""

from __future__ import annotations

import importlib
import importlib.util
import os
from types import ModuleType
from typing import NoReturn

import pytest


def missing(reason: str) -> NoReturn:
    """Fail under CI (``CI=true``), where everything is installed; skip elsewhere."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def require(module: str, why: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError:
        missing(f"{module} is not installed ({why}; pip install -e '.[test]')")


def require_backend(backend: str) -> None:
    """A Keras backend's framework (tensorflow, jax, torch), looked up without importing it:
    the scenarios import it in their own process."""
    if importlib.util.find_spec(backend) is None:
        missing(f"{backend} is not installed (pip install -e '.[backends]')")
