"""Render an executed notebook as one standalone HTML page that draws its charts with no network.

Offline: the HTML inlines the Vega libraries
----------------------------------------------
A report must show its charts with no network. Two ways were open: inline the Vega, Vega-Lite and
vega-embed JavaScript, or embed static SVG/PNG drawn by vl-convert. The report inlines the JavaScript,
once per page (about 0.9 MB, from ``vl_convert.javascript_bundle()``, so no CDN and no download), and
draws every chart with vega-embed from its Vega-Lite spec, because:

- the tooltips stay: a reader hovers a dot and sees the run, the repeat and the value, which a static
  image cannot do, and the charts are built around them;
- one copy of the libraries serves any number of charts, so a report with six charts is about as large
  as one with one; the specs themselves are small;
- vega-embed's own menu still exports any chart as SVG or PNG.

The executed notebook itself carries each chart twice: the Vega-Lite 5 spec, which JupyterLab, Notebook 7
and VS Code draw interactively with their own renderer (this page draws it with the Vega-Lite 6 it inlines:
benchlab's specs are valid in both), and
a static SVG from vl-convert for viewers that run no script (GitHub's, nbconvert to PDF). The renderer that
does this is :func:`benchlab.present.notebook.enable_charts`, which every benchlab notebook's set-up calls;
docs/notebooks.md says why version 5.
What runs inside the kernel is :mod:`benchlab.present.notebook`; this module runs outside it.
"""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path

#: The Vega-Lite of the page's own Vega (vl-convert's newest, 6): a spec's $schema names it.
REPORT_SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"

# --- the page -----------------------------------------------------------------------------------------------

_EMBED = """<div class="benchlab-chart" id="{id}"></div>
<script type="text/javascript">
(function () {{
  var spec = {spec};
  var target = document.getElementById("{id}");
  window.vegaEmbed(target, spec, {{renderer: "svg", actions: {{export: true, source: false, compiled: false,
    editor: false}}}}).then(function () {{ target.setAttribute("data-rendered", "yes"); }})
    .catch(function (error) {{ target.setAttribute("data-error", String(error));
      target.textContent = "chart failed to draw: " + error; console.error(error); }});
}})();
</script>"""


