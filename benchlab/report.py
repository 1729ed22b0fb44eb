"""Reports: execute a notebook with parameters (papermill), keep the executed .ipynb, render a standalone HTML.

``benchlab report NOTEBOOK -p key value ... -o OUT`` and ``benchlab batch plan.yaml`` are thin wrappers
around :func:`execute` and :func:`batch`. A notebook that fails is still written, with papermill's error
banner, and rendered to HTML; the error then names the failing cell.

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

The executed notebook itself carries each chart twice: the Vega-Lite spec (which the HTML renderer and
any Vega-aware front end use) and a static SVG from vl-convert, so the .ipynb also shows its charts
offline in JupyterLab, VS Code or a notebook viewer, without the Vega JavaScript. The renderer that
does this is enabled by :func:`enable_charts`, which every benchlab notebook calls first.

Example
-------
>>> from benchlab import report
>>> done = report.execute("notebooks/compare.ipynb", {"duration": "5s", "repeats": 2})  # doctest: +SKIP
>>> done.html                                                                           # doctest: +SKIP
PosixPath('data/reports/compare-20261130T0501.html')
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from . import home
from .errors import BenchlabError, ResultsError, UsageError

__all__ = [
    "Report",
    "NotebookFailed",
    "ParameterError",
    "execute",
    "batch",
    "read_plan",
    "to_html",
    "parameters",
    "require_results",
    "enable_charts",
    "VEGALITE_MIMETYPE",
]

#: The mimetype under which the executed notebook keeps each chart's Vega-Lite spec.
VEGALITE_MIMETYPE = "application/vnd.vegalite.v6+json"


class ParameterError(UsageError):
    """A notebook parameter is unknown or of the wrong type; the message names the valid ones."""


class NotebookFailed(BenchlabError):
    """A notebook raised while it ran; the message names the cell, and the executed notebook is kept."""


@dataclass(frozen=True)
class Report:
    """One executed notebook: where it came from, with what, and the two files it left."""

    notebook: Path
    parameters: Mapping[str, Any]
    ipynb: Path
    html: Path
    seconds: float


# --- inside a notebook: the renderer and the parameter check ------------------------------------------

def _chart_bundle(spec: dict, **options) -> tuple[dict, dict]:
    import vl_convert

    bundle: dict[str, Any] = {VEGALITE_MIMETYPE: spec}
    try:
        bundle["image/svg+xml"] = vl_convert.vegalite_to_svg(spec)
    except Exception as exc:  # noqa: BLE001 - a chart vl-convert cannot draw still has its spec
        bundle["text/plain"] = f"(no static image: {exc})"
    title = spec.get("title", {})
    bundle.setdefault("text/plain", f"<chart: {title.get('text') if isinstance(title, dict) else title}>")
    return bundle, {}


def enable_charts() -> None:
    """Show Altair charts as spec + static SVG: offline in JupyterLab, ready for :func:`to_html`.

    Example
    -------
    >>> from benchlab import report
    >>> report.enable_charts()
    >>> import altair as alt; alt.renderers.active
    'benchlab'
    """
    import altair as alt

    if "benchlab" not in alt.renderers.names():
        alt.renderers.register("benchlab", _chart_bundle)
    alt.renderers.enable("benchlab")


def _fail(error: BenchlabError) -> BenchlabError:
    """Print the message first, so it is the notebook's first output above the traceback."""
    print(f"benchlab: error: {error}", file=sys.stderr)
    return error


_IGNORED = {"In", "Out", "get_ipython", "exit", "quit", "open"}


def _kind(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def _assigned(source: str) -> set[str]:
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {target.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)}


def _parameter_names(namespace: Mapping[str, Any]) -> set[str]:
    """The names the parameters cells set: papermill's injected cell and the notebook's own, latest runs."""
    import types

    history = namespace.get("In")
    if isinstance(history, list):
        injected = [s for s in history if isinstance(s, str) and s.startswith("# Parameters\n")]
        own = [s for s in history if isinstance(s, str) and s.startswith("# Parameters")
               and not s.startswith("# Parameters\n")]
        return set().union(*(_assigned(cells[-1]) for cells in (injected, own) if cells))
    return {name for name, value in namespace.items()
            if not name.startswith("_") and name not in _IGNORED
            and not isinstance(value, (types.ModuleType, types.FunctionType, type))}


