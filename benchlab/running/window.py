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

import dataclasses
import datetime as _dt
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..analysis import flags, series, steady
from ..analysis.disturbance import DISTURBED
from ..errors import LoadError
from ..store import locks
from . import cost, drivers, generators, machine, perfdata
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
    #: each generator's own figures, when the load was spread over several (``load_hosts``)
    generators: list = field(default_factory=list)
    #: what the profiler recorded of a profiled window (:meth:`benchlab.running.profiler.Profiler.stop`)
    profile: dict = field(default_factory=dict)


def now() -> str:
    """The time now, as runs store it: UTC, ISO 8601, to the millisecond."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def files(run_dir: Path) -> tuple[str, ...]:
    """The files a run's folder holds beside its run.json."""
    return tuple(sorted(p.name for p in run_dir.iterdir() if p.is_file() and p.name != "run.json"))


def groups(spec) -> dict[str, tuple[int, ...]]:
    """The run's cores by who runs there; none where the server is on another machine (a remote docker engine) or
    is not benchlab's (``Server.from_url``: its process and its cores are unknown, so no CPU there is the run's
    own or another's to tell)."""
    if spec.docker.docker_host or not spec.server.starts:
        return {}
    server = tuple(spec.server_cpus)
    return {"server": server, "load": tuple(c for c in spec.load_cpus if c not in server)}


def measure(spec, driver, instance, runner, jvm, run_dir: Path, *, waited: float, on_second=None,
            echo=None, profiler=None) -> Measured:
    """Look for quiet, then measure one window of ``spec``'s load against ``instance``; ``on_second`` (a live
    view) is called each second of it with ``(t, bytes/s the load tool read, cores other processes took)``;
    ``profiler`` (:class:`benchlab.running.profiler.Profiler`) samples the server from the load's start to its end."""
    cores = {k: v for k, v in groups(spec).items() if v}
    pid = instance.metadata.get("pid") if spec.backend == "local" else None
    own = machine.tree(pid)
    before = machine.keep_off(spec.server_cpus, spec.load_cpus) if cores else None
    try:
        # benchlab's own process is no other: what it did just before (parsing the last window) ends as this begins
        quiet = (machine.wait_quiet(cores, own | {_self()}, limit=machine.WAIT_LIMIT, share=series.OTHER_LIMIT,
                                    echo=echo) if cores else {"waited_s": 0.0, "quiet": None})
        culprits = machine.Culprits(cores, own | {_self()}, series.OTHER_LIMIT) if cores else None
        measured = _load(spec, driver, instance, runner, jvm, run_dir, cores, pid, waited, culprits, on_second,
                         profiler)
    finally:
        machine.restore(before)
    measured.metrics["quiet_wait_s"] = quiet["waited_s"]
    measured.cores.pop("load_pid", None)
    if culprits is not None and _disturbed(measured.metrics, spec):
        culprits.read()  # what ran since the last read, to the window's end
        measured.metrics["others"] = machine.named(culprits.busiest()) or None
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


def _load(spec, driver, instance, runner, jvm, run_dir: Path, cores: dict, pid, waited: float,
          culprits=None, on_second=None, profiler=None) -> Measured:
    """The window's load with its monitor: the metrics, the rows, and the cores' whole-window share."""
    cpus = sorted({*spec.server_cpus, *spec.load_cpus})
    began, busy = time.monotonic(), locks.cpu_seconds(cpus) if cores else None
    load_pid: list[int] = []
    instance.probe()  # its CPU is a difference from the last reading: the first sample covers this window only
    cpu = instance.cpu_seconds()
    with Monitor(spec.sample_interval) as monitor:
        monitor.watch("server", instance.probe)
        monitor.watch("benchlab", SelfProbe())
        monitor.watch_counters(jvm)
        if cores:
            monitor.watch_cores(cores)
            monitor.culprits = culprits
        if on_second is not None:
            monitor.on_tick = _each_second(monitor, on_second)

        def started(pid: int) -> None:
            load_pid.append(pid)
            if culprits is not None:
                culprits.add(pid)

        spread: list = []
        if profiler is not None:
            profiler.start()
        try:
            if spec.load_hosts:
                metrics, spread = generators.execute(spec, driver, instance.url, run_dir, monitor=monitor,
                                                     on_start=started)
                metrics.update(generators.busiest(spread))
            else:
                metrics, _raw = drivers.execute(driver, instance.url, spec.scenario, spec.load, cpus=spec.load_cpus,
                                                workdir=run_dir, phase="measure", monitor=monitor, runner=runner,
                                                on_start=started)
        finally:  # stopped however the load ends: the server goes on to its next window unprofiled
            profile = profiler.stop() if profiler is not None else {}
    seconds = time.monotonic() - began
    samples = [s.astuple() for s in monitor.samples]
    measured = {"target_rps": None, **metrics, **cost.spent(cpu, instance.cpu_seconds(), metrics), **monitor.summary(),
                **steady.drift(samples),
                **perfdata.summary(monitor.counters), "server_idle_s": steady.idle(samples)}
    server_cores, load_cores = len(cores.get("server", ())), len(cores.get("load", ())) or 1
    frame = series.per_second(samples, monitor.counters, monitor.machine, rps=metrics.get("rps"),
                          seconds=metrics.get("elapsed_s") or spec.load.planned_seconds,
                          server_cores=server_cores or 1, load_cores=load_cores,
                          benchlab_on_load=not (_affinity(spec) - set(spec.load_cpus)))
    measured.update(series.disturbance(frame, server_cores=server_cores or 1, load_cores=load_cores)
                    if monitor.machine else {})
    measured.update(series.dip(samples))
    on_cores = _shares(cpus, seconds, busy, frame, waited) if cores else {}
    on_cores["load_pid"] = load_pid[0] if load_pid else None
    if profile:  # a window under the profiler: it enters no statistic (the flag profiled)
        measured.update(profiled=True, profile_samples=profile["samples"])
    return Measured(measured, samples, list(monitor.counters), list(monitor.machine), on_cores, spread, profile)


