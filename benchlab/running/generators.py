"""One load spread over several generators (``load_hosts``): split, started together, each watched, merged exactly.

A generator is ``"local"`` (the load tool as a local process, pinned to its share of ``load_cpus``) or a docker
engine's url (wrk in a container there, pinned to ``load_cpus`` on that engine's machine). wrk's connections or
vegeta's rate are split across the generators as evenly as whole numbers allow; several local generators share
the load cores out when there are enough of them, else each runs on all of them (the run's facts say which).
Each generator prepares its command, then all wait at one barrier and start together. The monitor samples every
generator's own CPU, so each is judged busy on its own cores (``generator_busy``, the busiest one's share, is
what the ``generator_bound`` flag reads). Requests, bytes and errors add up; the latency histograms merge by
adding their counts (:class:`benchlab.store.histogram.Histogram`: exact counts, min, max and mean, percentiles
within 0.5%); each generator's own output, metrics and histogram stay in its folder ``generator-<k>``.
"""

from __future__ import annotations

import dataclasses
import math
import os
import signal
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import LoadError, UsageError
from ..schema import ERROR_COLUMNS, PERCENTILE_COLUMNS
from ..store.histogram import Histogram
from ..store.histogram import read as read_histogram
from . import drivers
from .load import Load

if TYPE_CHECKING:
    from .backends.base import DockerOptions

LOCAL = "local"
#: The load tools a spread load runs, and the load model each splits.
SPLITS = {"wrk": "duration", "vegeta": "rate"}
#: The engine urls a docker generator may have.
SCHEMES = ("unix://", "tcp://", "ssh://")
#: How long generators wait for each other at the start; preparing a container takes about a second.
BARRIER_S = 60.0


@dataclass(frozen=True)
class Generator:
    """One generator of a spread load: its number (from 1), where it runs, its cores and its share of the load."""

    number: int
    host: str
    cpus: tuple[int, ...]
    load: Load
    shared_cores: bool = False

    @property
    def folder(self) -> str:
        return f"generator-{self.number}"


