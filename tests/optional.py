"""Test dependencies from the extras (``test`` installs them all): missing in CI is a failure,
elsewhere a skip naming what to install."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest


def require(module: str, why: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError:
        reason = f"{module} is not installed ({why}; pip install -e '.[test]')"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason, allow_module_level=True)