def _each_second(monitor, tell):
    """A monitor tick hook that tells ``tell(t, bytes/s read by the load tool, cores others took)`` once a second,
    from the samples of the second just past."""
    last = {"t": 0.0, "io": None}

    def tick(t: float) -> None:
        if t - last["t"] < 1.0:
            return
        loads = [s for s in monitor.samples if s.role == "load" and s.io is not None]
        io = loads[-1].io if loads else None
        rate = (io - last["io"]) / (t - last["t"]) if io is not None and last["io"] is not None else None
        busy = _means([(m[1], m[2]) for m in monitor.machine if m[0] > last["t"]])
        own = _means([(s.role, s.cpu or 0.0) for s in monitor.samples if s.t > last["t"]])
        other = max(0.0, sum(busy.values()) - sum(own.values())) / 100.0 if busy else None
        last.update(t=t, io=io)
        if rate is not None:
            tell(t, rate, None if other is None else round(other, 2))

    return tick


def _means(pairs: list[tuple[str, float]]) -> dict[str, float]:
    """The mean value of each key."""
    sums: dict[str, list[float]] = {}
    for key, value in pairs:
        sums.setdefault(key, []).append(value)
    return {key: sum(v) / len(v) for key, v in sums.items()}


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
    """The disturbance flags (:data:`DISTURBED`) of a run's row (:meth:`Run.row`), with their explanations: what a
    retake may measure away. A dip while the JIT compiled (``jit_active``) is the server still warming, not a
    disturbance: a retake would only measure a warmer server, and the window is flagged either way."""
    found = flags.run_flags(row)
    warming = any(flag == "jit_active" for flag, _ in found)
    return [(flag, text) for flag, text in found if flag in DISTURBED and not (flag == "dip" and warming)]


def take(fork, run_dir: Path, run_id: str, number: int):
    """``(record, retaken)``: window ``number`` of ``fork`` measured into ``run_dir`` and its record built (the fork
    stores it), and the windows it replaced. A window that was disturbed (:data:`DISTURBED`: other processes on its
    cores, steal, a dip) is kept beside the fork's windows as ``retaken`` (stored) and measured again, at most
    ``spec.retakes`` times; the one kept names the ones it replaced (``metadata["retook"]``)."""
    step = "measure" if len(fork.windows) == 1 else f"measure {number}/{len(fork.windows)}"
    retaken: list = []
    for attempt in range(fork.spec.retakes + 1):
        fork.phase(step if attempt == 0 else f"{step} (retake {attempt})")
        record = _record(fork, run_dir, run_id, number)
        why = disturbed(record.row())
        if not why or attempt == fork.spec.retakes:
            break
        retaken.append(_set_aside(record, attempt + 1, why, fork.spec.retakes, fork.echo))
    if retaken:
        record = dataclasses.replace(record, metadata={**record.metadata, "retook": [r.id for r in retaken]})
    return record, retaken