#: nbconvert's lab template without anything it would fetch: require.js, MathJax, mermaid, the widget manager.
#: The code is hidden by default behind a "Show code" toggle: a checkbox and CSS, no script, so it works
#: offline and in a browser with scripts off; the cells are siblings of the checkbox inside <main>.
_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}
{%- if resources.benchlab_vega -%}
<script type="text/javascript">/* Vega, Vega-Lite and vega-embed, inlined by benchlab: no network needed */
{{ resources.benchlab_vega }}
</script>
{%- endif -%}
{%- endblock html_head_js -%}
{%- block extra_css -%}
<style type="text/css">/* benchlab: the code is hidden until the reader asks for it */
.benchlab-show-code { position: absolute; opacity: 0; pointer-events: none; }
.benchlab-code-toggle { position: fixed; top: 8px; right: 16px; z-index: 100; padding: 4px 12px; cursor: pointer;
  border: 1px solid #888; border-radius: 4px; background: #f4f4f4; font: 13px sans-serif; }
.benchlab-code-toggle::after { content: "Show code"; }
.benchlab-show-code:checked + .benchlab-code-toggle::after { content: "Hide code"; }
.benchlab-show-code:not(:checked) ~ .jp-CodeCell .jp-Cell-inputWrapper,
.benchlab-show-code:not(:checked) ~ .jp-CodeCell.jp-mod-noOutputs { display: none; }
.benchlab-show-code:not(:checked) ~ .jp-Cell .jp-OutputPrompt { visibility: hidden; }
/* tables of text read left to right and wrap inside the page, as a reader expects */
/* (important: JupyterLab's own rule, later and more specific, right-aligns every cell) */
.jp-RenderedHTMLCommon td, .jp-RenderedHTMLCommon th, .jp-RenderedHTMLCommon tr { text-align: left !important;
  vertical-align: top !important; max-width: 36em !important; overflow-wrap: break-word; }
.jp-RenderedHTMLCommon table { table-layout: auto; max-width: 100%; }
/* printed lines (the verdicts) wrap at spaces: JupyterLab breaks them anywhere ("other proc / esses") */
.jp-OutputArea-output pre { word-break: normal !important; overflow-wrap: anywhere; }
</style>
{%- endblock extra_css -%}
{%- block body_header -%}
{{ super() }}
<input type="checkbox" id="benchlab-show-code" class="benchlab-show-code">
<label for="benchlab-show-code" class="benchlab-code-toggle" title="show or hide the code of every cell"></label>
{%- endblock body_header -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""

_WIDGET_NOTE = ('<p class="benchlab-widget"><em>An interactive panel: it works while a kernel runs. Open the '
                'notebook in JupyterLab to use it. The charts under it are those of the runs it showed.</em></p>')


#: What JSON inside a <script> must not hold as itself: "<" could open "<!--" or "</script" (the HTML parser
#: reads a script's text before JavaScript does), ">" and "&" for good measure, and the two line separators
#: that JavaScript before ES2019 ends a string at.
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(value) -> str:
    r"""``value`` as JSON that can stand inside an HTML ``<script>`` as it is: the same value to JavaScript,
    no markup to the HTML parser.

    >>> print(script_json({"server": "x<!--<script>"}))
    {"server": "x\u003c!--\u003cscript\u003e"}
    """
    text = json.dumps(value)
    for char, escaped in _SCRIPT_ESCAPES.items():
        text = text.replace(char, escaped)
    return text


def _inline_charts(nb) -> int:
    """Replace each chart output by a vega-embed call, and each live widget by a note; count the charts."""
    count = 0
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in data:
                output["data"] = {"text/html": _WIDGET_NOTE}
                continue
            spec = next((value for key, value in data.items() if key.startswith("application/vnd.vegalite")), None)
            if spec is None:
                continue
            count += 1
            spec = spec if isinstance(spec, dict) else json.loads(spec)
            # drawn by the Vega-Lite 6 this page inlines: benchlab's specs are valid in 5 and 6 (Altair writes 6),
            # and vega-embed warns of a spec whose $schema names another major version than its own
            spec = {**spec, "$schema": REPORT_SCHEMA}
            output["data"] = {"text/html": _EMBED.format(id=f"benchlab-chart-{count}", spec=script_json(spec))}
    return count


@functools.lru_cache(maxsize=1)
def _vega_bundle() -> str:
    """The Vega libraries as one script, as vl-convert makes it: 3.4 s here, so it is kept in
    :func:`benchlab.home.cache_dir` under vl-convert's version, and a page, a batch or the next process reads it."""
    import vl_convert

    from ..home import cache_dir
    from ..store.files import write_atomic

    kept = cache_dir() / f"vega-{vl_convert.__version__}.js"  # type: ignore[attr-defined]
    try:
        return kept.read_text()
    except (OSError, UnicodeDecodeError):
        pass
    # vl-convert's stub makes snippet required; it is optional, and without it the bundle sets window.vegaEmbed
    bundle = vl_convert.javascript_bundle()  # type: ignore[call-arg]
    try:
        write_atomic(kept, bundle)
    except OSError:
        pass  # a cache that cannot be written costs only time
    return bundle


def script_text(source: str) -> str:
    """JavaScript as it can stand inside a <script>: nothing in it closes the tag (``</script`` becomes
    ``<\\/script``, the same string to JavaScript)."""
    return re.sub(r"</(script)", r"<\\/\1", source, flags=re.IGNORECASE)


def to_html(ipynb: str | os.PathLike, page: str | os.PathLike | None = None) -> Path:
    """Render an executed notebook as one standalone HTML file that shows its charts without a network.

    The Vega libraries are inlined once in the page's head (see the module docstring for why).

    Example
    -------
    >>> to_html("data/reports/compare-20261130T0501.ipynb")   # doctest: +SKIP
    PosixPath('data/reports/compare-20261130T0501.html')
    """
    import jinja2
    import nbformat
    from nbconvert import HTMLExporter

    ipynb = Path(ipynb)
    page = Path(page) if page else ipynb.with_suffix(".html")
    nb = nbformat.read(str(ipynb), as_version=4)
    charts = _inline_charts(nb)
    bundle = script_text(_vega_bundle()) if charts else ""
    exporter = HTMLExporter(template_name="lab", extra_loaders=[jinja2.DictLoader({"benchlab.html.j2": _TEMPLATE})],
                            template_file="benchlab.html.j2")
    body, _ = exporter.from_notebook_node(nb, resources={"benchlab_vega": bundle, "metadata": {"name": ipynb.stem}})
    from ..store.results import write_atomic

    write_atomic(page, body)  # with the umask's mode, as any file the user makes
    return page
