"""What a notebook's kernel imports: the parameter check, the chart renderer and the stored-results check.

Every benchlab notebook opens with one call, right after its ``parameters`` cell::

    globals().update(notebook.setup(globals()))

which checks the parameters against the types the parameters cell declares (``repeats: int = 3``, read
as Python by :func:`assignments`: papermill's line parser skips a value holding "=", such as a JVM option), makes
sure ``results_dir`` holds runs when ``measure=False``, shows charts offline (:func:`enable_charts`) and widens
pandas' tables. Rendering and batching reports is :mod:`benchlab.report`'s job, outside the kernel.
"""

from __future__ import annotations

import os
import sys
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import BenchlabError, ResultsError, UsageError

__all__ = ["ParameterError", "setup", "parameters", "declared", "require_results", "enable_charts",
           "VEGALITE_MIMETYPE"]

#: The mimetype under which a notebook keeps each chart's Vega-Lite spec: version 5, the one JupyterLab 4 and
#: Notebook 7 draw with their own built-in renderer (its Vega-Lite is 5.6.1 in JupyterLab 4.6.6), so a chart is
#: interactive there with no extension, no kernel and no network. Altair 6 writes Vega-Lite 6; benchlab's charts
#: use nothing version 6 added (tests/test_charts.py checks every chart against the 5.6.1 schema).
VEGALITE_MIMETYPE = "application/vnd.vegalite.v5+json"
VEGALITE_SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
#: The Vega-Lite that vl-convert draws the static SVG with: its newest 5, the version the spec says.
VEGALITE_LIBRARY = "5.21"

#: The first characters of the notebook's own parameters cell (papermill's injected one is "# Parameters\n").
PARAMETERS_CELL = "# Parameters"
#: Parameters of the notebooks under an older name: their new name, which a report given the old one names.
RENAMED = {"run": "measure"}


class ParameterError(UsageError):
    """A notebook parameter is unknown or of the wrong type; the message names the valid ones."""


# --- charts ---------------------------------------------------------------------------------------------

#: Room kept right of a static chart. vl-convert sizes the SVG by its own font's widths; a browser that draws
#: the text in a wider font (DejaVu Sans: about 1.15x) would cut the legend's longest name at the edge.
STATIC_PADDING = {"left": 5, "top": 5, "bottom": 5, "right": 40}

#: How JupyterLab's renderer draws a chart (vega-embed's options, which it reads from the output's metadata): as SVG,
#: sharp at any zoom and the same marks as the report's, with the export menu and no source editor (it would
#: open the online editor).
EMBED_OPTIONS = {"renderer": "svg", "actions": {"export": True, "source": False, "compiled": False, "editor": False}}


def as_v5(spec: dict) -> dict:
    """Altair's spec as the Vega-Lite 5 spec it is: only its ``$schema`` says 6.

    >>> as_v5({"$schema": "https://vega.github.io/schema/vega-lite/v6.4.1.json", "mark": "bar"})["$schema"]
    'https://vega.github.io/schema/vega-lite/v5.json'
    """
    return {**spec, "$schema": VEGALITE_SCHEMA}


def _chart_bundle(spec: dict, **options) -> tuple[dict, dict]:
    """The spec under the Vega-Lite 5 mimetype, which JupyterLab, Notebook 7 and VS Code draw interactively, and
    a static SVG for what runs no script (GitHub's viewer, nbconvert to PDF); a front end takes the first it can
    draw."""
    import vl_convert

    spec = as_v5(spec)
    bundle: dict[str, Any] = {VEGALITE_MIMETYPE: spec}
    try:
        bundle["image/svg+xml"] = vl_convert.vegalite_to_svg({**spec, "padding": STATIC_PADDING},
                                                             vl_version=VEGALITE_LIBRARY)
    except Exception as exc:  # a chart vl-convert cannot draw still has its spec
        bundle["text/plain"] = f"(no static image: {exc})"
    title = spec.get("title", {})
    bundle.setdefault("text/plain", f"<chart: {title.get('text') if isinstance(title, dict) else title}>")
    return bundle, {VEGALITE_MIMETYPE: {"embed_options": EMBED_OPTIONS}}


def enable_charts() -> None:
    """Show Altair charts as a Vega-Lite 5 spec + static SVG: interactive and offline in JupyterLab, Notebook 7
    and VS Code, a picture where no script runs, and ready for :func:`benchlab.report.to_html`.

    Example
    -------
    >>> enable_charts()
    >>> import altair as alt; alt.renderers.active
    'benchlab'
    """
    import altair as alt

    if "benchlab" not in alt.renderers.names():
        alt.renderers.register("benchlab", _chart_bundle)
    alt.renderers.enable("benchlab")


# --- the parameter check --------------------------------------------------------------------------------

