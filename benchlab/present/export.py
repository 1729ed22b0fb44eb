"""Write runs out for other tools: latency as HdrHistogram logs, profiles as collapsed stacks and speedscope files.

Each run that kept a histogram is one interval of its cell's log (its window: when it began, how long it
measured), so a tool that adds a log's intervals, as HdrHistogram's HistogramLogProcessor does, gets the
cell's merged latency, the one :meth:`benchlab.Suite.latency` reports. The format, the unit and the
precision are :mod:`benchlab.store.hdrlog`'s; docs/hdrhistogram.md says how to read a log.

A server's profiled windows (``compare(..., profile=True)``) are written as one profile per cell and server, their
stacks' samples added over its forks: Brendan Gregg's collapsed stacks (``flamegraph.pl``, ``inferno``) and a
speedscope file (https://www.speedscope.app, its "sampled" profile), :func:`export_profile`.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterable
from pathlib import Path

from ..analysis import cells
from ..analysis.suite import Suite, load
from ..errors import UsageError
from ..store import hdrlog
from ..store.files import slug
from ..store.results import Run
from ..version import __version__

#: The ending of a written log's name.
SUFFIX = ".hlog"


def export_hdr(results: Suite | Run | Iterable[Run] | str | Path, directory: str | Path, *, unit: str = "us",
               digits: int = hdrlog.DIGITS) -> list[Path]:
    """Write the latency of ``results`` as HdrHistogram logs in ``directory``: one per cell and server.

    ``results`` is a :class:`~benchlab.Suite`, one :class:`~benchlab.Run`, some runs, or a results folder.
    Each log holds one interval per run of its cell (its window), so adding them, as HdrHistogram's tools do,
    gives the cell's merged latency. The values are whole ``unit`` ("us", microseconds, as wrk2 writes; or
    "ns", "ms") with ``digits`` significant digits (3 keeps 0.1%); a log's comment lines say both. The
    precision that survives is benchlab's 0.5% per latency plus HdrHistogram's bucket (0.1% at 3 digits)
    and a whole unit (docs/hdrhistogram.md). A log is named after its server and the cell columns that vary,
    e.g. ``spring-tomcat.hlog``; runs that kept no histogram (imported from wrk's text or a JTL) are left out.

    Example
    -------
    >>> import benchlab
    >>> benchlab.export_hdr(benchlab.load("data/results"), "logs")   # doctest: +SKIP
    [PosixPath('logs/spring-jetty.hlog'), PosixPath('logs/spring-tomcat.hlog')]
    """
    hdrlog.check(unit, digits)
    folder = Path(directory)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder} is a file: give the directory to write the HdrHistogram logs in")
    logs = _logs(_suite(results))
    if not logs:
        raise UsageError("none of these runs kept a latency histogram (runs imported from wrk's text or a JTL, or "
                         "stored before histograms were kept): there is no latency to write")
    folder.mkdir(parents=True, exist_ok=True)
    return [hdrlog.write(folder / name, windows, unit=unit, digits=digits, notes=notes)
            for name, notes, windows in logs]


def _suite(results) -> Suite:
    if isinstance(results, Suite):
        return results
    if isinstance(results, (str, Path)):
        return load(results)
    return Suite([results] if isinstance(results, Run) else results)


def _logs(suite: Suite) -> list[tuple[str, list[str], list[hdrlog.Window]]]:
    """``(file name, notes, windows)`` of every cell and server with a run that kept a histogram."""
    runs, histograms, records = suite.runs, suite.histograms, suite.records
    finished = cells.ok(runs)
    shown = cells.varying(finished)  # a log's name says what sets its cell apart from the others
    keys, groups = cells.group(finished)
    found: list = []
    names: set[str] = set()
    for cell, group in groups:
        cell = cell if isinstance(cell, tuple) else (cell,)
        described = {c: cells.restore(v) for c, v in zip(keys, cell)}
        for server, server_runs in group.groupby("server", sort=False):
            kept = [(records[i], histograms[i]) for i in server_runs.index if histograms[i] is not None]
            if not kept:
                continue
            name = _name([server, *(f"{c}={cells.key(described[c])}" for c in shown if c in described)], names)
            name += SUFFIX
            sources = sorted({h.source for _, h in kept if h.source})
            notes = [f"server {server}",
                     "cell " + " ".join(f"{c}={cells.key(v)}" for c, v in described.items() if v is not None),
                     f"{len(kept)} run(s), one interval each: added, they are the cell's merged latency",
                     *(f"latencies from {s}" for s in sources)]
            found.append((name, notes, [hdrlog.Window(h, *_window(record)) for record, h in kept]))
    return found


def _name(parts: list, taken: set) -> str:
    """A file name (without its ending) for ``parts``, unlike any in ``taken`` (which it joins)."""
    base = slug("-".join(map(str, parts)))
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    taken.add(name)
    return name


def _window(record: Run) -> tuple[float, float]:
    """``(start, seconds)`` of a run's window: its start since the epoch (0 when it does not say), and the
    seconds it measured (its elapsed time, else its duration, else from its start to its end)."""
    start = _epoch(record.started_at)
    for value in (record.metrics.get("elapsed_s"), record.params.get("duration")):
        if isinstance(value, (int, float)) and math.isfinite(value) and value > 0:
            return start, float(value)
    end = _epoch(record.finished_at)
    return start, max(0.0, end - start) if start and end else 0.0


def _epoch(text) -> float:
    try:
        return dt.datetime.fromisoformat(text).timestamp() if isinstance(text, str) else 0.0
    except (ValueError, OverflowError, OSError):
        return 0.0


#: The endings of a written profile: collapsed stacks, and speedscope's file.
COLLAPSED, SPEEDSCOPE = ".collapsed", ".speedscope.json"
SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def export_profile(results: Suite | Iterable[Run] | str | Path, directory: str | Path) -> list[Path]:
    """Write the profiled windows of ``results`` to ``directory``: per cell and server, its stacks' samples added
    over its forks, as collapsed stacks (``<server>.collapsed``, text: a stack a line, root first, then its
    samples) and as a speedscope file (``<server>.speedscope.json``, a "sampled" profile: open it at
    https://www.speedscope.app). A name carries the cell columns that vary, as :func:`export_hdr`'s do; a damaged
    profile is left out and named in ``Suite.damaged``.

    Example
    -------
    >>> import benchlab
    >>> export_profile(benchlab.load("data/results"), "profiles")   # doctest: +SKIP
    [PosixPath('profiles/spring-jetty.collapsed'), PosixPath('profiles/spring-jetty.speedscope.json'), ...]
    """
    folder = Path(directory)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{folder} is a file: give the directory to write the profiles in")
    stacks = _suite(results).profiles
    if stacks.empty:
        raise UsageError("none of these runs is a profiled window: compare(..., profile=True) takes one a fork")
    shown = cells.varying(stacks)  # a file's name says what sets its cell apart from the others
    keys, groups = cells.group(stacks)
    written: list[Path] = []
    names: set[str] = set()
    folder.mkdir(parents=True, exist_ok=True)
    for cell, group in groups:
        described = {c: cells.restore(v) for c, v in zip(keys, cell if isinstance(cell, tuple) else (cell,))}
        for server, mine in group.groupby("server", sort=False):
            name = _name([server, *(f"{c}={cells.key(described[c])}" for c in shown if c in described)], names)
            folded = mine.groupby("stack", sort=True)["samples"].sum()
            text = "".join(f"{stack} {int(n)}\n" for stack, n in folded.items())
            (folder / (name + COLLAPSED)).write_text(text)
            document = speedscope(folded.to_dict(), f"{server}: {mine['fork'].nunique()} fork(s), async-profiler cpu")
            (folder / (name + SPEEDSCOPE)).write_text(json.dumps(document))
            written += [folder / (name + COLLAPSED), folder / (name + SPEEDSCOPE)]
    return written


def speedscope(folded: dict[str, int], name: str) -> dict:
    """Folded stacks as a speedscope document: one "sampled" profile, each distinct stack a sample (its frames'
    indices, root first) weighted by its count.

    >>> doc = speedscope({"a;b": 3, "a": 1}, "x")
    >>> [f["name"] for f in doc["shared"]["frames"]], doc["profiles"][0]["samples"], doc["profiles"][0]["weights"]
    (['a', 'b'], [[0, 1], [0]], [3, 1])
    """
    index: dict[str, int] = {}
    samples = [[index.setdefault(frame, len(index)) for frame in stack.split(";")] for stack in folded]
    weights = [int(n) for n in folded.values()]
    total = sum(weights)
    return {"$schema": SPEEDSCOPE_SCHEMA, "shared": {"frames": [{"name": frame} for frame in index]},
            "profiles": [{"type": "sampled", "name": name, "unit": "none", "startValue": 0, "endValue": total,
                          "samples": samples, "weights": weights}],
            "name": name, "activeProfileIndex": 0, "exporter": f"benchlab {__version__}"}
