"""Bring results made elsewhere into benchlab, so they compare alongside new runs."""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
from pathlib import Path

from ..errors import UsageError
from ..schema import PERCENTILE_COLUMNS, SECONDS
from ..store.files import slug, under
from ..store.histogram import Histogram
from ..store.results import Run, save


def _params(server: str, scenario: str, driver: str, load: str, **values) -> dict:
    params: dict = {"server": server, "scenario": scenario, "driver": driver, "load": load, "backend": "imported",
              "connections": None, "threads": None, "users": None, "loops": None, "rate": None,
              "duration": None, "warmup": None, "timeout": None, "server_cpus": None, "load_cpus": None,
              "load_cores": None, "memory": None, "jvm_opts": [], "repeat": 1}
    params.update({k: v for k, v in values.items() if v is not None})
    return params


def _store(record: Run, results_dir, raw_name: str, text: str | bytes, histogram: Histogram | None = None) -> Run:
    """With ``results_dir``, keep the run (and the text it came from, and its histogram) where
    :func:`benchlab.load` finds it; run.json last, as a run of benchlab's own."""
    if results_dir is not None:
        directory = under(results_dir, record.id)  # the id is a slug already; checked again, as every folder is
        directory.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            (directory / raw_name).write_bytes(text)
        else:
            (directory / raw_name).write_text(text)
        if histogram is not None:
            histogram.save(directory)
        save(record, directory)
    return record


def import_wrk(text: str, *, server: str, label: str | None = None, scenario: str = "hello", repeat: int = 1,
               results_dir: str | Path | None = None) -> Run:
    """A :class:`Run` from a wrk ``--latency`` text report you already have.

    The threads, connections and duration come from the report's own lines. With ``results_dir`` the
    run is also stored there, so :func:`benchlab.load` reads it with the rest.

    Example
    -------
    >>> import benchlab
    >>> run = benchlab.import_wrk(open("tomcat-1.txt").read(), server="spring-tomcat",
    ...                           label="published")   # doctest: +SKIP
    """
    from .drivers.wrk import parse_text

    if not server:
        raise UsageError("import_wrk needs server=..., the name to file the run under")
    metrics = parse_text(text)
    shape = re.search(r"(\d+) threads and (\d+) connections", text)
    running = re.search(r"Running (\d+(?:\.\d+)?)(s|m|h) test @ (\S+)", text)
    duration = None
    if running:
        duration = float(running.group(1)) * SECONDS[running.group(2)]
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    run_id = slug(f"import-{server}-{scenario}-r{repeat}-{digest}")
    record = Run(
        id=run_id,
        params=_params(server, scenario, "wrk", "duration", repeat=repeat, duration=duration,
                       threads=int(shape.group(1)) if shape else None,
                       connections=int(shape.group(2)) if shape else None),
        metrics={**{k: None for k in ("startup_ms", "target_rps")}, **metrics},
        metadata={"imported": {"source": "wrk text report", "url": running.group(3) if running else None}},
        label=label, key=f"import-{server}-{scenario}", suite=label,
        started_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds"),
    )
    return _store(record, results_dir, "wrk.out", text)


def import_jtl(jtl: str | Path, *, server: str, label: str | None = None, scenario: str = "reflect",
               users: int | None = None, loops: int | None = None, repeat: int = 1,
               results_dir: str | Path | None = None) -> Run:
    """A :class:`Run` from a JMeter JTL (CSV with its header row): a path or the text itself.

    Example
    -------
    >>> import benchlab
    >>> run = benchlab.import_jtl("results.jtl", server="spring-undertow", users=100, loops=1000)  # doctest: +SKIP
    """
    from .drivers.jmeter import parse

    if not server:
        raise UsageError("import_jtl needs server=..., the name to file the run under")
    text = str(jtl)
    if isinstance(jtl, Path) or ("\n" not in text and Path(text).exists()):
        text = Path(jtl).read_text()
    metrics = parse(text)
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    run_id = slug(f"import-{server}-{scenario}-r{repeat}-{digest}")
    record = Run(
        id=run_id,
        params=_params(server, scenario, "jmeter", "count", repeat=repeat, users=users, loops=loops,
                       connections=users),
        metrics={**{k: None for k in ("startup_ms", "target_rps")}, **metrics},
        metadata={"imported": {"source": "JMeter JTL"}},
        label=label, key=f"import-{server}-{scenario}", suite=label,
        started_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds"),
    )
    return _store(record, results_dir, "results.jtl", text)


