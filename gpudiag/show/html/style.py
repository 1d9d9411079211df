"""The report's look: colours per category, verdict and severity, its CSS and hover script,
and ``e``, the one function every string from the input goes through (``safe.html_text``:
no control character, bidi override or lone surrogate reaches the page, markup escaped).

    f'<span style="background:{COLOURS["input"]}">{e(device_name)}</span>'
"""

from __future__ import annotations

from typing import Any

from gpudiag.show.safe import html_text

COLOURS = {
    "input": "#d62728",
    "transfer": "#9467bd",
    "compute": "#2ca02c",
    "sync": "#e6b000",
    "other": "#b0b0b0",
}
VERDICT_COLOURS = {
    "data-starved": "#d62728",
    "sync-bound": "#c89200",
    "compute-bound": "#2ca02c",
    "inconclusive": "#777777",
}
SEVERITY_COLOURS = {"high": "#d62728", "moderate": "#c89200", "info": "#1f77b4"}

CSS = """
.gpudiag-report{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
 color:#1d1d1f;max-width:1100px;margin:0 auto;padding:12px 16px}
.gpudiag-report h1{font-size:20px;margin:4px 0 8px}
.gpudiag-report h2{font-size:16px;margin:22px 0 8px;border-bottom:1px solid #ddd;
 padding-bottom:3px}
.gpudiag-report .verdict{display:inline-block;color:#fff;font-weight:700;padding:4px 12px;
 border-radius:4px;font-size:18px;letter-spacing:.5px}
.gpudiag-report .reason{font-size:16px;margin:8px 0}
.gpudiag-report .muted{color:#666;font-size:12.5px}
.gpudiag-report table{border-collapse:collapse;margin:4px 0}
.gpudiag-report th,.gpudiag-report td{padding:3px 10px 3px 0;text-align:left;
 vertical-align:top}
.gpudiag-report th{font-weight:600;border-bottom:1px solid #ccc}
.gpudiag-report td.num,.gpudiag-report th.num{text-align:right}
.gpudiag-report .legend span{margin-right:14px;white-space:nowrap}
.gpudiag-report .sw{display:inline-block;width:11px;height:11px;margin-right:4px;
 vertical-align:-1px;border-radius:2px}
.gpudiag-report .sev{font-weight:700;text-transform:uppercase;font-size:12px}
.gpudiag-report .gain{font-weight:700;color:#2ca02c;font-size:16px;white-space:nowrap}
.gpudiag-report td table td:first-child{white-space:nowrap}
.gpudiag-report code{background:#f3f3f3;padding:0 3px;border-radius:3px}
.gpudiag-report .readout{font:12px ui-monospace,monospace;color:#333;min-height:1.4em}
.gpudiag-report svg text{font:11px system-ui,sans-serif;fill:#333}
"""

# Hover read-out over the timeline: which bin, its time and what each row did there.
SCRIPT = """
(function(){
 var root=document.currentScript&&document.currentScript.parentNode;
 if(!root){return;}
 root.querySelectorAll('svg.strip').forEach(function(svg){
  var out=svg.parentNode.querySelector('.readout');
  svg.addEventListener('mousemove',function(ev){
   var r=svg.getBoundingClientRect(), x0=+svg.dataset.x0, w=+svg.dataset.w;
   var f=(ev.clientX-r.left)*(svg.viewBox.baseVal.width/r.width)-x0;
   if(f<0||f>w){out.textContent='';return;}
   var ms=f/w*(+svg.dataset.ms), bin=Math.floor(f/w*(+svg.dataset.bins));
   var parts=[];
   svg.querySelectorAll('g[data-row]').forEach(function(g){
    var c=g.querySelector('[data-bin="'+bin+'"]');
    parts.push(g.dataset.row+': '+(c?c.dataset.v:'idle'));
   });
   out.textContent='t = '+ms.toFixed(1)+' ms   '+parts.join('   ');
  });
  svg.addEventListener('mouseleave',function(){out.textContent='';});
 });
 root.dataset.rendered='ok';
})();
"""


def e(value: Any) -> str:
    """Anything as safe HTML text or attribute value (see ``gpudiag.show.safe``)."""
    return html_text(value)


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def swatch(cat: str) -> str:
    return f'<span class="sw" style="background:{COLOURS[cat]}"></span>'
