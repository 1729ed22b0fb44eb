"""The machine around a run: what its cores did, who else ran on them, and a quiet look before measuring.

The kernel counts each core's time by kind (``/proc/stat``: user, nice, system, idle, iowait, irq, softirq,
steal). A run's own processes are its server's tree and its load tool's tree, and benchlab's own process (kept
off the server's cores while it measures: :func:`keep_off`). What a group of cores spent in user and system
time beyond what the run's own processes used is what *other* processes took. irq and softirq are kept apart:
the kernel does the run's own loopback traffic there, and counts it to no process. Steal is the time the host
gave this machine's cores to another guest: nothing inside the machine can see who.

Each monitor tick reads one line a core (:class:`CoresProbe`: about 50 us on 2 cores), so the other
processes' share is known a quarter second at a time, on the monitor's clock. Who they were is read from
``/proc`` only twice a window (:func:`snapshot` before and after; about 3 ms on this machine), and named only
when the window was disturbed.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

_TICKS = os.sysconf("SC_CLK_TCK")
log = logging.getLogger(__name__)

#: A group of cores and the role of the run that runs there.
GROUPS = ("server", "load")


@dataclass(frozen=True)
class Times:
    """CPU seconds since boot of a group of cores, by kind: user+nice+system, irq+softirq, steal, and all."""

    busy: float
    irq: float
    steal: float
    total: float


def times(cpus) -> Times:
    """What the kernel counts for ``cpus`` since boot (:class:`Times`).

    >>> times([0]).total > 0
    True
    """
    wanted = {f"cpu{c}" for c in cpus}
    busy = irq = steal = total = 0
    with open("/proc/stat") as stat:
        for line in stat:
            name, *fields = line.split()
            if name in wanted:
                ticks = [int(f) for f in fields[:8]]  # user nice system idle iowait irq softirq steal
                busy += ticks[0] + ticks[1] + ticks[2]
                irq += ticks[5] + ticks[6]
                steal += ticks[7]
                total += sum(ticks)
    return Times(busy / _TICKS, irq / _TICKS, steal / _TICKS, total / _TICKS)


class CoresProbe:
    """Each call: ``{group: (busy, irq, steal)}``, each in % of one core (100 is one core's whole time), that the
    group's cores spent since the last call; the first call primes it and gives nothing."""

    def __init__(self, groups: dict[str, tuple[int, ...]]):
        self.groups = {name: tuple(cpus) for name, cpus in groups.items() if cpus}
        self._last: tuple[float, dict[str, Times]] | None = None

    def __call__(self) -> dict[str, tuple[float, float, float]]:
        now = time.monotonic()
        read = {name: times(cpus) for name, cpus in self.groups.items()}
        last, self._last = self._last, (now, read)
        if last is None or now <= last[0]:
            return {}
        wall = now - last[0]
        return {name: tuple(round(100.0 * max(0.0, new - old) / wall, 2) for new, old in  # type: ignore[misc]
                            ((t.busy, last[1][name].busy), (t.irq, last[1][name].irq), (t.steal, last[1][name].steal)))
                for name, t in read.items()}


def tree(pid: int | None) -> set[int]:
    """``pid`` and every process under it (empty for None or a process that is gone)."""
    if pid is None:
        return set()
    import psutil

    try:
        root = psutil.Process(pid)
        return {pid, *(p.pid for p in root.children(recursive=True))}
    except psutil.Error:
        return set()


class SelfProbe:
    """benchlab's own process: its CPU % (its threads: the orchestrator and the monitor), not its children's."""

    def __init__(self):
        self._last = (time.monotonic(), _own_seconds())

    def __call__(self) -> tuple[float | None, float | None]:
        now, seconds = time.monotonic(), _own_seconds()
        (then, before), self._last = self._last, (now, seconds)
        return (round(100.0 * (seconds - before) / (now - then), 2) if now > then else None, None)


def _own_seconds() -> float:
    t = os.times()
    return t.user + t.system


# --- who else ran --------------------------------------------------------------------------------------------

def snapshot() -> dict[int, tuple[str, float, int]]:
    """Every process now: ``{pid: (name, CPU seconds so far, the core it last ran on)}``, from ``/proc/<pid>/stat``."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                text = f.read().decode(errors="replace")
        except OSError:
            continue
        name, _, rest = text.partition(" (")[2].rpartition(") ")
        fields = rest.split()
        if len(fields) < 37:
            continue
        # after the name: state is field 3, utime 14, stime 15, processor 39 (man 5 proc), so 0-based 11, 12, 36
        found[int(entry.name)] = (name, (int(fields[11]) + int(fields[12])) / _TICKS, int(fields[36]))
    return found


def busiest(before: dict, after: dict, *, own: set[int], cpus, top: int = 3, least: float = 0.05) -> list[dict]:
    """The processes outside ``own`` that used the most CPU between two :func:`snapshot` calls and last ran on
    one of ``cpus``: ``[{"pid", "name", "cpu_s", "core"}, ...]``, at most ``top``, each over ``least`` seconds.

    >>> busiest({1: ("a", 1.0, 0)}, {1: ("a", 3.5, 0), 2: ("b", 9.0, 1)}, own=set(), cpus=[0])
    [{'pid': 1, 'name': 'a', 'cpu_s': 2.5, 'core': 0}]
    """
    wanted = set(cpus)
    used = []
    for pid, (name, seconds, core) in after.items():
        if pid in own or core not in wanted:
            continue
        spent = seconds - before.get(pid, (name, 0.0, core))[1]
        if spent > least:
            used.append({"pid": pid, "name": name, "cpu_s": round(spent, 2), "core": core})
    return sorted(used, key=lambda p: -p["cpu_s"])[:top]


class Culprits:
    """Who else ran on a window's cores: ``/proc`` read (:func:`snapshot`) at most once a second, and only while
    other processes take more than ``share`` of a group's cores, each other process's CPU added up between reads.
    Two reads, before and after the window, would miss a process that started and ended inside it (a build step,
    a test); reading only while the cores are disturbed costs the run nothing the rest of the time.

    ``groups`` are the run's cores by role, ``own`` its processes (the server's tree, the load tool's, benchlab's).
    """

    def __init__(self, groups: dict[str, tuple[int, ...]], own: set[int], share: float, *, every: float = 1.0):
        self.groups, self.own, self.share, self.every = groups, set(own), share, every
        self.cpus = [c for group in groups.values() for c in group]
        self._last, self._at = snapshot(), time.monotonic()
        self.used: dict[int, dict] = {}

    def add(self, pid: int | None) -> None:
        """One more of the run's own processes (the load tool, once it has started)."""
        if pid is not None:
            self.own.add(pid)

    def tick(self, busy: dict[str, float], cpus: dict[str, float]) -> None:
        """One monitor tick: each group's busy CPU and each role's (``server``, ``load``, ``benchlab``), in %."""
        own = {"server": cpus.get("server", 0.0), "load": cpus.get("load", 0.0) + cpus.get("benchlab", 0.0)}
        shares = [max(0.0, busy[g] - own.get(g, 0.0)) / (100.0 * len(self.groups[g])) for g in busy if g in self.groups]
        if max(shares, default=0.0) <= self.share or time.monotonic() - self._at < self.every:
            return
        self.read()

    def read(self) -> None:
        """Add up what other processes on the cores used since the last read."""
        now = snapshot()
        for found in busiest(self._last, now, own=self.own, cpus=self.cpus, top=1000, least=0.0):
            known = self.used.setdefault(found["pid"], {**found, "cpu_s": 0.0})
            known["cpu_s"] = round(known["cpu_s"] + found["cpu_s"], 2)
            known["core"] = found["core"]
        self._last, self._at = now, time.monotonic()

    def busiest(self, top: int = 3, least: float = 0.05) -> list[dict]:
        """The processes that used the most of the cores, most first, each over ``least`` CPU seconds."""
        return sorted((p for p in self.used.values() if p["cpu_s"] > least), key=lambda p: -p["cpu_s"])[:top]