def shares(total: int, n: int) -> list[int]:
    """``total`` split in ``n`` whole parts as evenly as can be, the larger first.

    >>> shares(10, 3)
    [4, 3, 3]
    """
    return [total // n + (1 if i < total % n else 0) for i in range(n)]


def hosts(load_hosts) -> tuple[str, ...]:
    """The generators' hosts as given (a list, or one comma-separated text), each ``local`` or an engine url."""
    if load_hosts is None:
        return ()
    given = load_hosts.split(",") if isinstance(load_hosts, str) else list(load_hosts)
    found = tuple(str(h).strip() for h in given)
    for host in found:
        if host != LOCAL and not host.startswith(SCHEMES):
            raise UsageError(f"load_hosts: {host!r} is neither 'local' nor a docker engine url (unix://, tcp:// or "
                             "ssh://): name each generator so")
    return found


def check(found: tuple[str, ...], *, driver: str, load: Load, docker: DockerOptions) -> None:
    """Refuse a spread load benchlab cannot run, before anything starts."""
    if not found:
        return
    n = len(found)
    if driver not in SPLITS:
        raise UsageError(f"load_hosts spreads wrk or vegeta, not {driver} yet: use driver='wrk' (load='duration') "
                         "or driver='vegeta' (load='rate'), or drop load_hosts")
    if load.model != SPLITS[driver]:
        raise UsageError(f"load_hosts splits a duration load's connections (wrk) or a rate (vegeta), not a "
                         f"{load.model} load: use load='duration' or load='rate', or drop load_hosts")
    if driver == "vegeta" and any(h != LOCAL for h in found):
        raise UsageError("a docker engine's generator runs wrk only: give vegeta local generators "
                         "(load_hosts=local,local)")
    if docker.load_in_container or docker.load_docker_host:
        raise UsageError("load_hosts places the load itself: drop load_in_container and load_docker_host")
    if driver == "wrk" and load.connections < n:
        raise UsageError(f"connections={load.connections} cannot be split across {n} generators: give at least {n} "
                         "connections, or fewer load_hosts")
    if driver == "vegeta" and (load.rate or 0) < n:
        raise UsageError(f"rate={load.rate:g} cannot be split across {n} generators: give at least {n} requests/s, "
                         "or fewer load_hosts")


def check_engines(found: tuple[str, ...], *, allow_remote: bool) -> None:
    """Each docker generator's engine is on this machine (or ``allow_remote``) and answers."""
    from .backends.docker import engine

    for url in dict.fromkeys(h for h in found if h != LOCAL):
        engine.check_engine(url, allow_remote=allow_remote, role="load")
        engine.connect(url, timeout=10).close()


def default_threads(found: tuple[str, ...], connections: int, load_cores: tuple[int, ...]) -> int:
    """Each generator's threads when none are asked: one per core it runs on, at most one per connection."""
    local = sum(h == LOCAL for h in found)
    cores = len(load_cores) // local if local and len(load_cores) >= local else len(load_cores)
    return max(1, min(cores, connections // len(found)))


def plan(found: tuple[str, ...], load: Load, load_cpus: tuple[int, ...]) -> list[Generator]:
    """Each generator's cores and share of ``load``; its threads at most its connections."""
    n = len(found)
    local = [i for i, h in enumerate(found) if h == LOCAL]
    shared = len(local) > len(load_cpus)
    cores: dict[int, tuple[int, ...]] = {}
    if local and not shared:
        at = 0
        for i, size in zip(local, shares(len(load_cpus), len(local))):
            cores[i], at = tuple(load_cpus[at:at + size]), at + size
    if load.model == "rate":
        whole = int(load.rate or 0)
        rates = [float(r) for r in shares(whole, n)]
        rates[0] += float(load.rate or 0) - whole  # a fraction of a request/s goes to the first
        loads = [dataclasses.replace(load, rate=r) for r in rates]
    else:
        loads = [dataclasses.replace(load, connections=c, threads=min(load.threads, c))
                 for c in shares(load.connections, n)]
    return [Generator(i + 1, h, cores.get(i, tuple(load_cpus)), loads[i], shared and h == LOCAL)
            for i, h in enumerate(found)]


class _Watch:
    """What a generator's runner registers its probe on (``monitor.watch("load", probe)``), for the spread's probe."""

    def __init__(self, here: bool = True) -> None:
        self.here = here  # on this machine: its CPU is on the run's load cores
        self.probe = None
        self.cpu: list[float] = []
        self.last: tuple[float, float] | None = None  # (cpu, rss): a container's stats come once a second

    def watch(self, role: str, probe) -> None:
        self.probe = probe


class _Sum:
    """The monitor's ``load`` probe of a spread load: every generator's probe read once a tick, each one's own samples
    kept, the sum of those on this machine returned (what the run's load cores ran; a generator without a new sample
    counts at its last; bytes read only when every one of them says them)."""

    def __init__(self, watches: list[_Watch]):
        self.watches = watches

    def __call__(self):
        cpu = rss = io = 0.0
        io_known = True
        for w in self.watches:
            one = w.probe() if w.probe is not None else (None, None)
            if one[0] is not None or one[1] is not None:
                w.cpu.append(one[0] or 0.0)
                w.last = (one[0] or 0.0, one[1] or 0.0)
            if not w.here:
                continue
            if w.last is not None:
                cpu, rss = cpu + w.last[0], rss + w.last[1]
            if len(one) > 2 and one[2] is not None:
                io += one[2]
            else:
                io_known = False
        if all(w.last is None for w in self.watches if w.here):
            return (None, None, None)
        return (cpu, rss, io if io_known else None)


def execute(spec, driver, url: str, run_dir: Path, *, monitor, on_start=None) -> tuple[dict, list[dict]]:
    """Run the spread load of ``spec`` once, measured: ``(merged metrics, each generator's facts)``; the merged
    histogram saved as ``run_dir/latency.json``."""
    from .backends.docker.engine import engine_address

    gens = plan(spec.load_hosts, spec.load, spec.load_cpus)
    watches = [_Watch(here=g.host == LOCAL or engine_address(g.host) is None) for g in gens]  # on this machine
    monitor.watch("load", _Sum(watches))
    runners, names = _runners(gens, run_dir.name)
    barrier = threading.Barrier(len(gens))
    results: list = [None] * len(gens)
    errors: list = [None] * len(gens)
    pids: list[int] = []

    def started(pid: int) -> None:
        pids.append(pid)
        if on_start is not None:
            on_start(pid)

    def one(i: int) -> None:
        g = gens[i]

        def runner(argv, *, cpus, timeout, monitor=None, workdir=None):
            if runners[i] is None:
                barrier.wait(BARRIER_S)
                return drivers.run_local(argv, cpus=cpus, timeout=timeout, monitor=monitor, workdir=workdir,
                                         on_start=started)
            return runners[i](argv, cpus=cpus, timeout=timeout, monitor=monitor, workdir=workdir,
                              before_start=lambda: barrier.wait(BARRIER_S))

        try:
            results[i] = drivers.execute(driver, url, spec.scenario, g.load, cpus=g.cpus, workdir=run_dir / g.folder,
                                         phase="measure", monitor=watches[i], runner=runner)
        except BaseException as exc:  # told to the caller below
            errors[i] = exc
            barrier.abort()  # the others do not start, or have started and end at their duration

    threads = [threading.Thread(target=one, args=(i,), name=f"benchlab-generator-{i + 1}", daemon=True)
               for i in range(len(gens))]
    try:
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.2)
    except BaseException:
        _stop(pids, runners, names)
        raise
    _raise(gens, errors)
    return merge(gens, [r[0] for r in results], run_dir), facts(gens, [r[0] for r in results], watches, run_dir)


def _runners(gens: list[Generator], run_id: str) -> tuple[list, list]:
    """Each generator's runner (None: a local process) and its container's name."""
    from .backends.docker import containers, engine

    runners: list = []
    names: list = []
    clients: dict = {}
    for g in gens:
        if g.host == LOCAL:
            runners.append(None)
            names.append(None)
            continue
        if g.host not in clients:
            clients[g.host] = engine.connect(g.host)
            engine.remove_stale(clients[g.host])
        own = f"{run_id}-g{g.number}"
        labels = {engine.RUN_LABEL: run_id, engine.OWNER_LABEL: engine.owner()}
        runners.append(containers.ContainerLoad(clients[g.host], run_id=own, labels=labels))
        names.append(engine.container_name(own, "-load-1"))
    return runners, names


def _stop(pids: list[int], runners: list, names: list) -> None:
    """An interrupt: every generator's local process group killed, its container removed."""
    from .backends.docker import engine

    for pid in pids:
        try:
            os.killpg(pid, signal.SIGKILL)  # process.start gave it its own session
        except (ProcessLookupError, PermissionError):
            pass
    for runner, name in zip(runners, names):
        if runner is not None:
            engine.remove(runner.client, None, name)


def _raise(gens: list[Generator], errors: list) -> None:
    """The first generator's own error (the others only saw the barrier broken), naming it."""
    own = [(g, e) for g, e in zip(gens, errors) if e is not None and not isinstance(e, threading.BrokenBarrierError)]
    if own:
        g, exc = own[0]
        if isinstance(exc, LoadError):
            raise LoadError(f"generator {g.number} ({g.host}): {exc}") from None
        raise exc
    if any(e is not None for e in errors):
        raise LoadError(f"the generators did not all start within {BARRIER_S:.0f} s")


def merge(gens: list[Generator], results: list[dict], run_dir: Path) -> dict:
    """The run's metrics from its generators': counts added, rates added, the latency from the merged histograms
    (saved as the run's), the standard deviation pooled exactly from each one's count, mean and deviation."""
    total = lambda key: sum(r[key] for r in results)  # noqa: E731
    requests, received = total("requests"), total("bytes")
    metrics: dict = {"requests": requests, "bytes": received, "elapsed_s": max(r["elapsed_s"] for r in results),
                     "rps": total("rps"), "bytes_per_request": received / requests if requests else None,
                     **{c: total(c) for c in ERROR_COLUMNS}}
    if all(r.get("target_rps") for r in results):
        achieved = total("achieved_rps") if all(r.get("achieved_rps") for r in results) else None
        metrics.update(target_rps=total("target_rps"), sent_rps=total("sent_rps"), achieved_rps=achieved,
                       success_ratio=sum(r["success_ratio"] * r["requests"] for r in results) / requests)
    notes = [f"generator {g.number}: {r['note']}" for g, r in zip(gens, results) if r.get("note")]
    metrics["note"] = "; ".join(notes) or None
    histograms = [read_histogram(run_dir / g.folder) for g in gens]
    if any(h is None for h in histograms):
        return metrics  # a tool that kept no histogram: no merged latency rather than a wrong one
    merged = Histogram.merge(h for h in histograms if h is not None)
    merged.save(run_dir)
    metrics.update(lat_min=merged.min, lat_max=merged.max, lat_mean=merged.mean,
                   lat_stdev=pooled_stdev([(h.count, h.mean, r["lat_stdev"]) for h, r in zip(histograms, results)
                                           if h is not None]),
                   **dict(zip(PERCENTILE_COLUMNS, (float(v) for v in merged.percentiles(PERCENTILE_COLUMNS.values())))))
    return metrics


def pooled_stdev(groups: list[tuple[int, float, float]]) -> float | None:
    """The sample standard deviation of several groups' values together, from each one's ``(count, mean, stdev)``.

    >>> round(pooled_stdev([(2, 1.5, 0.7071067811865476), (2, 3.5, 0.7071067811865476)]), 6)  # 1, 2, 3, 4
    1.290994
    """
    groups = [(n, m, s) for n, m, s in groups if n]
    count = sum(n for n, _, _ in groups)
    if count < 2 or any(s is None or m is None for _, m, s in groups):
        return None
    mean = sum(n * m for n, m, _ in groups) / count
    squares = sum((n - 1) * s * s + n * (m - mean) ** 2 for n, m, s in groups)
    return math.sqrt(squares / (count - 1))


def facts(gens: list[Generator], results: list[dict], watches: list[_Watch], run_dir: Path) -> list[dict]:
    """Each generator's own figures, for the run's metadata; ``busy``: its CPU over the cores its threads could use."""
    out = []
    for g, r, w in zip(gens, results, watches):
        usable = min(g.load.threads, len(g.cpus)) if g.load.model != "rate" else len(g.cpus)
        cpu_mean = sum(w.cpu) / len(w.cpu) if w.cpu else None
        histogram = read_histogram(run_dir / g.folder)
        out.append({"generator": g.number, "host": g.host, "cpus": list(g.cpus), "shared_cores": g.shared_cores,
                    "connections": g.load.connections if g.load.model != "rate" else None,
                    "rate": g.load.rate, "threads": g.load.threads, "folder": g.folder,
                    "requests": r["requests"], "rps": r["rps"], "errors": sum(r[c] for c in ERROR_COLUMNS),
                    "p99": r.get("p99"), "latencies": histogram.count if histogram is not None else None,
                    "cpu_mean": cpu_mean, "cpu_max": max(w.cpu) if w.cpu else None, "cpu_samples": len(w.cpu),
                    "usable_cores": usable, "busy": cpu_mean / (100.0 * usable) if cpu_mean is not None else None})
    return out


def busiest(found: list[dict]) -> dict:
    """The metrics the ``generator_bound`` flag reads: the busiest generator's share of its cores and their count."""
    judged = [f for f in found if f["busy"] is not None]
    if not judged:
        return {"generator_busy": None, "generator_cores": None}
    top = max(judged, key=lambda f: f["busy"])
    return {"generator_busy": round(top["busy"], 4), "generator_cores": top["usable_cores"]}
