"""Regexes over event names, at a bounded cost per name whatever the trace holds.

Python's ``re`` scans a name at 20-160 ms per MiB per pattern (alternations and
case-insensitive patterns cannot use its fast literal search); the tables of
``comm.py`` and ``facts.py`` ran some 30 of them, about 1.3 s per MiB of distinct name, so
a 25 KB gzip of long distinct kernel names took 9.3 s. Two bounds keep it linear and cheap:

- only the first ``SCAN_CHARS`` characters of a name are read (real kernel names, templated
  C++ included, are under 2 KiB: 1,956 characters at most in ``sample_traces/``);
- each pattern carries the literals one of which any match contains (``needles``, lower
  case): the pattern runs only where one occurs in the lower-cased name, and ``in`` scans
  at under 1 ms per MiB.

    low = lowered(name)                       # the scanned part, lower case, once per name
    if SOME.search(scanned(name), low): ...   # SOME = Scan(re.compile(...), ("lit", ...))
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

SCAN_CHARS = 4096  # characters of a name that classification reads: 2x the longest seen


def scanned(name: str) -> str:
    """The part of a name classification reads."""
    return name[:SCAN_CHARS]


def lowered(name: str) -> str:
    """The part of a name classification reads, lower-cased (for the needles)."""
    return name[:SCAN_CHARS].lower()


@dataclass(frozen=True)
class Scan:
    """A pattern and the lower-case literals one of which every match contains (an empty
    tuple: the pattern is anchored or cheap, always run it)."""

    pattern: re.Pattern[str]
    needles: tuple[str, ...] = ()

    def search(self, name: str, low: str) -> re.Match[str] | None:
        """``pattern.search(name)`` where a needle occurs in ``low``, else None. ``name``
        and ``low`` as ``scanned`` and ``lowered`` give them."""
        if not self.needles:
            return self.pattern.search(name)
        for needle in self.needles:  # a plain loop: twice as fast as any() over a generator
            if needle in low:
                return self.pattern.search(name)
        return None


CACHE_CHARS = 16 << 20  # characters of names one cache holds (real traces: well under 1 Mi)


class NameCache(dict[str, Any]):
    """Answers per name, keyed by the part classification reads, holding at most
    ``CACHE_CHARS`` characters of names and ``max_names`` names: names repeat by the
    thousand in a real trace, and a hostile one of distinct long names must not be kept."""

    def __init__(self, max_names: int = 100_000) -> None:
        super().__init__()
        self.max_names = max_names
        self.chars = 0

    def put(self, key: str, value: Any) -> None:
        """Keep ``value`` for ``key`` (a ``scanned`` name) while the bounds allow."""
        if len(self) < self.max_names and self.chars + len(key) <= CACHE_CHARS:
            self[key] = value
            self.chars += len(key)
