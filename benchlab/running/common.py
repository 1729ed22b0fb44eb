"""The common rate of a cost comparison, ``rates="auto"``: one paced rate every server carries.

CPU per request compares servers at one offered rate (HttpArena's method, docs/cost.md), and that rate must be one
the slowest server keeps with room to spare, else its figure is a queue's. ``compare(load="rate", rates="auto")``
finds it before the first round, on this machine, with the comparison's own options:

1. each server's closed-loop rate: per server one fork, the forks alive together and warmed in turn as the
   comparison warms its forks, then one window each of its load point in a closed loop (wrk, or h2load over
   HTTP/2, at its ``connections``);
2. :data:`SHARE` (60%) of the slowest server's is tried on every server at once, paced (vegeta);
3. a try is lowered to :data:`LOWER` of what was sent and made again, at most :data:`TRIES` times in all, where the
   load tool could not send it (busier than ``generator_bound`` allows, under 99% sent) or a server could not keep
   it (under 99% kept, errors). Each server's busy share at the rate is kept and said: a paced request costs more
   CPU than a closed-loop one, so 60% of the closed-loop rate is more than 60% of the core (measured here: 85-94%;
   docs/cost.md).

What it found is ``rate.json`` in the comparison's folder, read again when the comparison resumes (the same rate,
the same runs), and every window's ``metadata["common_rate"]``, which the header says: the rate, and what set it.
The pilot's forks enter no statistic.
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
from . import cost, drivers, rounds
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


def settle(closed: list[RunSpec], paced: dict[str, RunSpec], folder: Path, *, echo=log.warning) -> dict:
    """The common rate, from one fork of each server in ``closed`` (closed-loop specs, one per server) and each
    server's ``paced`` spec (its rate model's, by server name): ``{"rate", "by", "share", "slowest", "closed",
    "connections", "tries", "seconds"}``, also written to ``folder/rate.json``. ``by`` is "closed loop" (the rate is
    :data:`SHARE` of the slowest server's) or "load tool" (what lowered it)."""
    kept = found(folder)
    if kept is not None:
        echo(f"rates=auto: {kept['rate']:,.0f} req/s, as found before ({folder / FILE})")
        return kept
    for spec in (*closed, *paced.values()):
        check_tools(spec)
    began, served = time.monotonic(), {}
    forks = [Fork(spec, [(folder / "rate" / spec.server.name, f"rate-{spec.server.name}")], echo=echo)
             for spec in closed]
    with rounds.together(forks, echo=echo):  # alive together, warmed in turn: the tries reach every server warm
        broken = next((one.error for one in forks if one.error is not None), None)
        if broken is not None:  # a server that would not start or warm: no common rate without it
            raise broken
        for one in forks:
            name = one.spec.server.name
            served[name] = _rps(one, one.spec)
            echo(f"rates=auto: {name} served {served[name]:,.0f} req/s in a closed loop at "
                 f"{one.spec.load.connections} connections")
        tries = tried({one.spec.server.name: _at(one, paced[one.spec.server.name]) for one in forks},
                      SHARE * min(served.values()), load_cores=len(closed[0].load_cpus),
                      server_cores=len(closed[0].server_cpus), echo=echo)
    if not tries[-1]["passed"]:
        why = "; ".join(f"{t['rate']:,.0f} req/s: {t['why']}" for t in tries)
        raise LoadError(f"rates=auto: no rate tried was kept ({why}): give the load tool more cores "
                        "(load_cpus, load_hosts), or give rates=[...]")
    result = {"rate": tries[-1]["rate"], "by": "closed loop" if len(tries) == 1 else "load tool", "share": SHARE,
              "slowest": min(served, key=served.__getitem__), "closed": served,
              "connections": closed[0].load.connections, "tries": tries, "seconds": round(time.monotonic() - began, 1)}
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


def tried(measure_at: dict, rate: float, *, load_cores: int = 1, server_cores: int = 1, echo=log.info) -> list[dict]:
    """The rate tried on every server (``measure_at[server](rate)``: a window's metrics), and lowered while one falls
    short, at most :data:`TRIES` times: where the load tool could not send it or a server could not keep it
    (``cost.passes`` with no latency limit), to :data:`LOWER` of what was sent. Each try is ``{"rate", "passed",
    "why", "lowered_by", "servers": {server: {"sent_rps", "achieved_rps", "busy", "why"}}}`` (``busy``: the cores
    the server kept busy), the last one passed unless every one failed.

    >>> tool = lambda rate: {"target_rps": rate, "sent_rps": min(rate, 10_000), "achieved_rps": min(rate, 10_000),
    ...                      "p99": 0.001, "requests": 1, "server_cpu_mean": rate / 400}
    >>> [(t["rate"], t["passed"], t["lowered_by"], t["servers"]["a"]["busy"]) for t in tried({"a": tool}, 18_000)]
    [(18000.0, False, 'load tool', 0.45), (9000.0, True, None, 0.225)]
    """
    tries: list[dict] = []
    for _ in range(TRIES):
        rate = round(float(rate), 1)
        factor, whys, by, servers = 1.0, [], None, {}
        for name, at in measure_at.items():
            metrics = at(rate)
            ok, why = cost.passes(metrics, "p99", math.inf, load_cores=load_cores)
            busy = _busy(metrics) / server_cores
            if not ok:  # the server falling behind shows here too ("kept 97%"): lowered alike
                factor, by = min(factor, LOWER * min(rate, metrics.get("sent_rps") or rate) / rate), "load tool"
            whys += [f"{name} {why}"] if why else []
            servers[name] = {"sent_rps": metrics.get("sent_rps"), "achieved_rps": metrics.get("achieved_rps"),
                             "busy": round(busy, 3), "why": why}
        tries.append({"rate": rate, "passed": not whys, "why": "; ".join(whys), "lowered_by": by, "servers": servers})
        echo(f"rates=auto: {rate:,.0f} req/s: " + ("every server kept it" if not whys else "; ".join(whys)))
        if not whys:
            break
        rate *= factor
    return tries


def _busy(metrics: dict) -> float:
    """The cores the server kept busy over the load: its CPU seconds read before and after, over the load's time;
    the sampled mean where those are missing."""
    if metrics.get("server_cpu_s") is not None and metrics.get("elapsed_s"):
        return metrics["server_cpu_s"] / metrics["elapsed_s"]
    return (metrics.get("server_cpu_mean") or 0.0) / 100.0


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
    paced = {spec.server.name: spec for _, spec in matrix(comparison.changed(rates=[1.0]), 1)}
    with locks.ResultsWriter(base):
        common = settle([spec for _, spec in closed], paced, base, echo=log.warning if progress else log.info)
    return comparison.changed(rates=[common["rate"]]), base, {"common_rate": common}
