"""The run record, its storage, and reading results back.

One run is one directory: ``run.json`` (versioned, written atomically and last, so a directory without
it is an unfinished run) with the monitor's samples (``samples.json``), the load tool's raw output and the
server log beside it. Running only writes results; analysis only reads them.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ResultsError

# The vocabulary lives in schema; the column names stay importable from here for stats, cli and notebooks.
from ..schema import COLUMNS, ERROR_COLUMNS, SAMPLE_FIELDS, STATUSES, Status, cell
from . import validate
from .files import parse_json, why, write_atomic  # noqa: F401  (histogram and render write through them)
from .samples import SAMPLES_FILE, SAMPLES_FORMAT, SAMPLES_VERSION, Counters, Machine, Samples, document  # noqa: F401

FORMAT = "benchlab-run"
#: 4: a run can be "retaken" (a disturbed window measured again), its samples.json may hold what its cores did, and
#: its window's number is ``window``; 3: params carry ``iteration`` (read as ``window``) and ``fork`` (a fork's windows
#: are runs); 2: the samples moved out of run.json into samples.json; version 1 kept them inline.
FORMAT_VERSION = 4

#: The most a run.json may hold: its samples are beside it, so a real one is some kilobytes.
RUN_BYTES = 16 * 2**20

_COLUMN_SET = frozenset(COLUMNS)  # row() asks "is this key a column?" ~50 times a run: a set, not the tuple
_EMPTY_ROW = dict.fromkeys(COLUMNS)

def _mapping(value) -> Mapping:
    """``value`` if it is a mapping, else an empty one: a metadata section read from elsewhere may be anything."""
    return value if isinstance(value, Mapping) else {}


def _frozen(value):
    if isinstance(value, dict):
        return {k: _frozen(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_frozen(v) for v in value]
    return value


@dataclass(frozen=True)
class Run:
    """One measured (or failed) run; building it checks its fields (a status of :data:`STATUSES`, a
    finished run's rps, an id).

    ``params`` is what was asked, ``metrics`` what was measured, ``samples`` the monitor's
    ``(t, role, cpu, rss, io)`` rows (a :class:`Samples` in a run read back), ``counters`` the server JVM's
    ``(t, *perfdata.FIELDS)`` rows on the same clock (empty for a server that is not a JVM), ``machine`` what
    the run's cores did on that clock (``(t, group, busy, irq, steal)`` rows; empty in older runs), and
    ``metadata`` the machine and versions. ``status`` is one of :data:`STATUSES`.
    """

    id: str
    params: Mapping
    metrics: Mapping
    metadata: Mapping
    samples: Sequence = ()
    counters: Sequence = ()
    machine: Sequence = ()
    status: Status = "ok"
    error: str | None = None
    suite: str | None = None
    label: str | None = None
    key: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    files: tuple = field(default_factory=tuple)
    #: Where the run's files are (not stored: known from where run.json was read or written); None in memory.
    directory: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {', '.join(STATUSES)}, not {self.status!r}")
        if self.status != "failed":
            rps = self.metrics.get("rps") if self.metrics else None
            if rps is None or rps < 0:
                raise ValueError(f"run {self.id}: a finished run needs rps >= 0, not {rps!r}")
        if not self.id:
            raise ValueError("a run needs an id")

    # -- views -----------------------------------------------------------------------------------
    def row(self) -> dict:
        row = _EMPTY_ROW.copy()
        row.update({k: v for k, v in self.params.items() if k in _COLUMN_SET})
        row.update(cell(self.params, self.label))  # the cell's columns as every statistic groups them
        metrics = self.metrics
        row.update({k: v for k, v in metrics.items() if k in _COLUMN_SET})
        server = _mapping(self.metadata.get("server"))
        row.update(
            id=self.id, suite=self.suite, label=self.label, status=self.status, error=self.error,
            started_at=self.started_at, finished_at=self.finished_at,
            server_impl=server.get("server"), server_version=server.get("server_version"),
            java_version=server.get("java_version") or _mapping(self.metadata.get("java")).get("version"),
        )
        row["errors_total"] = (sum(e for e in map(metrics.get, ERROR_COLUMNS) if e) if self.status != "failed"
                               else None)
        row["accept_queue"] = _mapping(self.metadata.get("accept_queue")).get("value")
        row["somaxconn"] = _mapping(self.metadata.get("network")).get("somaxconn")
        row["stream_limit"] = _mapping(self.metadata.get("protocol")).get("stream_limit")
        return row

    def to_frame(self):
        """This run as a one-row tidy DataFrame, with the columns of :data:`COLUMNS`."""
        import pandas as pd

        return pd.DataFrame([self.row()], columns=list(COLUMNS))

    def samples_frame(self):
        """The CPU, memory and byte-count samples: columns id, server, t, role, cpu, rss, io (None in runs
        stored before io was sampled)."""
        import pandas as pd

        width = len(SAMPLE_FIELDS)
        rows = [tuple(s) + (None,) * (width - len(s)) for s in self.samples]
        frame = pd.DataFrame(rows, columns=list(SAMPLE_FIELDS))
        frame.insert(0, "server", self.params.get("server"))
        frame.insert(0, "id", self.id)
        return frame

    # -- storage ---------------------------------------------------------------------------------
    def to_json(self) -> dict:
        """The ``run.json`` document: the samples are named by their file, which :func:`save` writes beside."""
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "id": self.id,
            "suite": self.suite,
            "label": self.label,
            "key": self.key,
            "status": self.status,
            "error": self.error,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "params": _frozen(dict(self.params)),
            "metrics": dict(self.metrics),
            "metadata": _frozen(dict(self.metadata)),
            "samples": SAMPLES_FILE if self.samples or self.counters or self.machine else None,
            "files": list(self.files),
        }

    @classmethod
    def from_json(cls, doc: dict, *, source: str = "", directory: str | None = None) -> Run:
        """The run a ``run.json`` document describes, every field it uses checked first
        (:func:`benchlab.store.validate.run_doc`); any damage is a :class:`ResultsError` naming ``source``."""
        if type(doc) is not dict or doc.get("format") != FORMAT:
            raise ResultsError(f"{source} is not a benchlab run (no format {FORMAT!r})")
        version = doc.get("version")
        if type(version) is not int or version > FORMAT_VERSION:
            raise ResultsError(
                f"{source} was written by a newer benchlab (format version {version}, this one reads up to "
                f"{FORMAT_VERSION}): upgrade benchlab (pip install -U benchlab) to read it"
            )
        doc = migrate(doc, source)
        validate.run_doc(doc, source)
        samples = doc.get("samples")
        stored = None
        if isinstance(samples, str):  # a file beside run.json, never a path: the run's folder is all it reads
            stored = Samples(os.path.join(directory or "", validate.file_name(samples, source)))
        elif samples is not None:  # format 1 kept them inline
            if type(samples) is not list:
                raise validate.damaged(source, f"its samples are {type(samples).__name__}, not a list or a file")
            samples = validate.sample_rows(samples, (), source)[0]
        return cls(
            id=doc["id"], params=doc["params"], metrics=doc["metrics"], metadata=doc["metadata"],
            samples=stored if stored is not None else (samples or ()),
            counters=Counters(stored) if stored is not None else (),
            machine=Machine(stored) if stored is not None else (), status=doc["status"],
            error=doc.get("error"), suite=doc.get("suite"), label=doc.get("label"), key=doc.get("key"),
            started_at=doc.get("started_at"), finished_at=doc.get("finished_at"),
            files=tuple(doc.get("files") or ()), directory=directory,
        )


def migrate(doc: dict, source: str = "") -> dict:
    """Bring an older format version up to :data:`FORMAT_VERSION`. Version 1 kept the samples inline, as a
    list, which :meth:`Run.from_json` still reads. A run of version 1 or 2 has no window or fork: it is
    its own fork of one window (:func:`benchlab.analysis.cells.forks` reads it so), and nothing else changed.
    Version 4 added a status and samples.json keys that older runs simply do not use, and named a fork's windows
    ``window`` (before: ``iteration``, read as it)."""
    if doc["version"] < 1:
        raise ResultsError(f"{source}: format version {doc['version']} is older than any benchlab wrote")
    params = doc.get("params")
    if doc["version"] < 4 and isinstance(params, dict) and "iteration" in params and "window" not in params:
        doc["params"] = {**params, "window": params["iteration"]}  # the word was "iteration" before version 4
    return doc


def save(run: Run, directory: Path) -> Path:
    """Store ``run`` as ``directory/run.json``, its samples first as ``samples.json``; the raw files are
    already beside it."""
    directory = Path(directory)
    if run.samples or run.counters or run.machine:
        write_atomic(directory / SAMPLES_FILE, document(run.samples, run.counters, run.machine))
    path = directory / "run.json"
    write_atomic(path, json.dumps(run.to_json(), indent=1, sort_keys=False, default=str) + "\n")
    return path


def read(path: Path) -> Run:
    """The run stored at ``path`` (a run.json), every field it uses checked; damage is a ResultsError."""
    name = str(path)  # once: find() gives Paths, and each str() of one costs as much as a check
    try:
        doc = parse_json(name, limit=RUN_BYTES)
    except (OSError, ValueError) as exc:  # ValueError: not JSON, not UTF-8, digits beyond Python's limit
        raise ResultsError(f"cannot read {name}: {why(exc)}") from None
    return Run.from_json(doc, source=name, directory=os.path.dirname(name))


def find(paths: Iterable[str | Path]) -> list[Path]:
    """Every ``run.json`` under the given directories (or the files themselves)."""
    found: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_file() and p.name == "run.json":
            found.append(p)
        elif p.is_dir():
            # os.scandir, not Path.rglob: rglob and sorting Paths took 0.38 s for 10,000 runs, os.walk 0.14 s,
            # scandir 0.06 s. Same files, same order: Path sorts by parts; neither follows a linked directory.
            names: list[str] = []
            _walk(str(p), names)
            found.extend(Path(name) for name in sorted(names, key=lambda name: name.split(os.sep)))
        else:
            raise ResultsError(f"no results at {p}: give a results directory, such as data/results")
    return found


def _walk(top: str, names: list[str]) -> None:
    """Append every ``run.json`` under ``top`` to ``names``; an unreadable directory is skipped, as os.walk does."""
    below = []
    try:
        with os.scandir(top) as entries:
            for entry in entries:
                if entry.name == "run.json":
                    names.append(entry.path)
                if entry.is_dir(follow_symlinks=False):
                    below.append(entry.path)
    except OSError:
        return
    for directory in below:
        _walk(directory, names)


@contextlib.contextmanager
def collector_paused():
    """Pause the cyclic garbage collector (as it was, after). Reading makes some 100 objects a run and no
    cycle; left on, the collector walked the growing heap again and again, which cost as much as parsing
    the JSON at 10,000 runs. Nothing is lost: reference counting still frees every temporary."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def scan(*paths: str | Path, strict: bool = False) -> tuple[list[Run], list[str]]:
    """``(runs, damaged)``: every good run under ``paths``, sorted, and one line per run.json that cannot be
    read (each names its file and what is wrong). ``strict=True`` raises the first :class:`ResultsError`
    instead. A folder that holds no run, or only damaged ones, is a ResultsError (the first damage's line)."""
    if not paths:
        from .. import home

        paths = (home.results_dir(),)
    files = find(paths)
    if not files:
        raise ResultsError(
            f"no runs under {', '.join(str(p) for p in paths)}: run benchlab.run()/compare() with "
            "results_dir set there, or point at a directory that holds run.json files"
        )
    runs, damaged, first = [], [], None
    with collector_paused():
        for f in files:
            try:
                runs.append(read(f))
            except ResultsError as exc:
                if strict:
                    raise
                first = first or exc
                damaged.append(str(exc).splitlines()[0])
    if not runs:
        more = f" (and {len(damaged) - 1} more damaged runs)" if len(damaged) > 1 else ""
        raise ResultsError(f"{first}{more}")
    runs.sort(key=lambda r: (r.started_at or "", r.id))
    return runs, damaged


def warn_damaged(damaged: Sequence[str]) -> None:
    """One warning for all the damaged runs, a line each: a notebook shows it once, above the results."""
    if damaged:
        import warnings

        warnings.warn(f"{len(damaged)} damaged run(s) left out:\n" + "\n".join(damaged), ResultsWarning,
                      stacklevel=3)


class ResultsWarning(UserWarning):
    """Some stored runs were damaged and left out; the good ones were read."""


def load_runs(*paths: str | Path, strict: bool = False) -> list[Run]:
    """Read every good run under ``paths``; warn once about the damaged ones (``strict=True``: raise the
    first); refuse a directory without runs with a clear error."""
    runs, damaged = scan(*paths, strict=strict)
    warn_damaged(damaged)
    return runs


def frame(runs: Iterable[Run]):
    """The tidy frame of many runs: one row each, the columns of :data:`COLUMNS`."""
    import pandas as pd

    rows = [r.row() for r in runs]
    return pd.DataFrame(rows, columns=list(COLUMNS))