def named(processes: list[dict]) -> str:
    """The busiest other processes in words: ``"python3 (PID 812) 5.9 s on core 0"``.

    >>> named([{"pid": 812, "name": "python3", "cpu_s": 5.93, "core": 0}])
    'python3 (PID 812) 5.9 s on core 0'
    """
    return ", ".join(f"{p['name']} (PID {p['pid']}) {p['cpu_s']:.1f} s on core {p['core']}" for p in processes)


# --- benchlab's own process off the server's cores -------------------------------------------------------------

def keep_off(server_cpus, load_cpus) -> tuple[int, ...] | None:
    """Pin every thread of this process to cores away from the server's: the cores of neither the server nor the
    load tool where there are such, else the load tool's. Returns the cores it had before (for :func:`restore`),
    or None where nothing changed (no such cores: the server has them all). Threads started later inherit it."""
    before = tuple(sorted(os.sched_getaffinity(0)))
    spare = set(before) - set(server_cpus) - set(load_cpus)
    target = spare or (set(load_cpus) - set(server_cpus))
    if not target or target == set(before):
        return None
    _pin_all(target)
    return before


def restore(before: tuple[int, ...] | None) -> None:
    """Give every thread of this process back the cores :func:`keep_off` took it off."""
    if before is not None:
        _pin_all(set(before))


