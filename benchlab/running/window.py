"""One measured window: a quiet look at the cores, the load with everything sampled, and the machine's part in it.

Before the load, the run's cores are looked at for half a second (:func:`benchlab.running.machine.wait_quiet`):
where other processes are busy there, benchlab waits for them (at most :data:`machine.WAIT_LIMIT` s, said in one
line) and then measures anyway, to be flagged if they go on. During the load the monitor samples the server's
and the load tool's process trees, benchlab's own process and what each group of cores did, a quarter second
at a time, with benchlab's own threads kept off the server's cores. After it, the window's series
(:mod:`benchlab.analysis.series`) gives the seconds other processes or the host took of the cores and the
deepest dip in the window's own throughput, stored with the run's metrics for the flags to read; when the
window was disturbed, the busiest other processes are named from ``/proc``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ..analysis import flags, series, steady
from ..analysis.disturbance import DISTURBED
from ..store import locks
from . import drivers, machine, perfdata
from .machine import SelfProbe
from .monitor import Monitor


@dataclass
class Measured:
    """What one window measured: its metrics, the monitor's rows and what shared its cores."""

    metrics: dict
    samples: list = field(default_factory=list)
    counters: list = field(default_factory=list)
    machine: list = field(default_factory=list)
    cores: dict = field(default_factory=dict)


def groups(spec) -> dict[str, tuple[int, ...]]:
    """The run's cores by who runs there; none where the server is on another machine (a remote docker engine)."""
    if spec.backend_options.get("docker_host"):
        return {}
    server = tuple(spec.server_cpus)
    return {"server": server, "load": tuple(c for c in spec.load_cpus if c not in server)}


def measure(spec, driver, instance, runner, jvm, run_dir: Path, *, waited: float) -> Measured:
    """Look for quiet, then measure one window of ``spec``'s load against ``instance``."""
    cores = {k: v for k, v in groups(spec).items() if v}
    pid = instance.metadata.get("pid") if spec.backend == "local" else None
    own = machine.tree(pid)
    before = machine.keep_off(spec.server_cpus, spec.load_cpus) if cores else None
    try:
        quiet = (machine.wait_quiet(cores, own, limit=machine.WAIT_LIMIT, share=series.OTHER_LIMIT) if cores
                 else {"waited_s": 0.0, "quiet": None})
        seen = machine.snapshot() if cores else {}
        measured = _load(spec, driver, instance, runner, jvm, run_dir, cores, pid, waited)
    finally:
        machine.restore(before)
    measured.metrics["quiet_wait_s"] = quiet["waited_s"]
    load_pid = measured.cores.pop("load_pid", None)
    if cores and _disturbed(measured.metrics, spec):
        everyone = own | {load_pid, _self()}
        found = machine.busiest(seen, machine.snapshot(), own=everyone,
                                cpus=[c for group in cores.values() for c in group])
        measured.metrics["others"] = machine.named(found) or None
    measured.cores.update(quiet=quiet, benchlab_cpus=sorted(_affinity(spec)) if cores else None)
    return measured


def _self() -> int:
    import os

    return os.getpid()


def _affinity(spec) -> set[int]:
    """Where benchlab's own threads ran during the window (:func:`machine.keep_off`'s choice)."""
    import os

    everyone = set(os.sched_getaffinity(0))
    spare = everyone - set(spec.server_cpus) - set(spec.load_cpus)
    return spare or (set(spec.load_cpus) - set(spec.server_cpus)) or everyone


def _load(spec, driver, instance, runner, jvm, run_dir: Path, cores: dict, pid, waited: float) -> Measured:
    """The window's load with its monitor: the metrics, the rows, and the cores' whole-window share."""
    cpus = sorted({*spec.server_cpus, *spec.load_cpus})
    began, busy = time.monotonic(), locks.cpu_seconds(cpus) if cores else None
    load_pid: list[int] = []
    with Monitor(spec.sample_interval) as monitor:
        monitor.watch("server", instance.probe)
        monitor.watch("benchlab", SelfProbe())
        monitor.watch_counters(jvm)
        if cores:
            monitor.watch_cores(cores)
        metrics, _raw = drivers.execute(driver, instance.url, spec.scenario, spec.load, cpus=spec.load_cpus,
                                        workdir=run_dir, phase="measure", monitor=monitor, runner=runner,
                                        on_start=load_pid.append)
    seconds = time.monotonic() - began
    samples = [s.astuple() for s in monitor.samples]
    measured = {"target_rps": None, **metrics, **monitor.summary(), **steady.drift(samples),
                **perfdata.summary(monitor.counters), "server_idle_s": steady.idle(samples)}
    server_cores, load_cores = len(cores.get("server", ())), len(cores.get("load", ())) or 1
    frame = series.window(samples, monitor.counters, monitor.machine, rps=metrics.get("rps"),
                          seconds=metrics.get("elapsed_s") or spec.load.planned_seconds,
                          server_cores=server_cores or 1, load_cores=load_cores,
                          benchlab_on_load=not (_affinity(spec) - set(spec.load_cpus)))
    measured.update(series.disturbance(frame, server_cores=server_cores or 1, load_cores=load_cores)
                    if monitor.machine else {})
    measured.update(series.dip(samples))
    on_cores = _shares(cpus, seconds, busy, frame, waited) if cores else {}
    on_cores["load_pid"] = load_pid[0] if load_pid else None
    return Measured(measured, samples, list(monitor.counters), list(monitor.machine), on_cores)


def _shares(cpus, seconds: float, busy: float | None, frame, waited: float) -> dict:
    """The whole window's share of the cores other processes took (``metadata.cores``), from the series: the run's
    own processes are its trees and benchlab, not every child benchlab ever reaped."""
    total = locks.cpu_seconds(cpus) - busy if busy is not None else 0.0
    width = float(frame["t"].diff().median()) if len(frame) > 1 else 1.0
    other = float((frame["other_server"].fillna(0) + frame["other_load"].fillna(0)).sum()) * width
    capacity = seconds * len(cpus)
    return {"cores": cpus, "waited_s": round(waited, 3), "busy_cpu_s": round(total, 3),
            "own_cpu_s": round(max(0.0, total - other), 3), "other_cpu_s": round(other, 3),
            "other_share": round(other / capacity, 4) if capacity > 0 else None}


def _disturbed(metrics: dict, spec) -> bool:
    """Whether the window's own figures carry a disturbance flag (:data:`DISTURBED`)."""
    from ..store.results import Run

    return bool(disturbed(Run(id="window", params=spec.params(), metrics=metrics, metadata={}).row()))


def disturbed(row: dict) -> list[tuple[str, str]]:
    """The disturbance flags (:data:`DISTURBED`) of a run's row (:meth:`Run.row`), with their explanations."""
    return [(flag, text) for flag, text in flags.run_flags(row) if flag in DISTURBED]