def _scalar(text: str) -> Any:
    """'64' -> 64, '1.5' -> 1.5, anything else stays a stripped string."""
    text = text.strip()
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parameters(namespace: Mapping[str, Any], schema: Mapping[str, tuple[type, ...] | type]) -> dict:
    """Check a notebook's parameters against ``schema`` and return them as a dict.

    Call it in the cell after the ``parameters`` cell with ``globals()``. A name that papermill injected
    (or that the parameters cell, whose first line is ``# Parameters``, sets) and ``schema`` lacks is an
    unknown parameter, most often a typo; outside IPython every public variable counts. Every value must
    be one of the schema's types. A list parameter given as a string, as on the command
    line (``-p servers spring-tomcat,spring-jetty``), is split at the commas.

    Raises
    ------
    ParameterError
        printed first, so it is the notebook's first output, then raised, so papermill stops there.

    Example
    -------
    >>> parameters({"repeats": 3, "servers": "a,b"}, {"repeats": int, "servers": (list,)})
    {'repeats': 3, 'servers': ['a', 'b']}
    >>> parameters({"repeat": 3}, {"repeats": int})
    Traceback (most recent call last):
    benchlab.report.ParameterError: unknown parameter 'repeat': this notebook takes repeats
    """
    given = _parameter_names(namespace)
    unknown = sorted(name for name in given if name not in schema)
    accepted = ", ".join(schema)
    if unknown:
        raise _fail(ParameterError(
            f"unknown parameter{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}: "
            f"this notebook takes {accepted}"))
    checked: dict[str, Any] = {}
    for name, kinds in schema.items():
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        if name not in namespace:
            raise _fail(ParameterError(f"parameter {name!r} is missing: keep the notebook's parameters cell"))
        value = namespace[name]
        if isinstance(value, str) and list in kinds and str not in kinds:
            value = [_scalar(part) for part in value.split(",") if part.strip()]
        if type(value) is int and float in kinds and int not in kinds:
            value = float(value)
        fits = (value is None and type(None) in kinds) or (
            value is not None and isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds))
        if not fits:
            wanted = " or ".join("None" if k is type(None) else k.__name__ for k in kinds)
            raise _fail(ParameterError(f"parameter {name!r} must be {wanted}, not {_kind(value)} {value!r}"))
        checked[name] = value
    return checked


def require_results(results_dir: str | os.PathLike | None) -> list:
    """The stored runs under ``results_dir``, for a notebook re-rendered with ``run=False``.

    Raises :class:`~benchlab.errors.ResultsError` (printed first) when the directory is not given,
    does not exist or holds no run.
    """
    from .results import load_runs

    if not results_dir:
        raise _fail(ResultsError("run=False re-renders stored results: set results_dir to a directory of runs, "
                                 "e.g. -p results_dir data/results/compare-..."))
    try:
        return load_runs(results_dir)
    except ResultsError as exc:
        raise _fail(exc) from None


# --- executing a notebook -------------------------------------------------------------------------------

def _stamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")


def _outputs(notebook: Path, output: str | os.PathLike | None) -> Path:
    """Where the executed notebook goes: OUT.ipynb as given, inside OUT if it is a folder, else data/reports/."""
    name = f"{notebook.stem}-{_stamp()}.ipynb"
    if output is None:
        return home.reports_dir() / name
    out = Path(output)
    if out.suffix == ".ipynb":
        return out
    if out.suffix == ".html":
        return out.with_suffix(".ipynb")
    return out / name


def _failing_cell(nb, exc) -> str:
    """'cell 6 [In 5] ("if run:")': the first cell with an error output, its execution count and first line."""
    for index, cell in enumerate(nb.cells):
        if any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            first = next((line.strip() for line in cell.source.splitlines() if line.strip()), "")
            count = f" [In {cell.execution_count}]" if cell.get("execution_count") else ""
            return f"cell {index}{count} ({first[:60]!r})"
    count = getattr(exc, "exec_count", None)
    return f"the cell [In {count}]" if count else "a cell"


def _error_line(exc) -> str:
    ename, evalue = getattr(exc, "ename", type(exc).__name__), getattr(exc, "evalue", str(exc))
    first = str(evalue).splitlines()[0] if evalue else ""
    return f"{ename}: {first[:300] + ' ...' if len(first) > 300 else first}".strip()


