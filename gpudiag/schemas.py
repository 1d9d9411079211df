"""The JSON Schemas of ``--json``, shipped in the package (gpudiag/data/*.schema.json).

    from gpudiag.schemas import schema
    jsonschema.validate(diagnosis.to_dict(), schema("diagnosis"))   # or "comparison"

Their number is the ``schema`` field of a Diagnosis (``SCHEMA_VERSION``): within one number
fields are only added (every object admits more properties), never renamed or removed.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

NAMES = ("diagnosis", "comparison")


def schema_text(name: str) -> str:
    """The schema ``name`` (one of ``NAMES``) as published, JSON text."""
    if name not in NAMES:
        raise ValueError(f"unknown schema {name!r}; choose from {', '.join(NAMES)}")
    return (resources.files("gpudiag") / "data" / f"{name}.schema.json").read_text("utf-8")


def schema(name: str) -> dict[str, Any]:
    """The schema ``name`` as a dict."""
    loaded: dict[str, Any] = json.loads(schema_text(name))
    return loaded