def import_hdr(log: str | Path, *, server: str, label: str | None = None, scenario: str = "hello",
               driver: str = "hdrhistogram", connections: int | None = None, rate: float | None = None,
               unit: str = "us", tag: str | None = None, duration: str | float | None = None, repeat: int = 1,
               results_dir: str | Path | None = None) -> Run:
    """A :class:`Run` from an HdrHistogram log (wrk2, Hyperfoil, HdrHistogram's tools, :func:`benchlab.export_hdr`).

    Its intervals are added (HdrHistogram's add) into the run's latency, kept in benchlab's buckets
    (``latency.json``) with the log itself beside it (``latency.hlog``). ``unit`` is what the log's whole
    numbers count: "us" (wrk2's), "ns" (Hyperfoil's, HdrHistogram's Java tools') or "ms"; a log benchlab wrote
    says its own, and a different ``unit`` is refused. The requests are the latencies recorded, over the
    seconds the intervals cover (or ``duration``, where they do not say); ``tag`` picks one tag of a log
    that has several. ``driver`` names the tool that recorded the log; ``connections`` and ``rate`` file it in
    the cell it measured. Percentiles are within HdrHistogram's bucket and benchlab's 0.5%
    (docs/hdrhistogram.md). With ``results_dir`` the run is also stored there, for :func:`benchlab.load`.

    Example
    -------
    >>> import benchlab
    >>> run = benchlab.import_hdr("wrk2.hlog", server="nginx", driver="wrk2", rate=2000,
    ...                           results_dir="data/results/imported")   # doctest: +SKIP
    """
    from ..store import hdrlog
    from .load import parse_duration

    if not server:
        raise UsageError("import_hdr needs server=..., the name to file the run under")
    given = None if duration is None else parse_duration(duration)
    found = hdrlog.read(log, unit=unit, tag=tag)
    seconds = given or found.covered
    if not seconds:
        raise UsageError(f"{log}: its intervals cover no time (their lengths are 0): give duration=, the time its "
                         "latencies were recorded over, such as '60s'")
    h = found.histogram
    metrics = {"requests": h.count, "elapsed_s": seconds, "rps": h.count / seconds, "lat_min": h.min,
               "lat_mean": h.mean, "lat_stdev": found.stdev, "lat_max": h.max, "target_rps": rate,
               **{name: float(v) for name, v in zip(PERCENTILE_COLUMNS, h.percentiles(PERCENTILE_COLUMNS.values()))}}
    digest = hashlib.sha256(found.raw + str(tag).encode()).hexdigest()[:10]
    started = _dt.datetime.fromtimestamp(found.start, _dt.timezone.utc) if found.start is not None else _now()
    span = found.end - found.start if found.start is not None and found.end is not None else seconds
    record = Run(
        id=slug(f"import-{server}-{scenario}-r{repeat}-{digest}"),
        params=_params(server, scenario, driver, "rate" if rate else "duration", repeat=repeat, duration=seconds,
                       connections=connections, rate=rate),
        metrics=metrics,
        metadata={"imported": {"source": "HdrHistogram log", "file": Path(log).name, "unit": unit, "tag": tag,
                               "digits": found.digits, "intervals": found.intervals}},
        label=label, key=f"import-{server}-{scenario}", suite=label,
        started_at=started.isoformat(timespec="milliseconds"),
        finished_at=(started + _dt.timedelta(seconds=span)).isoformat(timespec="milliseconds"),
    )
    return _store(record, results_dir, "latency.hlog", found.raw, histogram=h)


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc)


def published(experiment: str = "wrk"):
    """The published figures of ``experiment`` ("wrk" or "jmeter") from ``data/published/`` as a frame."""
    import pandas as pd

    from .. import home

    path = home.published_dir() / f"{experiment}.csv"
    if not path.exists():
        raise UsageError(f"no published experiment {experiment!r}: choose wrk or jmeter (files in {path.parent})")
    return pd.read_csv(path)
