"""The JVM's own counters: HotSpot's performance data, read from its ``hsperfdata`` file.

A HotSpot JVM keeps its performance counters in a memory-mapped file, ``/tmp/hsperfdata_<user>/<pid>``
(32 KiB by default; the directory is always the OS temp dir, never ``java.io.tmpdir``), which ``jstat``
and ``jcmd PerfCounter.print`` read. Reading it from here costs the JVM nothing: no attach, no thread in
the JVM, no safepoint, just a read of shared memory, so it can be sampled on the monitor's clock beside
CPU and RSS. A JVM in a container is read through ``/proc/<pid>/root`` under its own namespace pid.

The file: a 32-byte prologue (magic ``0xcafec0c0`` big-endian, then the byte order of everything else,
the version, the bytes used, the offset and number of entries), then entries of a 20-byte header
(entry length, name offset, vector length, type, flags, units, variability, data offset), a
NUL-terminated name and the value. Counters are created at JVM start and never move, so the entries are
indexed once and each read is one ``pread`` of the used part of the file and a few unpacks.

A process that is not a HotSpot JVM, or one started with ``-XX:-UsePerfData`` or
``-XX:+PerfDisableSharedMem``, has no file: :meth:`PerfData.find` returns None and the run says so.

HotSpot's counters hold no deoptimisation count; ``invalidations`` (compiled methods made not entrant,
``sun.ci.totalInvalidates``) is the nearest it publishes.

``compile_s`` is the compiler's *wall* time: a compile counts from when a compiler thread takes it until it
ends, including every moment that thread waited for a core. On one server core shared with 200 request
threads that is not what the compiler cost: measured here (Undertow, c=200, after its warm-up), 9.2 s of
compile time over 300 s came from 1.2 s of compiler CPU. So each read also gives ``jit_cpu_s``, the CPU time
of the JVM's compiler threads (``C1 CompilerThre``, ``C2 CompilerThre``, JVMCI's) as the kernel counts it in
``/proc/<pid>/task/<tid>/schedstat``: what the JIT took from the server's cores. Compile time says whether the
compiler is *at work*; its CPU time says what that work *costs* a measurement.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from ..schema import COUNTER_FIELDS as FIELDS  # what a read gives; a compile counts when it ends

MAGIC = 0xCAFEC0C0
PROLOGUE = struct.Struct(">IbbbbiiqiI")  # the magic and byte order are read big-endian, the rest re-read below

# counter -> (field, is a time in ticks of sun.os.hrt.frequency)
_COUNTERS = {
    "java.ci.totalTime": ("compile_s", True),
    "sun.ci.totalCompiles": ("compiles", False),
    "sun.ci.totalInvalidates": ("invalidations", False),
    "sun.rt.safepoints": ("safepoints", False),
    "sun.rt.safepointTime": ("safepoint_s", True),
}
_MAX_SIZE = 1 << 24  # a real file is 32 KiB (64 KiB with -XX:PerfDataMemorySize); refuse anything huge


class PerfData:
    """The counters of one running JVM. Build it with :meth:`find`; :meth:`read` as often as you like.

    Example
    -------
    >>> import os
    >>> PerfData.find(os.getpid()) is None       # Python is not a JVM
    True
    """

    def __init__(self, path: str, pid: int | None = None):
        self.path = path
        self._fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        self._index()
        self.compilers = CompilerThreads(pid) if pid is not None else None

    @classmethod
    def find(cls, pid: int) -> PerfData | None:
        """The counters of the JVM ``pid``, or of the first JVM among its descendants; None if none has any."""
        for candidate in _self_and_children(pid):
            path = _path(candidate)
            if path is not None:
                try:
                    return cls(path, candidate)
                except (OSError, ValueError):
                    continue
        return None

    def _bytes(self) -> bytes:
        data = os.pread(self._fd, _MAX_SIZE, 0)
        if len(data) < PROLOGUE.size:
            raise ValueError(f"{self.path}: {len(data)} bytes, shorter than a perfdata prologue")
        return data

    def _index(self) -> None:
        data = self._bytes()
        magic, order = struct.unpack_from(">Ib", data)
        if magic != MAGIC:
            raise ValueError(f"{self.path} is not HotSpot performance data (magic {magic:#x})")
        self._end = "<" if order == 1 else ">"
        _, _, _, _, _, used, _, _, offset, count = struct.unpack_from(self._end + "IbbbbiiqiI", data)
        self._count = count
        self._long = struct.Struct(self._end + "q")
        header = struct.Struct(self._end + "iiibbbbi")
        slots: dict[str, int] = {}
        strings: dict[str, tuple[int, int]] = {}
        position = offset
        for _ in range(count):
            if position + header.size > min(used, len(data)):
                break
            length, name_at, vector, kind, _flags, _units, _variability, data_at = header.unpack_from(data, position)
            if length <= 0:
                break
            end = data.index(b"\0", position + name_at)
            name = data[position + name_at:end].decode("ascii", "replace")
            if vector == 0 and kind == ord("J"):
                slots[name] = position + data_at
            elif kind == ord("B") and vector > 0:
                strings[name] = (position + data_at, vector)
            position += length
        self._slots = slots
        self.frequency = self._value(data, "sun.os.hrt.frequency") or 1e9
        self.collectors = []
        i = 0
        while f"sun.gc.collector.{i}.time" in slots:
            at, size = strings.get(f"sun.gc.collector.{i}.name", (0, 0))
            name = data[at:at + size].split(b"\0")[0].decode("ascii", "replace") if size else f"collector {i}"
            self.collectors.append(name)
            i += 1
        at, size = strings.get("sun.gc.policy.name", (0, 0))
        self.policy = data[at:at + size].split(b"\0")[0].decode("ascii", "replace") if size else None

    def _value(self, data: bytes, name: str) -> int | None:
        at = self._slots.get(name)
        return None if at is None else self._long.unpack_from(data, at)[0]

    def read(self) -> dict:
        """The counters now, as :data:`FIELDS` (None for a counter this JVM lacks), plus ``gc``: per
        collector, its name, collections and pause seconds."""
        data = self._bytes()
        out: dict = dict.fromkeys(FIELDS)
        for counter, (field, ticks) in _COUNTERS.items():
            value = self._value(data, counter)
            if value is not None:
                out[field] = value / self.frequency if ticks else value
        gc = []
        for i, name in enumerate(self.collectors):
            gc.append({"name": name, "count": self._value(data, f"sun.gc.collector.{i}.invocations") or 0,
                       "s": (self._value(data, f"sun.gc.collector.{i}.time") or 0) / self.frequency})
        out["gc_count"] = sum(c["count"] for c in gc)
        out["gc_s"] = sum(c["s"] for c in gc)
        out["gc"] = gc
        out["jit_cpu_s"] = self.compilers.seconds() if self.compilers is not None else None
        return out

    def sample(self) -> tuple:
        """:meth:`read` as a tuple of :data:`FIELDS`, as the monitor stores it."""
        values = self.read()
        return tuple(values[f] for f in FIELDS)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self):
        try:
            self.close()
        except Exception:  # a finalizer never raises: at interpreter exit even os may be gone
            pass


class CompilerThreads:
    """The CPU time of one JVM's compiler threads, from the kernel's per-thread accounting.

    The threads are found by name (``comm``); the task list is read on every call, but a thread's name only
    until it has one of its own (a new thread carries the process's name until it names itself), so a read
    costs one directory listing and one small read per compiler thread. A compiler thread that ends (HotSpot
    stops the extra ones when idle) keeps what it used in the total.

    >>> import os
    >>> CompilerThreads(os.getpid()).seconds()      # Python has no compiler threads
    0.0
    """

    def __init__(self, pid: int):
        self.pid = pid
        self._names: dict[str, str] = {}  # tid -> its name, once it is not the process's own
        self._last: dict[str, float] = {}   # tid -> its CPU seconds when last read
        self._ended = 0.0

    def _compilers(self) -> list[str] | None:
        """The compiler threads' ids now, each thread named once it has a name of its own; None once the JVM is
        gone."""
        folder = f"/proc/{self.pid}/task"
        try:
            tids = os.listdir(folder)
        except OSError:
            return None
        for tid in [t for t in self._last if t not in tids]:
            self._ended += self._last.pop(tid)
        unnamed = _read(f"/proc/{self.pid}/comm")
        found = []
        for tid in tids:
            name = self._names.get(tid)
            if name is None:
                name = _read(f"{folder}/{tid}/comm")
                if name != unnamed:
                    self._names[tid] = name
            if _is_compiler(name):
                found.append(tid)
        return found

    def seconds(self) -> float | None:
        """The compiler threads' CPU seconds so far; None once the JVM is gone."""
        found = self._compilers()
        if found is None:
            return None
        for tid in found:
            used = _cpu_seconds(f"/proc/{self.pid}/task/{tid}")
            if used is not None:
                self._last[tid] = used
        return self._ended + sum(self._last.values())

    def tids(self) -> list[int]:
        """The compiler threads' ids now (a thread HotSpot starts later is found on the next call)."""
        return [int(tid) for tid in self._compilers() or []]


def _is_compiler(name: str) -> bool:
    return "CompilerThre" in name or name.startswith("JVMCI")


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def _cpu_seconds(task: str) -> float | None:
    """A thread's CPU seconds: ``schedstat``'s nanoseconds on a core, else ``stat``'s user and system ticks."""
    fields = _read(f"{task}/schedstat").split()
    if fields and fields[0].isdigit():
        return int(fields[0]) / 1e9
    stat = _read(f"{task}/stat").rpartition(")")[2].split()
    if len(stat) > 12:
        return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
    return None


def _ns_pid(pid: int) -> int:
    """The pid as the process's own namespace sees it (its last ``NSpid``); the same pid outside a container."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    except (OSError, ValueError):
        pass
    return pid


def _path(pid: int) -> str | None:
    """The hsperfdata file of ``pid``, looked up through its own root (a container's /tmp), or None."""
    inner = str(_ns_pid(pid))
    tmp = f"/proc/{pid}/root/tmp"
    try:
        folders = [entry.path for entry in os.scandir(tmp)
                   if entry.name.startswith("hsperfdata_") and entry.is_dir(follow_symlinks=False)]
    except OSError:
        return None
    for folder in folders:
        path = os.path.join(folder, inner)
        try:
            if os.path.isfile(path) and not os.path.islink(path):
                return path
        except OSError:
            continue
    return None


def _self_and_children(pid: int) -> list[int]:
    try:
        import psutil

        return [pid, *(p.pid for p in psutil.Process(pid).children(recursive=True))]
    except Exception:  # no psutil, or the process ended or is not ours to read: the JVM's own pid is enough
        return [pid]


def share(counters: list[tuple], field: str, since: float | None = None) -> float | None:
    """How much of the wall time between the first and last of ``counters`` (``(t, *FIELDS)`` rows, ``t``
    on any clock in seconds) went to ``field`` (a time: ``compile_s``, ``gc_s``, ``safepoint_s``); rows
    before ``since`` are left out. None with fewer than two rows or no such counter.

    >>> share([(0.0, 10.0, 0, 0, 0, 0.0, 0, 0.0), (10.0, 10.5, 0, 0, 0, 0.0, 0, 0.0)], "compile_s")
    0.05
    """
    column = 1 + FIELDS.index(field)
    rows = [r for r in counters if (since is None or r[0] >= since) and len(r) > column and r[column] is not None]
    if len(rows) < 2 or rows[-1][0] <= rows[0][0]:
        return None
    return round((rows[-1][column] - rows[0][column]) / (rows[-1][0] - rows[0][0]), 6)


#: What :func:`summary` gives a run (None for each when the server has no JVM counters).
SUMMARY = ("jit_compile_s", "jit_share", "jit_cpu_share", "gc_count", "gc_share", "safepoint_share")


def summary(counters: list[tuple]) -> dict:
    """A measured window's JVM figures from the monitor's ``(t, *FIELDS)`` rows: compile seconds and their
    share of the wall time, the compiler threads' CPU as a share of the wall time (of one core), collections
    and the GC pauses' share, the safepoints' share.

    >>> summary([(0.0, 10.0, 5, 0, 3, 0.1, 9, 0.1, 2.0), (10.0, 10.2, 7, 0, 13, 0.6, 30, 0.7, 2.1)])["gc_share"]
    0.05
    >>> summary([])["jit_share"] is None
    True
    """
    if len(counters) < 2:
        return dict.fromkeys(SUMMARY)
    first, last = counters[0], counters[-1]
    at = lambda field: 1 + FIELDS.index(field)  # noqa: E731
    gc = (last[at("gc_count")] - first[at("gc_count")]) if last[at("gc_count")] is not None else None
    return {"jit_compile_s": (last[at("compile_s")] - first[at("compile_s")])
            if last[at("compile_s")] is not None else None,
            "jit_share": share(counters, "compile_s"), "jit_cpu_share": share(counters, "jit_cpu_s"),
            "gc_count": gc, "gc_share": share(counters, "gc_s"),
            "safepoint_share": share(counters, "safepoint_s")}