def _fail(error: BenchlabError) -> BenchlabError:
    """Print the message first, so it is the notebook's first output above the traceback."""
    print(f"benchlab: error: {error}", file=sys.stderr)
    return error


def _cells(namespace: Mapping[str, Any]) -> tuple[str, str] | None:
    """(the notebook's own parameters cell, papermill's injected one or "") from IPython's history."""
    history = namespace.get("In")
    if not isinstance(history, list):
        return None
    own = [s for s in history if isinstance(s, str) and s.startswith(PARAMETERS_CELL)
           and not s.startswith(PARAMETERS_CELL + "\n")]
    injected = [s for s in history if isinstance(s, str) and s.startswith(PARAMETERS_CELL + "\n")]
    return (own[-1] if own else "", injected[-1] if injected else "")


def _assigned(source: str) -> set[str]:
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {target.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)}


_TYPES = {"Optional": typing.Optional, "Union": typing.Union, "None": None, "list": list, "dict": dict,
          "str": str, "int": int, "float": float, "bool": bool}


def _kinds(annotation: str) -> tuple[type, ...]:
    """``"Optional[int]"`` -> ``(int, NoneType)``: the types an annotation of the parameters cell allows."""
    hint = eval(annotation, {"__builtins__": {}}, _TYPES)  # names limited to _TYPES: no builtins
    return typing.get_args(hint) if typing.get_origin(hint) is typing.Union else (hint,)


def declared(source: str) -> dict[str, tuple[type, ...]]:
    """The parameters a ``parameters`` cell declares and their types, read as Python (:func:`assignments`).

    >>> declared("repeats: int = 3  # runs per server\\nseed: Optional[int] = None")
    {'repeats': (<class 'int'>,), 'seed': (<class 'int'>, <class 'NoneType'>)}
    >>> declared("jvm_opts: Optional[list] = ['-XX:TieredStopAtLevel=1']")
    {'jvm_opts': (<class 'list'>, <class 'NoneType'>)}
    """
    found = {}
    for name, annotation, default in assignments(source):
        if annotation is None:
            raise ParameterError(f"the parameters cell gives {name} no type: write {name}: <type> = {default}")
        found[name] = _kinds(annotation)
    return found


def assignments(source: str) -> list[tuple[str, str | None, str]]:
    """Each parameter a ``parameters`` cell assigns: ``(name, its annotation or None, its default)``, as source
    text. Read with :mod:`ast`, not papermill's line parser, which skips a line holding a second "=" (a JVM
    option such as ``-XX:TieredStopAtLevel=1``); a cell that is not Python gives nothing.

    >>> assignments("measure: bool = True\\nx = 'a=b'")
    [('measure', 'bool', 'True'), ('x', None, "'a=b'")]
    """
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found: list[tuple[str, str | None, str]] = []
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            found.append((node.target.id, ast.unparse(node.annotation), ast.unparse(node.value)))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found.append((node.targets[0].id, None, ast.unparse(node.value)))
    return found


def _kind(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def _scalar(text: str) -> Any:
    """'64' -> 64, '1.5' -> 1.5, anything else stays a stripped string."""
    text = text.strip()
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


_IGNORED = {"In", "Out", "get_ipython", "exit", "quit", "open"}


def parameters(namespace: Mapping[str, Any], schema: Mapping[str, tuple[type, ...] | type] | None = None) -> dict:
    """Check a notebook's parameters and return them as a dict.

    Call it in the cell after the ``parameters`` cell with ``globals()``. ``schema`` is by default what
    that cell declares (``connections: int = 200``, see :func:`declared`). A name that papermill injected
    and the schema lacks is an unknown parameter, most often a typo; outside IPython every public
    variable counts. Every value must be one of the schema's types. A list parameter given as a string,
    as on the command line (``-p servers spring-tomcat,spring-jetty``), is split at the commas.

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
    benchlab.present.notebook.ParameterError: unknown parameter 'repeat': this notebook takes repeats
    """
    cells = _cells(namespace)
    if schema is None:
        if not cells or not cells[0]:
            raise _fail(ParameterError(f"no cell starting {PARAMETERS_CELL!r} ran: run the parameters cell first"))
        schema = declared(cells[0])
    if cells is not None:
        given = set().union(*(_assigned(cell) for cell in cells))
    else:
        given = {name for name, value in namespace.items()
                 if not name.startswith("_") and name not in _IGNORED
                 and not isinstance(value, (types.ModuleType, types.FunctionType, type))}
    if (error := _unknown(given, schema, "this notebook")) is not None:
        raise _fail(error)
    return {name: _checked(namespace, name, kinds if isinstance(kinds, tuple) else (kinds,))
            for name, kinds in schema.items()}


def _checked(namespace: Mapping[str, Any], name: str, kinds: tuple[type, ...]) -> Any:
    if name not in namespace:
        raise _fail(ParameterError(f"parameter {name!r} is missing: keep the notebook's parameters cell"))
    try:
        return _fitted(namespace[name], name, kinds)
    except ParameterError as exc:
        raise _fail(exc) from None


def _fitted(value: Any, name: str, kinds: tuple[type, ...]) -> Any:
    """``value`` as the parameter ``name`` takes it ("a,b" is a list where a list is wanted), or ParameterError."""
    if isinstance(value, str) and list in kinds and str not in kinds:
        value = [_scalar(part) for part in value.split(",") if part.strip()]
    if type(value) is int and float in kinds and int not in kinds:
        value = float(value)
    fits = (value is None and type(None) in kinds) or (
        value is not None and isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds))
    if not fits:
        wanted = " or ".join("None" if k is type(None) else k.__name__ for k in kinds)
        raise ParameterError(f"parameter {name!r} must be {wanted}, not {_kind(value)} {value!r}")
    return value


