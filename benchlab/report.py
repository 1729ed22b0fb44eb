"""Reports: execute a notebook with parameters (papermill), keep the executed .ipynb, render a standalone HTML.

``benchlab report NOTEBOOK -p key value ... -o OUT`` and ``benchlab batch batch.yaml`` are thin wrappers
around :func:`execute` and :func:`batch`. A notebook that fails is still written, with papermill's error
banner, and rendered to HTML; the error then names the failing cell. The HTML page, with the Vega libraries
inlined so it shows its charts offline, is :mod:`benchlab.present.render`'s job.

Example
-------
>>> from benchlab import report
>>> done = report.execute("notebooks/compare.ipynb", {"duration": "5s", "repeats": 2})  # doctest: +SKIP
>>> done.html                                                                           # doctest: +SKIP
PosixPath('data/reports/compare-20261130T0501.html')
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import home
from .errors import BenchlabError, UsageError
from .present.live import BATCH
from .present.notebook import VEGALITE_MIMETYPE, ParameterError, check_given  # noqa: F401 - re-exported for report's callers
from .present.render import to_html

__all__ = [
    "Report",
    "NotebookFailed",
    "ParameterError",
    "execute",
    "batch",
    "read_batch",
    "to_html",
    "VEGALITE_MIMETYPE",
]


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


def _failure(exc: Exception) -> str:
    """'cell 2 [In 2] ("# Check ..."): ParameterError: ...': where papermill's error says the notebook stopped.

    A :class:`~papermill.exceptions.PapermillExecutionError` carries the cell (its index in the source
    notebook, its execution count, its source) and the error; anything else (a dead kernel, a timeout)
    names no cell.
    """
    from papermill.exceptions import PapermillExecutionError

    if isinstance(exc, PapermillExecutionError):
        first = next((line.strip() for line in exc.source.splitlines() if line.strip()), "")
        count = f" [In {exc.exec_count}]" if exc.exec_count else ""
        where, ename, evalue = f"cell {exc.cell_index}{count} ({first[:60]!r})", exc.ename, exc.evalue
    else:
        where, ename, evalue = "start-up", type(exc).__name__, str(exc)
    first = str(evalue).splitlines()[0] if evalue else ""
    return f"{where}: {ename}: {first[:300] + ' ...' if len(first) > 300 else first}".strip()


#: The kernel's start-up log goes to benchlab's stderr: at its default level it says "Kernel is running over TCP
#: without encryption" on every report (it listens on 127.0.0.1 only), which made a one-line error two.
KERNEL_ARGUMENTS = ("--IPKernelApp.log_level=ERROR",)


def _each(value) -> list:
    """A parameter's values: a list as it is, "a,b" (the command line's list) split, else the one value."""
    from .present.notebook import _scalar

    if isinstance(value, str) and "," in value:
        return [_scalar(part) for part in value.split(",") if part.strip()]
    return list(value) if isinstance(value, (list, tuple)) else [value]


def check_options(given: Mapping[str, Any], notebook: str | os.PathLike | None = None) -> None:
    """The report parameters that are options of ``compare()``/``run()`` (:data:`.running.options.OPTIONS`), each
    checked by that option's own rule before a kernel starts: ``repeats`` a whole number or "auto", the
    load's times and counts by :class:`~benchlab.running.load.Load`, the cores by :func:`benchlab.cores.parse_cpus`,
    a choice among its choices, each server by :func:`benchlab.running.servers.get`. A re-render (``measure=False``)
    uses none of them; ``compare()`` checks what needs the machine. A parameter ``notebook`` declares under an
    option's name with a default that option refuses is the notebook's own (a user's notebook whose
    ``protocol = "controlled"`` means something else than what requests speak), which the notebook checks.

    Example
    -------
    >>> check_options({"repeats": "abc"})
    Traceback (most recent call last):
    benchlab.errors.UsageError: repeats must be a whole number of 1 or more or 'auto', not 'abc'
    """
    if given.get("measure") is False:
        return
    own = _own(notebook) if notebook is not None else set()
    for name in (name for name in given if name not in own):  # in the order given: the first mistake is named
        _check_option(name, given[name])


def _own(notebook: str | os.PathLike) -> set[str]:
    """The parameters ``notebook`` declares under an option's name with a default the option refuses."""
    import ast

    from .present.notebook import assignments, parameters_source

    own: set[str] = set()
    for name, _, default in assignments(parameters_source(notebook)):
        try:
            _check_option(name, ast.literal_eval(default))
        except UsageError:  # first: a UsageError is a ValueError too
            own.add(name)
        except (ValueError, SyntaxError):  # a default that is not a literal: nothing to tell from it
            continue
    return own