def _record(fork, run_dir: Path, run_id: str, number: int):
    from ..store.results import Run

    spec, instance = fork.spec, fork.instance
    started = now()  # the window's own; its fork's start is in its first window's metadata
    try:
        if not instance.alive():  # it may have died while other forks had the load
            raise fork.died()
        measured, found = _measured(fork, run_dir, number)
    except LoadError:
        if not instance.alive():  # the load tool failed because the server had died: say that
            raise fork.died() from None
        raise
    fork.waited = 0.0  # the wait for the cores came before the first window
    if not instance.alive():
        raise fork.died()
    warmed = fork.warmed
    if found:  # a capacity search: the rate found, and what stopped it
        measured.metrics.update(capacity_rps=found["capacity_rps"], capacity_by=found["capacity_by"],
                                search_steps=len(found["steps"]), search_s=found["search_s"])
    metrics = {**measured.metrics, "startup_ms": instance.startup_ms, "warmup_s": warmed["seconds"],
               "warm": warmed["steady"], "warmup_class": warmed.get("class"), "jit_quiet_s": warmed.get("jit_quiet_s"),
               "fork_s": round(fork.fork_s, 3)}
    first = number == 1
    metadata = {
        **fork.meta,
        **fork.notes,
        "backend": {**fork.backend.metadata(), **{k: v for k, v in instance.metadata.items() if k != "argv"},
                    "argv": instance.metadata.get("argv")},
        "cores": measured.cores,  # what else was busy on the run's cores while it measured
        # the fork's warm-up; its curve is kept once, in the fork's first window
        "warmup": warmed if first else {k: v for k, v in warmed.items() if k != "slices"},
        "server_alive_after_load": True,
        **({"generators": measured.generators} if measured.generators else {}),  # a spread load's, one by one
        **({"search": found} if found else {}),  # each step of a capacity search: its rate, latency, pass or why
        **({"profile": measured.profile} if measured.profile else {}),  # the profiler's record (profiler.FILE)
        **({"fork_started_at": fork.started_at} if first else {}),  # its wall time: benchlab.analysis.wall.span
    }
    return Run(id=run_id, params={**spec.params(fork.repeat), "window": number, "fork": fork.name},
               metrics=metrics, samples=tuple(measured.samples), counters=tuple(measured.counters),
               machine=tuple(measured.machine), metadata=metadata, suite=fork.suite, label=fork.label,
               key=fork.key, started_at=started, finished_at=now(), files=files(run_dir), directory=str(run_dir))


def _measured(fork, run_dir: Path, number: int) -> tuple[Measured, dict]:
    """The window's measurement, and ``{}``; with ``slo``, the held window of a capacity search and what it found
    (:func:`benchlab.running.cost.search`), each step a window of its own rate."""
    spec = fork.spec

    def at(load, profiler=None) -> Measured:
        return measure(dataclasses.replace(spec, load=load), fork.driver, fork.instance, fork.runner, fork.jvm,
                       run_dir, waited=fork.waited, on_second=_live(fork, number), echo=fork.echo, profiler=profiler)

    if spec.load.slo is None:
        return at(spec.load, fork.profiler(number, run_dir)), {}
    return cost.search(spec.load, at, load_cores=len(spec.load_cpus))


def _live(fork, number: int):
    """What a fork's live view (its ``on_slice``) is told each second of window ``number``: requests/s, from the
    bytes the load tool read over the bytes a request took in the warm-up's last slice, on the warm-up's clock;
    None where nobody watches."""
    if fork.on_slice is None:
        return None
    sized = [s.get("bytes_per_request") for s in fork.warmed.get("slices", []) if s.get("bytes_per_request")]
    sized += [r.metrics.get("bytes_per_request") for r in fork.records if r.metrics.get("bytes_per_request")]
    began = time.monotonic() - fork.warm_began

    def tell(t: float, rate: float, other) -> None:
        if sized:
            fork.on_slice({"t": round(began + t, 1), "phase": f"window {number}", "rps": rate / sized[-1],
                           "other_cpu": other})

    return tell


def _set_aside(record, attempt: int, why: list[tuple[str, str]], retakes: int, echo):
    """Keep a disturbed window beside its fork's windows as ``retaken`` (its folder renamed), so the retake has the
    folder; say so in one line. Returns the retaken record, stored."""
    import shutil

    from ..store.results import save

    run_dir = Path(record.directory or "")
    aside_id = f"{record.id}-retaken{attempt}"
    aside = run_dir.with_name(aside_id)
    if aside.exists():
        shutil.rmtree(aside)
    run_dir.rename(aside)
    run_dir.mkdir()
    kept = dataclasses.replace(record, id=aside_id, status="retaken", directory=str(aside),
                               metadata={**record.metadata, "retaken": {"attempt": attempt, "for": record.id,
                                                                        "flags": [flag for flag, _ in why]}})
    save(kept, aside)
    echo(f"benchlab: {record.id} was disturbed ({_what(why[0][1])}): measuring it again "
         f"(retake {attempt} of at most {retakes})")
    return kept


def _what(text: str) -> str:
    """A flag's line up to its first ": " outside parentheses: what happened, without why it matters.

    >>> _what("other processes took 0.40 of core 0 (busiest: sh): the server had less CPU")
    'other processes took 0.40 of core 0 (busiest: sh)'
    """
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and text.startswith(": ", i):
            return text[:i]
    return text
