"""One self-contained HTML page of a Diagnosis: verdict, timeline, breakdowns, evidence, fixes.

    Path("report.html").write_text(render_html(diagnosis))   # gpudiag analyze ... --html
    render_html(diagnosis, fragment=True)                      # a notebook cell (show.notebook)

Everything is inline (CSS, SVG, a few lines of JavaScript for the hover read-out): the page
fetches nothing, so it can be mailed or attached to a ticket. The drawing is done here, in
SVG, so the page reads the same with JavaScript off. Every string that comes from the input
(op names, paths, device names, limitations) goes through ``style.e``: cleaned of control
characters, bidi overrides and lone surrogates, then escaped, so the page is valid UTF-8.

Modules: ``style`` (colours, CSS, script, escaping), ``charts`` (SVG), ``sections`` (where
time goes, remedies), ``evidence`` (findings and their measured evidence), ``page``.
"""

from gpudiag.show.html.page import render_html, write_html

__all__ = ["render_html", "write_html"]
