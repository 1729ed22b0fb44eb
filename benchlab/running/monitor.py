"""Samples CPU and memory of the server and the load generator while the load runs.

A probe is any callable returning ``(cpu_percent, rss_bytes)`` or ``(cpu_percent, rss_bytes, io_bytes)``,
where 100 % is one busy core and ``io_bytes`` counts the bytes the process has passed through read() (a load
tool: the answers it received) or write() (a server: the answers it sent) so far. The local probe reads
psutil, the docker backend's reads container stats (no byte count). Samples share one clock (seconds since
the monitor started), so charts do not care which backend ran.

The byte count costs the load tool nothing (the kernel keeps it in ``/proc/<pid>/io``), which is why the
measurement window's steadiness (:mod:`benchlab.analysis.steady`) is judged from it rather than from a per-request
callback inside the load tool.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..schema import MACHINE_FIELDS, SAMPLE_FIELDS  # noqa: F401  (the fields of a Sample and a machine row)

Probe = Callable[[], "tuple[float | None, ...]"]



@dataclass(frozen=True)
class Sample:
    t: float
    role: str
    cpu: float | None
    rss: float | None
    io: float | None = None

    def astuple(self) -> tuple:
        """The sample as stored in a run, in the order of :data:`SAMPLE_FIELDS`."""
        return (self.t, self.role, self.cpu, self.rss, self.io)


def process_cpu_seconds(pid: int) -> float | None:
    """A process's CPU time so far, all its threads, in nanosecond steps: Linux's CPU clock of the process
    (``clock_getcpuclockid``: ``~pid << 3 | CPUCLOCK_SCHED``). None where there is no such clock or the process is gone.

    >>> import os; process_cpu_seconds(os.getpid()) > 0
    True
    """
    try:
        return time.clock_gettime(((~pid) << 3) | 2)
    except (OSError, OverflowError, AttributeError):  # not Linux, or the process has ended
        return None


class ProcessProbe:
    """CPU%, RSS and bytes read (``io="read"``) or written (``io="write"``) of a process and its children,
    through psutil."""

    def __init__(self, pid: int, *, io: str = "read"):
        import psutil

        if io not in ("read", "write"):
            raise ValueError(f"io must be 'read' or 'write', not {io!r}")
        self._psutil = psutil
        self._io = f"{io}_chars"
        self._root = psutil.Process(pid)
        self._known: dict[int, object] = {}
        self()  # prime cpu_percent: its first call has no interval to measure

    def _processes(self):
        try:
            found = [self._root, *self._root.children(recursive=True)]
        except self._psutil.Error:
            return []
        live = {}
        for proc in found:
            live[proc.pid] = self._known.get(proc.pid, proc)
        self._known = live
        return list(live.values())

    def cpu_seconds(self) -> float | None:
        """The CPU time the process and its children have used so far, user and system, in seconds (None: gone).

        Exact where the sampled ``cpu`` is an estimate: each process's own CPU clock in nanoseconds (its threads,
        ended ones too), so the CPU time over a window is the difference of two readings. The clock ticks psutil
        reads (10 ms) are the fallback: at 3,000 req/s a 3 s window cost a Spring server 0.39-0.85 s here, 39-85
        ticks, and in one CI run two forks' means came out equal to the tick, which left the cost no interval. A
        child that ended in between takes its time with it, which a server's tree (a JVM, nginx's workers) does not
        do under load."""
        used, seen = 0.0, False
        for proc in self._processes():
            spent = process_cpu_seconds(proc.pid)
            if spent is None:
                try:
                    times = proc.cpu_times()
                except self._psutil.Error:
                    continue
                spent = times.user + times.system
            used += spent
            seen = True
        return used if seen else None

    def __call__(self) -> tuple[float | None, float | None, float | None]:
        cpu = rss = io = 0.0
        seen = False
        for proc in self._processes():
            try:
                with proc.oneshot():
                    cpu += proc.cpu_percent(interval=None)
                    rss += proc.memory_info().rss
                    io += getattr(proc.io_counters(), self._io)
                seen = True
            except (self._psutil.Error, AttributeError):  # AttributeError: no io counters on this platform
                continue
        return (cpu, rss, io) if seen else (None, None, None)


class Monitor:
    """A background thread that calls every watched probe every ``interval`` seconds.

    Example
    -------
    >>> with Monitor(interval=0.05) as m:
    ...     m.watch("self", lambda: (1.0, 2.0)); time.sleep(0.2)
    >>> len(m.samples) > 0
    True
    """

    def __init__(self, interval: float = 0.25):
        self.interval = interval
        self.samples: list[Sample] = []
        #: The JVM's counters on the same clock: ``(t, *perfdata.FIELDS)`` rows, when a JVM is watched.
        self.counters: list[tuple] = []
        #: What the run's cores did on the same clock: ``(t, group, busy, irq, steal)`` rows (:data:`MACHINE_FIELDS`),
        #: when cores are watched (:meth:`watch_cores`).
        self.machine: list[tuple] = []
        self._cores: Callable[[], dict] | None = None
        #: who else ran on the cores (:class:`~benchlab.running.machine.Culprits`), told each tick's CPU
        self.culprits = None
        #: called with each tick's time, after its samples: a live view reads them as they come
        self.on_tick: Callable[[float], None] | None = None
        self._perfdata = None
        self._probes: dict[str, Probe] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self._lock = threading.Lock()

    def watch(self, role: str, probe: Probe | None) -> None:
        if probe is not None:
            with self._lock:
                self._probes[role] = probe

    def watch_counters(self, perfdata) -> None:
        """Read the server JVM's :class:`~benchlab.running.perfdata.PerfData` now, at every sample and at the end
        (None: no JVM)."""
        self._perfdata = perfdata
        self._read_counters()

    def watch_cores(self, groups: dict) -> None:
        """Read what each group of cores (``{"server": (0,), "load": (1,)}``) spent, by kind, at every sample
        (:class:`~benchlab.running.machine.CoresProbe`); empty groups are left out."""
        from .machine import CoresProbe

        probe = CoresProbe(groups)
        probe()  # primed now: the first sample covers the first interval
        self._cores = probe

    def _read_cores(self, t: float) -> None:
        if self._cores is not None:
            try:
                for group, (busy, irq, steal) in self._cores().items():
                    self.machine.append((t, group, busy, irq, steal))
            except OSError:  # /proc/stat unreadable: no machine rows, the run goes on
                self._cores = None

    def _read_counters(self) -> None:
        if self._perfdata is not None:
            try:
                self.counters.append((round(time.monotonic() - self._t0, 3), *self._perfdata.sample()))
            except (OSError, ValueError):  # the JVM just ended
                pass

    def _loop(self) -> None:
        next_at = time.monotonic() + self.interval
        while not self._stop.wait(max(0.0, next_at - time.monotonic())):
            next_at += self.interval
            with self._lock:
                probes = list(self._probes.items())
            cores = len(self.machine)
            self._read_cores(round(time.monotonic() - self._t0, 3))
            cpus: dict[str, float] = {}
            for role, probe in probes:
                try:
                    cpu, rss, *io = probe()
                except Exception:  # a process that just ended: no sample, the run goes on
                    continue
                if cpu is not None or rss is not None:
                    self.samples.append(Sample(round(time.monotonic() - self._t0, 3), role, cpu, rss,
                                               io[0] if io else None))
                    cpus[role] = cpu or 0.0
            if self.culprits is not None:
                self.culprits.tick({row[1]: row[2] for row in self.machine[cores:]}, cpus)
            if self.on_tick is not None:
                try:
                    self.on_tick(round(time.monotonic() - self._t0, 3))
                except Exception:  # a live view's trouble never stops a measurement
                    self.on_tick = None
            self._read_counters()

    def __enter__(self) -> Monitor:
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="benchlab-monitor", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._read_counters()

    def summary(self) -> dict:
        """Mean and max CPU%, mean and max RSS, per role, while the load ran: ``server_cpu_mean``,
        ``load_cpu_max``... The server's samples after the load tool's last one are not its load's (vegeta's report
        of a 19,500 req/s window took 2.7 s, the server idle through it: its mean CPU read 55% for 85%)."""
        out: dict[str, float | None] = {}
        loads = [s.t for s in self.samples if s.role == "load"]
        end = max(loads) if loads else math.inf  # no load samples (a remote generator): every sample
        for role in ("server", "load"):
            during = [s for s in self.samples if s.role == role and s.t <= end]
            cpus = [s.cpu for s in during if s.cpu is not None]
            rss = [s.rss for s in during if s.rss is not None]
            out[f"{role}_cpu_mean"] = sum(cpus) / len(cpus) if cpus else None
            out[f"{role}_cpu_max"] = max(cpus) if cpus else None
            out[f"{role}_rss_mean"] = sum(rss) / len(rss) if rss else None
            out[f"{role}_rss_max"] = max(rss) if rss else None
            out[f"{role}_samples"] = len(cpus)
        return out