def execute(notebook: str | os.PathLike, parameters: Mapping[str, Any] | None = None, *,
            output: str | os.PathLike | None = None, kernel: str = "python3", timeout: float | None = None,
            log_output: bool = False) -> Report:
    """Execute ``notebook`` with ``parameters``; write the executed .ipynb and a standalone .html beside it.

    Parameters
    ----------
    notebook : a notebook with a cell tagged ``parameters``, e.g. notebooks/compare.ipynb
    parameters : injected after the parameters cell (papermill)
    output : the executed notebook's path (``.ipynb``) or a folder; by default
        ``data/reports/<name>-<UTC time>.ipynb``
    kernel : the Jupyter kernel; it imports the same benchlab as the caller
    timeout : seconds any one cell may take (None: no limit, as a compare may run for hours)

    Raises
    ------
    NotebookFailed
        the notebook raised: the message names the cell and the error. Both files are still written.

    Example
    -------
    >>> execute("notebooks/compare.ipynb", {"run": False, "results_dir": "data/results/x"})  # doctest: +SKIP
    """
    import time

    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    source = Path(notebook)
    if not source.is_file():
        raise UsageError(f"no notebook at {source}: give the path of an .ipynb, e.g. notebooks/compare.ipynb")
    ipynb = _outputs(source, output)
    ipynb.parent.mkdir(parents=True, exist_ok=True)
    params = dict(parameters or {})
    started = time.monotonic()
    # The kernel must import this benchlab, installed or not: put its folder first on the kernel's path.
    package_root = str(Path(__file__).resolve().parent.parent)
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, saved) if p)
    failure = None
    try:
        papermill.execute_notebook(str(source), str(ipynb), parameters=params, kernel_name=kernel,
                                   progress_bar=False, log_output=log_output, execution_timeout=timeout,
                                   request_save_on_cell_execute=True)
    except PapermillExecutionError as exc:
        failure = exc
    except Exception as exc:  # noqa: BLE001 - a kernel that died or timed out: still name it and keep the file
        failure = exc
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    page = ipynb.with_suffix(".html")
    if ipynb.exists():
        to_html(ipynb, page)
    if failure is not None:
        where = _failing_cell(nbformat.read(str(ipynb), as_version=4), failure) if ipynb.exists() else "start-up"
        raise NotebookFailed(
            f"{source.name} failed in {where}: {_error_line(failure)}; "
            f"the executed notebook is {ipynb}" + (f" and {page}" if page.exists() else ""))
    return Report(notebook=source, parameters=params, ipynb=ipynb, html=page, seconds=time.monotonic() - started)


