"""How a JVM's warm-up makes room for its compiler on the server's core: ``warming=`` of ``warmup="auto"``.

On one core under a closed loop the JIT starves: measured here (Undertow, c16, wrk on the other core), its compile
time rose about one second per second of wall time for 50 s, every compile waiting for the core behind the request
threads the load keeps runnable, and the compile queue drained only as fast as they left it time. Three ways:

- ``"jit-first"``: while the server warms, its compiler threads (``C1/C2 CompilerThread*``, found by name in
  ``/proc``) run at nice :data:`NICE`, so the scheduler gives them the core whenever they have work (CFS weighs
  nice -15 29 times a nice-0 thread: against 16 runnable request threads they get about 64% of the core, with
  nothing to compile nothing). The load is the run's own, so the profile the JIT compiles from is the measured
  load's; the JVM's ergonomics (``ActiveProcessorCount``, compiler count) and where its threads run are unchanged.
  Every thread is put back to its own nice before the first measured window (:meth:`Favour.restore`). Lowering a
  nice needs ``CAP_SYS_NICE`` (root): refused, the warm-up says so and warms ``"shared"``.
- ``"pauses"``: after each slice of load the load stops while the compiler still works (its threads' CPU time
  rising), at most :data:`PAUSE_LIMIT` s, so it compiles alone on the core; no privilege needed.
- ``"shared"``: the compiler shares the core with the request threads as the scheduler sees fit (before
  ``warming`` existed, the only way).

A shortcut that let the compiler threads use the load's core while priming (4 rounds a server, windows in turn with
a partner's; ``benchmarks/shortcuts.py`` at commit 63afcaa) primed Undertow in 30-35 s instead of 91-106 s, but its
steady throughput came out 0.955 [0.928, 0.984] of a JVM primed on its own core, and Tomcat's 1.054 [1.015, 1.095]
(90% intervals): these keep the compiler threads where they are.
``benchmarks/warmup_protocols.py`` measures each against a long full-load warm-up; ``docs/warm-up.md`` has the
figures and why the default is what it is.
"""

from __future__ import annotations

import os
import time

#: The compiler threads' nice while a ``"jit-first"`` warm-up runs: CFS weight 29,154 against 1,024 for a nice-0
#: request thread.
NICE = -15
#: The longest a ``"pauses"`` warm-up waits after a slice for the compiler, and how often it looks.
PAUSE_LIMIT = 10.0
PAUSE_POLL = 0.5
#: The compiler is done for now when its threads used less than this share of the core since the last look.
PAUSE_QUIET = 0.2


class Favour:
    """The compiler threads of one JVM (a :class:`~benchlab.running.perfdata.CompilerThreads`) at :data:`NICE`
    until :meth:`restore`; :meth:`apply` again finds threads HotSpot started since. ``refused`` says why not, when
    the system would not.

    >>> import os
    >>> from benchlab.running.perfdata import CompilerThreads
    >>> favour = Favour(CompilerThreads(os.getpid()))   # Python has no compiler threads: nothing to favour
    >>> favour.apply(), favour.threads, favour.refused
    (None, 0, None)
    """

    def __init__(self, compilers):
        self.compilers = compilers
        self.before: dict[int, int] = {}  # tid -> its own nice, to put back
        self.threads = 0                  # how many threads were favoured, ended ones included
        self.refused: str | None = None

    def apply(self) -> None:
        if self.refused is not None or self.compilers is None:
            return
        for tid in self.compilers.tids():
            if tid in self.before:
                continue
            try:
                own = os.getpriority(os.PRIO_PROCESS, tid)
                os.setpriority(os.PRIO_PROCESS, tid, NICE)
            except ProcessLookupError:  # the thread ended between the listing and now
                continue
            except PermissionError:
                self.refused = f"lowering the compiler threads' nice to {NICE} needs CAP_SYS_NICE (root)"
                return
            self.before[tid] = own
            self.threads += 1

    def restore(self) -> None:
        for tid, own in self.before.items():
            try:
                os.setpriority(os.PRIO_PROCESS, tid, own)
            except (ProcessLookupError, PermissionError):  # ended with the JVM; raising a nice needs no privilege
                pass
        self.before.clear()

    def said(self) -> dict:
        """What it did, for the warm-up's record."""
        return {"favoured_threads": self.threads, "nice": NICE, **({"refused": self.refused} if self.refused else {})}


def pause(perfdata, *, limit: float = PAUSE_LIMIT) -> float:
    """With no load, wait while the JVM's compiler threads still work (their CPU time grew by more than
    :data:`PAUSE_QUIET` of the time since the last look), at most ``limit`` s; the seconds waited. Nothing to wait
    for without counters.

    >>> pause(None)
    0.0
    """
    if perfdata is None or perfdata.compilers is None:
        return 0.0
    began = time.monotonic()
    last = perfdata.compilers.seconds()
    while last is not None and time.monotonic() - began < limit:
        time.sleep(PAUSE_POLL)
        now = perfdata.compilers.seconds()
        if now is None or now - last < PAUSE_QUIET * PAUSE_POLL:
            break
        last = now
    return round(time.monotonic() - began, 3)


class Room:
    """Room for the JIT around each slice of an ``auto`` warm-up, as ``warming`` says: its compiler threads favoured
    until the block ends, or a pause after each slice while it compiles; what it did in :attr:`said`. A server
    without counters (not a JVM) warms as it is.

    >>> with Room("pauses", None) as take:
    ...     take(lambda: {"rps": 100.0})
    {'rps': 100.0}
    """

    def __init__(self, warming: str, perfdata):
        self.warming = warming if perfdata is not None else "shared"
        self.favour = Favour(perfdata.compilers) if self.warming == "jit-first" else None
        self.perfdata, self.paused = perfdata, 0.0

    def __enter__(self):
        def take(slice_) -> dict:
            if self.favour is not None:
                self.favour.apply()
            done = slice_()
            if self.warming == "pauses":
                done["paused_s"] = pause(self.perfdata)
                self.paused += done["paused_s"]
            return done
        return take

    def __exit__(self, *exc) -> None:
        if self.favour is not None:
            self.favour.restore()  # every thread at its own nice before a measured window, whatever happened

    @property
    def said(self) -> dict:
        """``{"warming", ...}``: the way taken, and what favouring or pausing did."""
        favour = self.favour.said() if self.favour is not None else {}
        return {"warming": self.warming, **favour, **({"paused_s": round(self.paused, 3)} if self.paused else {})}