def _check_option(name: str, value) -> None:
    """One option's value by that option's own rule; a name that is no option's passes."""
    from . import cores
    from .running import options, servers, spec
    from .running.load import Load, _positive_int, parse_duration
    from .running.matrix import budget_seconds, check_repeats

    named = [o for o in options.OPTIONS if o.name == name]
    choices = next((o.choices for o in named if o.choices), ())
    if value is None and any(o.default is None for o in named):  # None: compare() chooses
        return
    if choices:
        spec._choice(name, value, choices)
    elif name == "repeats":
        check_repeats(value, auto=True)
    elif name == "budget":
        budget_seconds(value)
    elif name in ("connections", "users", "loops", "threads"):
        for one in _each(value):
            if one is not None:
                _positive_int(name, one)
    elif name in ("duration", "warmup", "timeout", "ramp_up"):
        Load(**{name: value})
    elif name in ("rate", "rates") and value != "auto":  # rates="auto": the common rate, found when it runs
        for one in _each(value):
            if one is not None:
                Load(model="rate", rate=one)
    elif name == "startup_timeout":
        parse_duration(value, what=name)
    elif name in ("server_cpus", "load_cpus") and value is not None:
        cores.parse_cpus(value, role=name.removesuffix("_cpus"))
    elif name in ("server", "servers"):
        for one in _each(value):
            servers.get(one)


@contextmanager
def _kernel_environment():
    """What the kernel papermill starts inherits, for the block: this benchlab first on its path (installed or not),
    and :data:`~benchlab.present.live.BATCH`, since nobody watches it (no live view is built)."""
    package_root = str(Path(__file__).resolve().parent.parent)
    saved = {name: os.environ.get(name) for name in ("PYTHONPATH", BATCH)}
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, saved["PYTHONPATH"]) if p)
    os.environ[BATCH] = "1"
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


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
    >>> execute("notebooks/compare.ipynb", {"measure": False, "results_dir": "data/results/x"})  # doctest: +SKIP
    """
    import time

    import papermill

    source = Path(notebook)
    if not source.is_file():
        raise UsageError(f"no notebook at {source}: give the path of an .ipynb, e.g. notebooks/compare.ipynb")
    params = dict(parameters or {})
    check_given(source, params)  # before any kernel starts or any file is written
    check_options(params, source)
    ipynb = _outputs(source, output)
    ipynb.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    failure = None
    try:
        with _kernel_environment():
            papermill.execute_notebook(str(source), str(ipynb), parameters=params, kernel_name=kernel,
                                       progress_bar=False, log_output=log_output, execution_timeout=timeout,
                                       request_save_on_cell_execute=True, extra_arguments=list(KERNEL_ARGUMENTS))
    except Exception as exc:  # a cell that raised, a kernel that died or timed out: keep the file
        failure = exc
    page = ipynb.with_suffix(".html")
    if ipynb.exists():
        to_html(ipynb, page)
    if failure is not None:
        raise NotebookFailed(
            f"{source.name} failed in {_failure(failure)}; "
            f"the executed notebook is {ipynb}" + (f" and {page}" if page.exists() else ""))
    return Report(notebook=source, parameters=params, ipynb=ipynb, html=page, seconds=time.monotonic() - started)


# --- batch ---------------------------------------------------------------------------------------------

def read_batch(path: str | os.PathLike) -> list[dict]:
    """The entries of a batch file: a YAML list of {notebook, parameters, output} in the order to run.

    The file is either a list of entries, or a mapping with ``defaults`` (parameters every entry gets)
    and ``reports`` (the list). See data/batch-example.yaml.

    Example
    -------
    >>> read_batch("data/batch-example.yaml")[0]["notebook"]   # doctest: +SKIP
    'notebooks/compare.ipynb'
    """
    import yaml

    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise UsageError(f"cannot read the batch file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"{path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    defaults: dict = {}
    entries = doc
    if isinstance(doc, dict):
        defaults = doc.get("defaults", {}) or {}
        if not isinstance(defaults, dict):
            raise UsageError(f"{path}: defaults must be a mapping of name: value, not {type(defaults).__name__} "
                             f"{defaults!r}")
        entries = doc.get("reports")
    if not isinstance(entries, list) or not entries:
        raise UsageError(f"{path}: expected a list of reports (notebook, parameters, output); "
                         "see data/batch-example.yaml")
    reports = []
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
        given = entry.get("parameters") or {}
        if not isinstance(given, dict):
            raise UsageError(f"{path}: report {number}'s parameters must be a mapping of name: value, not "
                             f"{type(given).__name__} {given!r}")
        output = entry.get("output")
        if output is not None and not Path(output).is_absolute():
            output = str(path.parent / output)  # where the batch file is, as its notebooks are found
        reports.append({"notebook": str(notebook), "parameters": {**defaults, **given}, "output": output})
    return reports


def batch(entries: str | os.PathLike | Iterable[Mapping], *, keep_going: bool = True,
          echo=print) -> list[Report | NotebookFailed]:
    """Execute every report of a batch file (or of a list of entries) in order; a failed one is reported, the
    rest go on.

    Returns one entry per report: its :class:`Report`, or the :class:`NotebookFailed` it raised.

    Example
    -------
    >>> done = batch("data/batch-example.yaml")     # doctest: +SKIP
    """
    entries = read_batch(entries) if isinstance(entries, (str, os.PathLike)) else [dict(e) for e in entries]
    for number, entry in enumerate(entries, 1):  # every entry's parameters, before the first report starts
        try:
            check_given(entry["notebook"], entry.get("parameters") or {}, stored=False)
            check_options(entry.get("parameters") or {}, entry["notebook"])
        except BenchlabError as exc:
            raise type(exc)(f"report {number} ({entry['notebook']}): {exc}") from None
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