# --- HTML -----------------------------------------------------------------------------------------------

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
_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}
{%- if resources.benchlab_vega -%}
<script type="text/javascript">/* Vega, Vega-Lite and vega-embed, inlined by benchlab: no network needed */
{{ resources.benchlab_vega }}
</script>
{%- endif -%}
{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
"""

_WIDGET_NOTE = ('<p class="benchlab-widget"><em>An interactive panel: it works while a kernel runs. Open the '
                'notebook in JupyterLab to use it. The charts under it are those of the runs it showed.</em></p>')


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
            text = json.dumps(spec if isinstance(spec, dict) else json.loads(spec))
            output["data"] = {"text/html": _EMBED.format(id=f"benchlab-chart-{count}",
                                                         spec=text.replace("</", "<\\/"))}
    return count


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
    import vl_convert
    from nbconvert import HTMLExporter

    ipynb = Path(ipynb)
    page = Path(page) if page else ipynb.with_suffix(".html")
    nb = nbformat.read(str(ipynb), as_version=4)
    charts = _inline_charts(nb)
    bundle = vl_convert.javascript_bundle().replace("</script", "<\\/script") if charts else ""
    exporter = HTMLExporter(template_name="lab", extra_loaders=[jinja2.DictLoader({"benchlab.html.j2": _TEMPLATE})],
                            template_file="benchlab.html.j2")
    body, _ = exporter.from_notebook_node(nb, resources={"benchlab_vega": bundle, "metadata": {"name": ipynb.stem}})
    from .results import write_atomic

    write_atomic(page, body)
    page.chmod(0o644)  # a report is for sharing; write_atomic's temporary file was private
    return page


# --- batch ---------------------------------------------------------------------------------------------

def read_plan(path: str | os.PathLike) -> list[dict]:
    """The entries of a batch plan: a YAML list of {notebook, parameters, output} in the order to run.

    The file is either a list of entries, or a mapping with ``defaults`` (parameters every entry gets)
    and ``reports`` (the list). See data/batch-example.yaml.

    Example
    -------
    >>> read_plan("data/batch-example.yaml")[0]["notebook"]   # doctest: +SKIP
    'notebooks/compare.ipynb'
    """
    import yaml

    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise UsageError(f"cannot read the batch plan {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"{path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    defaults: dict = {}
    entries = doc
    if isinstance(doc, dict):
        defaults = doc.get("defaults", {}) or {}
        entries = doc.get("reports")
    if not isinstance(entries, list) or not entries:
        raise UsageError(f"{path}: expected a list of reports (notebook, parameters, output); "
                         "see data/batch-example.yaml")
    plan = []
    for number, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or "notebook" not in entry:
            raise UsageError(f"{path}: report {number} needs a 'notebook' (and optionally parameters, output)")
        extra = set(entry) - {"notebook", "parameters", "output"}
        if extra:
            raise UsageError(f"{path}: report {number} has unknown keys {', '.join(sorted(extra))}: "
                             "use notebook, parameters, output")
        notebook = Path(entry["notebook"])
        if not notebook.is_absolute():
            notebook = next((base / notebook for base in (path.parent, Path.cwd(), home.project_root())
                             if (base / notebook).exists()), notebook)
        plan.append({"notebook": str(notebook),
                     "parameters": {**defaults, **(entry.get("parameters") or {})},
                     "output": entry.get("output")})
    return plan


def batch(plan: str | os.PathLike | Iterable[Mapping], *, keep_going: bool = True,
          echo=print) -> list[Report | NotebookFailed]:
    """Execute every report of a batch plan in order; a failed one is reported and the rest go on.

    Returns one entry per report: its :class:`Report`, or the :class:`NotebookFailed` it raised.

    Example
    -------
    >>> done = batch("data/batch-example.yaml")     # doctest: +SKIP
    """
    entries = read_plan(plan) if isinstance(plan, (str, os.PathLike)) else [dict(e) for e in plan]
    outcomes: list[Report | NotebookFailed] = []
    for number, entry in enumerate(entries, 1):
        echo(f"[{number}/{len(entries)}] {entry['notebook']} {_format_parameters(entry.get('parameters') or {})}")
        try:
            done = execute(entry["notebook"], entry.get("parameters") or {}, output=entry.get("output"))
        except NotebookFailed as exc:
            echo(f"  failed: {exc}")
            outcomes.append(exc)
            if not keep_going:
                break
            continue
        echo(f"  wrote {done.ipynb} and {done.html} in {done.seconds:.0f} s")
        outcomes.append(done)
    return outcomes


def _format_parameters(params: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v!r}" for k, v in params.items())


# --- the command line -----------------------------------------------------------------------------------

def _value(text: str) -> Any:
    """A -p value as YAML: 64 -> int, 1.5 -> float, true -> bool, null -> None, [a, b] -> list, 2s -> str."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def cmd_report(args) -> int:
    params = {key: _value(value) for key, value in args.parameters}
    done = execute(args.notebook, params, output=args.output, timeout=args.timeout, log_output=args.log_output)
    print(f"wrote {done.ipynb}\nwrote {done.html}\n({done.seconds:.0f} s)")
    return 0


def cmd_batch(args) -> int:
    outcomes = batch(args.plan, keep_going=not args.stop_on_failure)
    failed = [o for o in outcomes if isinstance(o, NotebookFailed)]
    print(f"{len(outcomes) - len(failed)} report(s) written, {len(failed)} failed")
    return 1 if failed else 0


def add_commands(sub) -> None:
    """Register ``benchlab report`` and ``benchlab batch`` on the CLI's subparsers."""
    p = sub.add_parser("report", help="execute a notebook with parameters; write the .ipynb and a standalone .html")
    p.add_argument("notebook", help="e.g. notebooks/compare.ipynb")
    p.add_argument("-p", "--parameter", nargs=2, action="append", default=[], dest="parameters",
                   metavar=("KEY", "VALUE"), help="a parameter (repeatable); VALUE is YAML: 64, 2s, true, [a, b]")
    p.add_argument("-o", "--output", default=None,
                   help="the executed notebook (.ipynb) or a folder for it (default data/reports/)")
    p.add_argument("--timeout", type=float, default=None, help="seconds any one cell may take (default no limit)")
    p.add_argument("--log-output", action="store_true", help="echo the notebook's output while it runs")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("batch", help="execute the reports of a YAML plan in order")
    p.add_argument("plan", help="a YAML plan, e.g. data/batch-example.yaml")
    p.add_argument("--stop-on-failure", action="store_true", help="stop at the first failed report")
    p.set_defaults(func=cmd_batch)