def _pin_all(cpus: set[int]) -> None:
    for task in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(task), cpus)
        except (ProcessLookupError, PermissionError, OSError):
            continue


# --- a quiet look before measuring -----------------------------------------------------------------------------

#: How long the cores are looked at before a window, and how long benchlab waits for them to be quiet.
LOOK = 0.5
WAIT_LIMIT = 10.0


def others_share(groups: dict[str, tuple[int, ...]], own: set[int], seconds: float) -> dict[str, float]:
    """What other processes took of each group's cores over ``seconds`` (a share of the group's capacity),
    the run's own processes (``own``, with this one) left out: user+nice+system time only. An own process's time
    is taken off the group its cores lie in: the server tree's off the server's, and benchlab's own off the load
    tool's where :func:`keep_off` pinned it there (a machine with no spare core). Before, benchlab's own was taken
    off the server's cores, where it never ran, and a re-held capacity window waited 1 s for benchlab itself."""
    before = {name: times(cpus).busy for name, cpus in groups.items()}
    mine = _own_cpu(own)
    began = time.monotonic()
    time.sleep(seconds)
    wall = time.monotonic() - began
    spent = {pid: (cpu_s - mine[pid][0], cores) for pid, (cpu_s, cores) in _own_cpu(own).items() if pid in mine}
    shares = {}
    for name, cpus in groups.items():
        used = times(cpus).busy - before[name]
        theirs = sum(cpu_s for cpu_s, cores in spent.values() if cores and cores <= set(cpus))
        shares[name] = max(0.0, used - theirs) / (wall * len(cpus))
    return shares


def _own_cpu(own: set[int]) -> dict[int, tuple[float, frozenset]]:
    """``{pid: (CPU seconds, the cores it may run on)}`` of the run's own processes."""
    import psutil

    found = {}
    for pid in own:
        try:
            process = psutil.Process(pid)
            t = process.cpu_times()
            found[pid] = (t.user + t.system, frozenset(process.cpu_affinity()))
        except psutil.Error:
            continue
    return found


def wait_quiet(groups: dict[str, tuple[int, ...]], own: set[int], *, limit: float, share: float,
               look: float = LOOK, echo=None) -> dict:
    """Look at the cores for ``look`` seconds; while other processes take more than ``share`` of a group,
    say so in one line and look again, for at most ``limit`` seconds. ``{"waited_s", "quiet", "shares"}``."""
    say = echo or log.warning
    began, first = time.monotonic(), snapshot()
    shares = others_share(groups, own, look)
    said, who = False, ""
    while max(shares.values(), default=0.0) > share and time.monotonic() - began < limit:
        if not said:
            busy = ", ".join(f"the {name}'s cores {','.join(map(str, groups[name]))} {value:.0%}"
                             for name, value in shares.items() if value > share)
            # who, from /proc over the look: a process of the run's own that is not in ``own`` is named too
            who = named(busiest(first, snapshot(), own=own, cpus=[c for g in groups.values() for c in g],
                                least=0.01))
            say(f"benchlab: other processes are busy on {busy}{f' ({who})' if who else ''}: waiting up to "
                f"{limit:.0f} s for them before measuring")
            said = True
        shares = others_share(groups, own, max(look, 1.0))
    quiet = max(shares.values(), default=0.0) <= share
    return {"waited_s": round(time.monotonic() - began - look, 3) if said else 0.0, "quiet": quiet,
            "shares": {k: round(v, 4) for k, v in shares.items()}, **({"others": who} if who else {})}
