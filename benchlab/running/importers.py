"""Bring results made elsewhere into benchlab, so they compare alongside new runs."""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
from pathlib import Path

from ..errors import UsageError
from ..schema import SECONDS
from ..store.files import slug, under
from ..store.results import Run, save


def _params(server: str, scenario: str, driver: str, load: str, **values) -> dict:
    params: dict = {"server": server, "scenario": scenario, "driver": driver, "load": load, "backend": "imported",
              "connections": None, "threads": None, "users": None, "loops": None, "rate": None,
              "duration": None, "warmup": None, "timeout": None, "server_cpus": None, "load_cpus": None,
              "load_cores": None, "memory": None, "jvm_opts": [], "repeat": 1}
    params.update({k: v for k, v in values.items() if v is not None})
    return params


def _store(record: Run, results_dir, raw_name: str, text: str) -> Run:
    """With ``results_dir``, keep the run (and the text it came from) where :func:`benchlab.load` finds it."""
    if results_dir is not None:
        directory = under(results_dir, record.id)  # the id is a slug already; checked again, as every folder is
        directory.mkdir(parents=True, exist_ok=True)
        (directory / raw_name).write_text(text)
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


def published(experiment: str = "wrk"):
    """The published figures of ``experiment`` ("wrk" or "jmeter") from ``data/published/`` as a frame."""
    import pandas as pd

    from .. import home

    path = home.published_dir() / f"{experiment}.csv"
    if not path.exists():
        raise UsageError(f"no published experiment {experiment!r}: choose wrk or jmeter (files in {path.parent})")
    return pd.read_csv(path)
