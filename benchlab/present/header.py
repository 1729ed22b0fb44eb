"""What a report says before any number: the servers and their versions, the load, the cores, the warm-up,
the repeats and the machine.

compare.ipynb, sweep.ipynb and reproduce.ipynb show it under their runs with ``display(header.measured(...))``;
it reads the runs frame and the runs' metadata, nothing else.

>>> import benchlab
>>> from benchlab.present import header
>>> header.measured(benchlab.load("data/results/compare-x"))    # doctest: +SKIP
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..analysis.suite import Suite
    from ..store.results import Run

__all__ = ["Header", "measured"]


@dataclass(frozen=True)
class Header:
    """Rows of (what, how): shown as a small table in a notebook and in the HTML report, as lines in text."""

    rows: tuple[tuple[str, str], ...]

    def __str__(self) -> str:
        width = max((len(what) for what, _ in self.rows), default=0)
        return "\n".join(f"{what:<{width}}  {how}" for what, how in self.rows)

    def _repr_html_(self) -> str:
        cells = "".join(f'<tr><th style="text-align:left;padding-right:1em">{html.escape(what)}</th>'
                        f'<td style="text-align:left">{html.escape(how)}</td></tr>' for what, how in self.rows)
        return f'<table class="benchlab-header"><caption style="text-align:left"><b>What was measured</b>' \
               f'</caption>{cells}</table>'

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(str(self))


def _joined(values: Iterable) -> str:
    return ", ".join(dict.fromkeys(str(v) for v in values if v not in (None, "") and v == v))


def _cores(value) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return "-" if value is None else str(value)


def measured(runs: Suite | Iterable[Run], *, what: str | None = None) -> Header:
    """The header of a report over ``runs`` (a :class:`Suite` or its records).

    Parameters
    ----------
    runs : the runs the report shows, failed ones included (the header counts them)
    what : a first row saying what the report is, e.g. "wrk experiment"

    Example
    -------
    >>> from benchlab.store.results import Run
    >>> run = Run(id="a", params={"server": "spring-jetty", "scenario": "hello", "driver": "wrk",
    ...           "load": "duration", "connections": 64, "threads": 1, "duration": 2.0, "warmup": 1.0,
    ...           "server_cpus": [0], "load_cpus": [1], "backend": "local", "repeat": 1},
    ...           metrics={"rps": 9021.4}, metadata={"server": {"server": "jetty", "server_version": "12.0.29",
    ...           "spring_boot_version": "3.5.7", "java_version": "17.0.15"}, "cpu": {"model": "Xeon",
    ...           "logical_cpus": 2}})
    >>> print(measured([run]))
    servers  spring-jetty (jetty 12.0.29)
    stack    Spring Boot 3.5.7, Java 17.0.15
    load     hello, wrk, 64 connections, 1 load thread, 2 s measured per run
    cores    server on core 0, load on core 1 (local processes)
    warm-up  fixed 1 s, not judged steady: on one core a JVM can take minutes to warm,
             so use warmup auto for figures to quote
    repeats  1 per server and setup; 1 window used
    machine  Xeon, 2 cores
    """
    from ..analysis.cost import offered
    from ..analysis.custom import attached, note, paths
    from ..analysis.wall import span
    from ..store.results import frame
    from .charts.frames import machine_of
    from .terminal import wall_text, warmup_line

    records = tuple(runs.records if hasattr(runs, "records") else runs)
    table = frame(records)
    ok = table[table["status"] == "ok"]
    rows: list[tuple[str, str]] = [("report", what)] if what else []
    rows += _server_rows(ok, records)
    rows.append(("load", _load(ok)))
    common = offered(records)
    if common:
        rows.append(("rate", common))
    wire = _wire(records)
    if wire:
        rows.append(("wire", wire))
    where = paths(records)
    if where:
        rows.append(("paths", where))
    rows.append(("cores", _placement(ok)))
    rows.append(("warm-up", warmup_line(table).removeprefix("warm-up: ")))
    rows.append(("repeats", _repeats(table, ok) + "".join(f"; {n}" for n in [note(attached(records))] if n)))
    took = span(records, forks=True)
    if took is not None:
        rows.append(("took", f"{wall_text(took)} of wall time from the first start to the last end"))
    rows.append(("machine", machine_of(records)))
    return Header(rows=tuple(rows))


def _server_rows(ok, records: tuple[Run, ...]) -> list[tuple[str, str]]:
    """The servers with their versions, then the stack (Spring Boot and Java) where the runs say it."""
    servers, boot, java = [], [], []
    for server in dict.fromkeys(ok["server"]):
        meta: Mapping = next((r.metadata.get("server", {}) for r in records
                     if r.status == "ok" and r.params.get("server") == server), {})
        version = " ".join(filter(None, (meta.get("server"), meta.get("server_version")))) or "version unknown"
        servers.append(f"{server} ({version})")
        boot.append(meta.get("spring_boot_version"))
        java.append(" ".join(filter(None, (meta.get("java_version"), meta.get("java_vendor") and
                                           f"({meta['java_vendor']})"))))
    rows = [("servers", ", ".join(servers) or "no finished run")]
    stack = [f"Spring Boot {_joined(boot)}" if _joined(boot) else "", f"Java {_joined(java)}" if _joined(java) else ""]
    if any(stack):
        rows.append(("stack", ", ".join(filter(None, stack))))
    return rows


def _wire(records) -> str:
    """What the wire carried where it was not HTTP/1.1 in clear text: each protocol, as negotiated, with its TLS
    version and the load's cipher, and that no load tool verified the throwaway certificate (docs/http2.md)."""
    seen = {}
    for record in records:
        wire = record.metadata.get("protocol") if record.status == "ok" else None
        if isinstance(wire, Mapping) and wire.get("protocol") not in (None, "http1"):
            tls = ", ".join(filter(None, (wire.get("tls_version"), wire.get("load_cipher"))))
            seen[wire["protocol"]] = (f"{wire['protocol']} (negotiated {wire.get('negotiated')}"
                                      + (f"; {tls}; a throwaway certificate no load tool verified" if tls else "")
                                      + ")")
    return "; ".join(seen.values())


