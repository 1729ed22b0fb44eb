"""The common rate of a cost comparison, ``rates="auto"``: one paced rate every server carries.

CPU per request compares servers at one offered rate (HttpArena's method, docs/cost.md), and that rate must be one
the slowest server keeps with room to spare, else its figure is a queue's. ``compare(load="rate", rates="auto")``
finds it before the first round, on this machine, with the comparison's own options:

1. each server's closed-loop rate: per server one fork, warmed as the comparison warms its forks, then one window of
   its load point in a closed loop (wrk, or h2load over HTTP/2, at its ``connections``);
2. the rate offered is :data:`SHARE` of the slowest server's;
3. the load tool is tried at that rate against the last server's fork (every server is then at most :data:`SHARE`
   busy, so what falls short is the tool): a try that leaves the load tool busier than ``generator_bound`` allows, or
   sends or keeps under 99% of the rate, lowers it to :data:`LOWER` of what was sent, at most :data:`TRIES` times.

What it found is ``rate.json`` in the comparison's folder, read again when the comparison resumes (the same rate,
the same runs), and every window's ``metadata["common_rate"]``, which the header says: the rate, and whether the
servers or the load tool set it. The pilot's forks enter no statistic.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
from pathlib import Path

from ..analysis.cost import offered_text
from ..errors import LoadError, ResultsError, UsageError
from ..store import locks
from ..store.files import write_atomic
from . import cost, drivers
from .fork import Fork
from .spec import RunSpec, check_tools
from .window import measure

log = logging.getLogger("benchlab")

#: The share of the slowest server's closed-loop rate offered to every server (issue 49: "say 60%").
SHARE = 0.6
#: A rate the load tool fell short of is lowered to this share of what it sent, and tried again ...
LOWER = 0.9
#: ... at most this many times in all.
TRIES = 3
#: The file of the comparison's folder that keeps what was found.
FILE = "rate.json"


def found(folder: Path) -> dict | None:
    """What an earlier start of this comparison found (its ``rate.json``), or None; a damaged file names itself."""
    path = folder / FILE
    if not path.is_file():
        return None
    try:
        kept = json.loads(path.read_text())
        float(kept["rate"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ResultsError(f"{path} is damaged ({exc}): remove it to measure the common rate again") from None
    return kept


def settle(closed: list[RunSpec], paced: RunSpec, folder: Path, *, echo=log.warning) -> dict:
    """The common rate, from one fork of each server in ``closed`` (closed-loop specs, one per server) and the load
    tool tried at ``paced``'s load (the rate model's spec of the last server): ``{"rate", "by", "share",
    "closed", "tries", "seconds"}``, also written to ``folder/rate.json``. ``by`` is "servers" or "load tool"."""
    kept = found(folder)
    if kept is not None:
        echo(f"rates=auto: {kept['rate']:,.0f} req/s, as found before ({folder / FILE})")
        return kept
    for spec in (*closed, paced):
        check_tools(spec)
    began, served, tries = time.monotonic(), {}, []
    for number, spec in enumerate(closed):
        last = number == len(closed) - 1
        one = Fork(spec, [(folder / "rate" / spec.server.name, f"rate-{spec.server.name}")], echo=echo)
        with locks.cores(one.pinned, echo=echo), one:
            one.start()
            one.warm()
            served[spec.server.name] = _rps(one, spec)
            echo(f"rates=auto: {spec.server.name} served {served[spec.server.name]:,.0f} req/s in a closed loop "
                 f"at {spec.load.connections} connections")
            if last:
                slowest = min(served, key=served.__getitem__)
                tries = tried(_at(one, paced), SHARE * served[slowest], load_cores=len(paced.load_cpus),
                              echo=echo)
    if not tries[-1]["passed"]:
        why = "; ".join(f"{t['rate']:,.0f} req/s: {t['why']}" for t in tries)
        raise LoadError(f"rates=auto: the load tool kept none of the rates tried ({why}): give it more cores "
                        "(load_cpus, load_hosts) or a lower rates=[...]")
    slowest = min(served, key=served.__getitem__)
    result = {"rate": tries[-1]["rate"], "by": "servers" if len(tries) == 1 else "load tool", "share": SHARE,
              "slowest": slowest, "closed": served, "connections": closed[0].load.connections, "tries": tries,
              "seconds": round(time.monotonic() - began, 1)}
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / FILE, json.dumps(result, indent=2) + "\n")
    echo(f"rates=auto: {offered_text(result)}")
    return result


def _rps(one: Fork, spec: RunSpec) -> float:
    """The closed-loop rate of one window of the warm fork ``one``."""
    metrics = measure(spec, one.driver, one.instance, one.runner, one.jvm, one.windows[0][0], waited=0.0,
                      echo=one.echo).metrics
    rps = metrics.get("rps")
    if not rps or not one.instance.alive():
        raise LoadError(f"rates=auto: {spec.server.name} served nothing in its closed-loop window: see "
                        f"{one.windows[0][0]}")
    return float(rps)


def _at(one: Fork, paced: RunSpec):
    """``measure_at(rate)``: the metrics of one window of ``paced``'s load at ``rate`` against the warm fork ``one``."""
    driver = drivers.get(paced.driver, "rate")

    def measure_at(rate: float) -> dict:
        spec = dataclasses.replace(paced, load=dataclasses.replace(paced.load, rate=round(rate, 1)))
        return measure(spec, driver, one.instance, one.runner, one.jvm, one.windows[0][0], waited=0.0,
                       echo=one.echo).metrics
    return measure_at