def waits(source: str) -> bool:
    """Whether a parameters cell's ``measure`` is False by default: the notebook starts no load unless asked
    (explore.ipynb waits for a press of its Run button), so that is its default and needs no stored runs.

    >>> waits("measure: bool = False  # True: press Run once"), waits("measure: bool = True")
    (True, False)
    """
    return any(name == "measure" and default == "False" for name, _, default in assignments(source))


def _stored_needed(measure: Any, source: str) -> bool:
    """``measure=False`` re-renders the runs in ``results_dir``, except in a notebook that :func:`waits`."""
    return measure is False and not waits(source)


def _unknown(given: Iterable[str], schema: Mapping, where: str) -> ParameterError | None:
    """The error for the names in ``given`` that ``schema`` does not declare (a renamed one by its new name)."""
    unknown = sorted(name for name in given if name not in schema)
    renamed = [f"-p {RENAMED[name]} (was -p {name})" for name in unknown if RENAMED.get(name) in schema]
    if renamed:
        return ParameterError(f"{where}'s parameter was renamed: give {', '.join(renamed)}")
    return ParameterError(f"unknown parameter{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}: "
                          f"{where} takes {', '.join(schema)}") if unknown else None


def check_given(notebook: str | os.PathLike, given: Mapping[str, Any], *, stored: bool = True) -> None:
    """The parameters a report gives ``notebook``, checked against its parameters cell before any kernel
    starts: an unknown name or a value of the wrong type is a :class:`ParameterError` naming it. With
    ``stored``, a re-render (``measure=False``) must also find its runs (a batch checks that only when the
    entry's turn comes, since an earlier entry may write them)."""
    source = parameters_source(notebook)
    schema = declared(source)
    if (error := _unknown(given, schema, Path(notebook).name)) is not None:
        raise error
    for name, value in given.items():
        _fitted(value, name, schema[name])
    if "results_dir" in schema and _stored_needed(given.get("measure"), source):
        if stored:
            require_results(given.get("results_dir"))
        elif not given.get("results_dir"):
            require_results(None)


def parameters_source(notebook: str | os.PathLike) -> str:
    """The source of ``notebook``'s cell tagged ``parameters``; a :class:`ParameterError` where it has none."""
    import json

    cells = json.loads(Path(notebook).read_text())["cells"]
    source = next(("".join(c["source"]) for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])), None)
    if source is None:
        raise ParameterError(f"{notebook} has no cell tagged 'parameters': tag one in JupyterLab (the cell's tags)")
    return source


def require_results(results_dir: str | os.PathLike | None) -> list:
    """The stored runs under ``results_dir``, for a notebook re-rendered with ``measure=False``.

    Raises :class:`~benchlab.errors.ResultsError` when the directory is not given, does not exist or holds
    no run.
    """
    from ..store.results import load_runs

    if not results_dir:
        raise ResultsError("measure=False re-renders stored results: set results_dir to a directory of runs, "
                           "e.g. -p results_dir data/results/compare-...")
    return load_runs(Path(results_dir))


def setup(namespace: Mapping[str, Any]) -> dict:
    """A notebook's first step: check its parameters, its stored results when ``measure=False``, enable the charts.

    Returns the checked parameters (a list given as ``"a,b"`` is a list here), for ``globals().update``.
    """
    checked = parameters(namespace)
    own = (_cells(namespace) or ("", ""))[0]
    if _stored_needed(checked.get("measure", True), own):
        try:
            require_results(checked.get("results_dir"))
        except ResultsError as exc:
            raise _fail(exc) from None
    enable_charts()
    import pandas as pd

    pd.set_option("display.max_columns", 40)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_colwidth", None)
    return checked