def _load(ok) -> str:
    """The scenario, the load tool, the load point, its threads and the measured seconds of a run."""
    from .charts.frames import load_point

    points = _joined(load_point(r) for r in ok.to_dict("records"))
    threads = _joined(int(t) for t in ok["threads"].dropna()) if "threads" in ok else ""
    load = [_joined(ok["scenario"]), _joined(ok["driver"]), points]
    spread = _joined(int(g) for g in ok["generators"].dropna() if g > 1) if "generators" in ok else ""
    if spread:  # threads are each generator's (docs/generators.md)
        load.append(f"spread over {spread} generators")
    if threads:
        load.append(f"{threads} load thread{'' if threads == '1' else 's'}{' each' if spread else ''}")
    durations = _joined(f"{float(d):g}" for d in ok["duration"].dropna())
    if durations:
        load.append(f"{durations} s measured per run")
    return ", ".join(filter(None, load))


def _placement(ok) -> str:
    """The server's cores and the load tool's, and the backend that placed them."""
    server_cores = _joined(_cores(c) for c in ok["server_cpus"])
    load_cores = _joined(_cores(c) for c in ok["load_cpus"])
    backend = _joined(ok["backend"])
    where = f"{backend} processes" if backend == "local" else f"backend {backend}"
    return (f"server on core{_plural(server_cores)} {server_cores or '-'}, "
            f"load on core{_plural(load_cores)} {load_cores or '-'} ({where})")


def _plural(cores: str) -> str:
    return "s" if "," in cores else ""


def _repeats(table, ok) -> str:
    """The repeats of each cell, the windows of each fork, and how many windows were used, left out, retaken and
    failed: the suite's own count (:class:`benchlab.analysis.validity.Tally`), so no two lines disagree."""
    from ..analysis.validity import Tally
    from .charts.frames import most_repeats

    windows = int(ok["window"].max()) if "window" in ok and ok["window"].notna().any() else 1
    each = f", each a fork of {windows} measured windows" if windows > 1 else ""
    return f"{most_repeats(table)} per server and setup{each}; {Tally.of(table)}"