def tried(measure_at, rate: float, *, load_cores: int = 1, echo=log.info) -> list[dict]:
    """The load tool at ``rate`` (``measure_at(rate)``: a window's metrics), lowered to :data:`LOWER` of what it
    sent while it falls short, at most :data:`TRIES` times: each try's ``{"rate", "sent_rps", "achieved_rps",
    "passed", "why"}``, the last one passed unless every one failed.

    >>> tool = lambda rate: {"target_rps": rate, "sent_rps": min(rate, 10_000), "achieved_rps": min(rate, 10_000),
    ...                      "p99": 0.001, "requests": 1}
    >>> [(t["rate"], t["passed"]) for t in tried(tool, 18_000)]
    [(18000.0, False), (9000.0, True)]
    """
    tries: list[dict] = []
    for _ in range(TRIES):
        metrics = measure_at(round(rate, 1))
        ok, why = cost.passes(metrics, "p99", math.inf, load_cores=load_cores)
        tries.append({"rate": round(float(rate), 1), "sent_rps": metrics.get("sent_rps"),
                      "achieved_rps": metrics.get("achieved_rps"), "passed": ok, "why": why})
        echo(f"rates=auto: the load tool at {rate:,.0f} req/s: " + ("kept it" if ok else why))
        if ok:
            break
        rate = LOWER * min(rate, metrics.get("sent_rps") or rate)
    return tries


def check(*, cells: int, remote: bool = False) -> None:
    """``rates="auto"`` finds one rate for one cell, on this machine; said before anything starts
    (docs/bad-input.md; its load model is checked with the comparison's design, :func:`~.matrix.check_design`)."""
    if cells != 1:
        raise UsageError("rates='auto' finds one rate for one cell (one scenario, one connection count, one core "
                         "set): give one, or rates=[...]")
    if remote:
        raise UsageError("rates='auto' measures the common rate on this machine: with hosts=, give rates=[...]")


def prepare(comparison, results_dir, *, remote: bool, progress: bool):
    """``(comparison, folder, notes)``: with ``rates="auto"``, the comparison at the common rate found for it, the
    folder that keeps it and the note every window carries (``{"common_rate": ...}``); else the comparison as it
    is, None and no note."""
    from ..schema import AUTO
    from ..store.files import results_home
    from .matrix import matrix, suite_id

    if comparison.rates != AUTO:
        return comparison, None, {}
    closed = matrix(comparison.changed(load="duration", rates=None, slo=None, driver=None), 1)
    check(cells=len(closed) // len({spec.server.name for _, spec in closed}), remote=remote)
    base = results_home(results_dir) if results_dir is not None else \
        results_home(None) / f"compare-{suite_id(closed)}-rate-auto"
    last = closed[-1][1].server.name  # the load tool is tried against the last pilot fork, still warm
    paced = next(spec for _, spec in matrix(comparison.changed(rates=[1.0]), 1) if spec.server.name == last)
    with locks.ResultsWriter(base):
        common = settle([spec for _, spec in closed], paced, base, echo=log.warning if progress else log.info)
    return comparison.changed(rates=[common["rate"]]), base, {"common_rate": common}
