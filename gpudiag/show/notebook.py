"""A Diagnosis shown in a notebook: the HTML report inline, as ``gpudiag analyze --html``.

Rather than a ``_repr_html_`` on ``Diagnosis`` (which would make ``analyze/`` import
``show/``), this registers an HTML formatter for it with the running IPython shell.
``import gpudiag`` calls ``register()`` when IPython is already loaded, as it always is in a
Jupyter kernel; it never imports IPython itself, and does nothing without a shell::

    import gpudiag                     # in a notebook: registered
    cb.diagnosis                       # a cell ending with a Diagnosis shows the report

    from gpudiag.show.notebook import register
    register()                         # after starting a shell by hand (IPython.embed)
"""

from __future__ import annotations

import sys
from typing import Any

DIAGNOSIS = ("gpudiag.analyze.diagnosis", "Diagnosis")  # by name: nothing imported to register


def html_fragment(diagnosis: Any) -> str:
    """The report as an HTML fragment (no <html>/<head>) for a notebook cell."""
    from gpudiag.show.html import render_html

    return render_html(diagnosis, fragment=True)


def register(shell: Any = None) -> bool:
    """Register the formatter with ``shell`` (default: IPython's running shell, if IPython
    is loaded). Returns whether a shell took it."""
    if shell is None:
        ipython = sys.modules.get("IPython")
        get_ipython = getattr(ipython, "get_ipython", None)
        shell = get_ipython() if get_ipython is not None else None
    if shell is None:
        return False
    try:
        formatter = shell.display_formatter.formatters["text/html"]
        formatter.for_type_by_name(*DIAGNOSIS, html_fragment)
    except (AttributeError, KeyError, TypeError):  # a shell of another make: plain repr
        return False
    return True
