"""This machine's history, the prior of borrowed strength: each stored comparison's fork variance per cell and
metric, read (never written) from results folders, of runs measured on the machine being judged.

A machine is what its runs' metadata names: the hostname, the CPU model and its logical CPUs, and the host of
``compare(hosts=...)``; a run that names none of them (imported, made in memory) is nobody's history. Each stored
sitting gives, per cell, one variance of each metric with its degrees of freedom, laid out as the sitting judged is
(:func:`benchlab.analysis.sittings.layout`): by round or apart, a prior only for its own kind.

A sitting is a comparison (``suite``) in the folder it was stored in (:func:`sitting`). A suite's id is made of
its servers and cells, so the same comparison run again elsewhere (another clone, another day) has the same id: it
is another sitting, and the best prior there is, neither the sitting judged nor one comparison with two forks a
round. Damaged stored runs are left out and named in :attr:`History.skipped`, never fatal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ResultsError, UsageError
from ..store.results import Run, frame, scan
from . import borrow, cells, sittings
from .validity import usable


def machine(record: Run) -> tuple | None:
    """What names the machine a run was measured on, or None where its metadata does not say.

    >>> machine(Run(id="a", params={}, metrics={"rps": 1.0}, metadata={"system": {"hostname": "h"},
    ...                                                                 "cpu": {"model": "m", "logical_cpus": 4}}))
    ('h', 'm', 4, None)
    """
    system, cpu = record.metadata.get("system") or {}, record.metadata.get("cpu") or {}
    hostname = system.get("hostname") if isinstance(system, dict) else None
    if not hostname:
        return None
    model, cpus = (cpu.get("model"), cpu.get("logical_cpus")) if isinstance(cpu, dict) else (None, None)
    return hostname, model, cpus, record.params.get("host")


def folders(history) -> tuple[Path, ...] | None:
    """The history's folders as given (None: the results root's), each checked to be a folder.

    >>> folders(None) is None
    True
    """
    if history is None:
        return None
    given = [history] if isinstance(history, (str, Path)) else list(history)
    found = []
    for folder in given:
        path = Path(str(folder)).expanduser()
        if not path.is_dir():
            raise UsageError(f"history folder {folder} is not a folder: give results folders that exist, or "
                             "leave history unset for the results root's")
        found.append(path)
    return tuple(found)


def sitting(record: Run) -> tuple:
    """The sitting a run belongs to: its comparison (``suite``) and the folder it is stored in (its run folder's
    parent; None for a run in memory).

    >>> sitting(Run(id="a", params={}, metrics={"rps": 1.0}, metadata={}, suite="s", directory="/r/compare-s/a"))
    ('s', '/r/compare-s')
    >>> sitting(Run(id="a", params={}, metrics={"rps": 1.0}, metadata={}, suite="s"))
    ('s', None)
    """
    return record.suite, str(Path(record.directory).resolve().parent) if record.directory else None


@dataclass(frozen=True)
class Prior:
    """(d0, s0^2) fitted from ``count`` stored variances of ``forks`` forks, ``df`` their degrees of freedom;
    ``scope`` says where they were measured: "at this load point" or "over every load point"."""

    d0: float
    s02: float
    count: int
    forks: int
    df: float
    scope: str = "over every load point"


class History:
    """Stored variances of this machine, read once, lazily, from ``paths`` (None: the results root), the runs of
    ``exclude`` (the judged sitting's own, :func:`sitting`) left out."""

    def __init__(self, paths: Sequence[Path] | None, *, machine: tuple | None, exclude: Iterable[tuple] = ()):
        self.paths = paths
        self.machine = machine
        self.exclude = set(exclude)
        self.skipped: list[str] = []
        self._variances: list[dict] | None = None

    def variances(self) -> list[dict]:
        """``{"suite", "folder", "metric", "paired", "s2", "d", "forks", "point"}`` per stored sitting, cell and
        metric."""
        if self._variances is None:
            self._variances = [] if self.machine is None else [
                {"suite": suite, "folder": folder, **found}
                for (suite, folder), records in self._sittings().items() for found in _measured(records)]
        return self._variances

    def _sittings(self) -> dict[tuple, list[Run]]:
        from .. import home

        found: dict[tuple, list[Run]] = {}
        for path in self.paths if self.paths is not None else (home.results_dir(),):
            try:
                runs, damaged = scan(path)
            except ResultsError as exc:  # a folder with no readable run: nothing to learn from it, said
                self.skipped.append(str(exc).splitlines()[0])
                continue
            self.skipped.extend(damaged)
            for record in runs:
                key = sitting(record)
                if key not in self.exclude and machine(record) == self.machine:
                    found.setdefault(key, []).append(record)
        return found

    def prior(self, metric: str, paired: bool, point: tuple | None = None) -> Prior | None:
        """The prior of ``metric``'s fork variance of this kind: from the stored variances at load ``point``
        (:func:`benchlab.analysis.cells.load_point`) where there are :data:`benchlab.analysis.borrow.MIN_VARIANCES`
        of them, else from those at every load point; None from fewer."""
        mine = [v for v in self.variances() if v["metric"] == metric and v["paired"] == paired]
        here = [v for v in mine if v["point"] == point]
        if point is not None and len(here) >= borrow.MIN_VARIANCES:
            mine, scope = here, "at this load point"
        elif len(mine) >= borrow.MIN_VARIANCES:
            scope = "over every load point"
        else:
            return None
        d0, s02 = borrow.fit_prior([v["s2"] for v in mine], [v["d"] for v in mine])
        return Prior(float(d0), float(s02), len(mine), sum(v["forks"] for v in mine), sum(v["d"] for v in mine),
                     scope)


def _measured(records: list[Run], metrics: Sequence[str] = ("rps", "p50", "p99")) -> list[dict]:
    """One sitting's ``{"metric", "paired", "s2", "d", "forks", "point"}`` per cell and metric."""
    clean, _ = usable(frame(records))  # the one rule: a flagged window is in no prior either
    if clean.empty:
        return []
    found = []
    _, groups = cells.group(cells.forks(clean))
    for _, group in groups:
        point = cells.load_point(group)
        for metric in metrics:
            shape = sittings.layout(group, metric)
            if shape is None:
                continue
            s2, d = sittings.variance(shape)
            if d > 0 and math.isfinite(s2) and s2 > 0:
                found.append({"metric": metric, "paired": shape.paired, "s2": s2, "d": d, "forks": shape.forks,
                              "point": point})
    return found
