"""Warm-up: a fixed time, or ``auto``: slices of load until the JVM says it is warm and throughput agrees.

Throughput alone cannot tell a warm JVM: measured here, Jetty served a flat 4.7-5.0k req/s from 15 s to 35 s while
its JIT added 5 s of compile time every 5 s, and 14-22k once it was quiet. So ``auto`` asks the JVM
(:mod:`benchlab.running.perfdata`) after every slice of :data:`SLICE` seconds. Above :data:`PRIME_CONNECTIONS` it
first *primes* the JVM at that light load (200 request threads runnable beside the JIT's two kept it compiling for
minutes; TechEmpower's toolset primes too), then warms it at the run's own load until both hold there:

1. **the compiler is quiet**: over the last :data:`QUIET_SPAN` seconds the JIT's compile time grew by
   at most :data:`QUIET_SHARE` of the wall time. Measured here (``benchmarks/warmup.py``'s curves, 5 s
   slices), a compiling JVM adds 0.6-2.0 s of compile time per second of wall time, a JVM finishing adds
   0.05-0.6 in bursts, and a warm one 0.00-0.01
   (a late compile or an invalidation now and then); 0.05 sits between them: at most 0.75 s of compile in
   15 s, which can cost the measurement no more than about 5% of the server's core.
2. **throughput has a steady state**: the change points of the slice series
   (:mod:`benchlab.analysis.changepoints`) leave a last segment of at least :data:`QUIET_SPAN` seconds (the same),
   and those seconds show no significant upward trend. The compiler's quiet says what a long segment would
   otherwise have to: that no JIT step is still to come. A server judged on throughput alone needs
   :data:`STEADY_SPAN` seconds, long enough to see such a step.

A server with no JVM counters (not a JVM, or a JVM without perfdata) is judged on throughput alone, and
its warm-up says so (``"rule": "throughput"``). One that is flat from its first slice is warm sooner
(``"rule": "native-flat"``): once :data:`NATIVE_SLICES` slices or more form one segment (no change point:
no step) with no upward trend; docs/warm-up.md has what nginx and go-nethttp did under each rule.

At :data:`LIMIT` seconds the warm-up stops regardless: the run is flagged ``not_warm``. Each warm-up is
classified as Barrett et al. do (*flat*, *warm-up*, *slowdown*, *no steady state*), and the time the JIT
went quiet is kept, with the curve of rps, p99 and compile time per slice. Nothing of the warm-up is a result.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from ..analysis import changepoints
from ..schema import AUTO
from . import drivers, warming
from .load import Load

SLICE = 5.0
LIMIT = 360.0
#: The priming load's connections, and how long priming may take. Measured here (server on one core,
#: /hello): at 200 connections Jetty's 200 request threads crowd its two compiler threads off the core and
#: its compiler was busy for 260-300+ s; at 16 connections it was quiet after 60 s, and 200 connections
#: then added 0.2 s of compile time and served 18-20k req/s, as much as after 300 s at 200.
PRIME_CONNECTIONS = 16
PRIME_LIMIT = 150.0
#: Priming ends at the first quiet slice: the bulk of the compiling is done, and the rule proper is judged under the
#: run's own load (a whole quiet span here too cost forks at 64 connections 10-15 s more).
PRIME_QUIET = SLICE
#: The compiler's quiet span and the steady segment of a JVM whose compile time is counted: the same 15 s, so every
#: slice that shows throughput steady was served by a quiet compiler. They were 20 s and 30 s; docs/warm-up.md
#: (``benchmarks/warmup_protocols.py --later``) shows what a fork measures as soon as these call it warm.
QUIET_SPAN = 15.0
QUIET_SHARE = 0.05
#: The steady segment of a server judged on throughput alone (no JVM counters): long enough to see a JIT step.
STEADY_SPAN = 30.0
#: The fewest slices from which a server without JVM counters can be called flat: two segments of the change
#: points' shortest (changepoints.MIN_SEGMENT) each, the fewest in which a step can show.
NATIVE_SLICES = 2 * changepoints.MIN_SEGMENT
#: The least rise over those slices that counts as warming: a steady nginx fork here drifted up 1.9% over its first
#: 20 s (196.7k to 200.5k req/s, a slope a t test calls significant), a JIT's warm-up rises 2-4x.
NATIVE_RISE = 0.03


def _slices(seconds: float) -> int:
    return max(2, int(round(seconds / SLICE)))


def jit_quiet(slices: list[dict], *, span: float = QUIET_SPAN, share: float = QUIET_SHARE,
              key: str = "compile_s") -> bool | None:
    """Whether the compile time in ``slices`` (``{"t", "compile_s"}`` each) grew by at most ``share`` of
    the wall time over the last ``span`` seconds; None when the slices carry no compile time. ``key``
    ``"jit_cpu_s"`` asks the same of the compiler threads' CPU time instead (what the JIT took from the core).

    >>> jit_quiet([{"t": 5.0 * i, "compile_s": 30.0 + 0.05 * i} for i in range(1, 8)])
    True
    >>> jit_quiet([{"t": 5.0 * i, "compile_s": 4.0 * i} for i in range(1, 8)])
    False
    """
    known = [s for s in slices if s.get(key) is not None]
    if not known:
        return None
    end = known[-1]["t"]
    before = [s for s in known if s["t"] <= end - span + 1e-9]
    if not before:
        return False  # not yet a whole span of counters
    start = before[-1]
    return (known[-1][key] - start[key]) <= share * (end - start["t"])


def quiet_since(slices: list[dict], *, span: float = QUIET_SPAN, share: float = QUIET_SHARE,
                key: str = "compile_s") -> float | None:
    """The time the JIT went quiet for good: the first slice ending a quiet span (:func:`jit_quiet`) from
    which on the compiler used at most ``share`` of the wall time to the end of ``slices``; None if it
    never did (or nothing was counted).

    "For good" is on average: a warm JVM still compiles now and then (measured here: a burst of 0.6-1.7 s
    every 30-60 s after Jetty's main compilation), which no look-back rule should take for a warm-up that
    has not ended.

    >>> curve = [{"t": 5.0 * i, "compile_s": min(4.0 * i, 40.0)} for i in range(1, 20)]
    >>> quiet_since(curve)       # its last compile ends at 50 s
    65.0
    """
    known = [s for s in slices if s.get(key) is not None]
    if not known:
        return None
    end = known[-1]
    for i in range(1, len(known) + 1):
        here = known[i - 1]
        if not jit_quiet(known[:i], span=span, share=share, key=key):
            continue
        rest = end["t"] - here["t"]
        if rest <= 0 or end[key] - here[key] <= share * rest:
            return here["t"]
    return None


def judge(slices: list[dict], *, origin: dict | None = None, share: float = QUIET_SHARE) -> dict:
    """The state of a warm-up so far: ``{"warm", "class", "jit_quiet", "rule"}``.

    ``warm`` is the rule of this module; ``class`` the Barrett class of the throughput series; ``rule``
    "jit+throughput", or, when the server has no JVM counters, "native-flat" (flat from its first slice,
    :data:`NATIVE_SLICES` or more) or "throughput". ``origin`` holds the counters read before the first
    slice; ``share`` is the compile time's share of the wall time under which the compiler is quiet.

    >>> judge([{"rps": r} for r in (41000.0, 40600.0, 41300.0, 40900.0)])["rule"]
    'native-flat'
    """
    rps = [s.get("rps") or 0.0 for s in slices]
    quiet = jit_quiet([origin, *slices] if origin else slices, share=share)
    steady_slices = _slices(STEADY_SPAN if quiet is None else QUIET_SPAN)  # counted JIT: the quiet span
    kind, _ = changepoints.classify(rps, steady_slices=steady_slices) if rps else (changepoints.NO_STEADY_STATE, [])
    settled = (len(rps) >= steady_slices and min(rps[-steady_slices:]) > 0 and kind != changepoints.NO_STEADY_STATE
               and not changepoints.rising(rps[-steady_slices:]))
    warm = settled and quiet is not False
    if quiet is None and not warm and flat(rps):
        return {"warm": True, "class": changepoints.FLAT, "jit_quiet": None, "rule": "native-flat"}
    return {"warm": warm, "class": kind, "jit_quiet": quiet,
            "rule": "throughput" if quiet is None else "jit+throughput"}


def flat(rps: list[float]) -> bool:
    """Whether a throughput series is flat from its first slice: :data:`NATIVE_SLICES` or more, every one
    served, one segment (no change point) and no upward trend (a significant rise of :data:`NATIVE_RISE` or
    more over the slices).

    >>> flat([41000.0, 40600.0, 41300.0, 40900.0]), flat([20000.0, 21000.0, 40000.0, 41000.0])
    (True, False)
    >>> flat([196732.0, 198007.0, 198668.0, 200476.0])   # a steady drift of 1.9%: no warm-up
    True
    >>> flat([41000.0, 40600.0, 41300.0])    # too few to see a step
    False
    """
    if len(rps) < NATIVE_SLICES or min(rps) <= 0 or len(changepoints.segments(rps)) > 1:
        return False
    return not (changepoints.rising(rps) and _rise(rps) >= NATIVE_RISE)


def _rise(rps: list[float]) -> float:
    """The least-squares line's rise from the first slice to the last, as a share of the mean."""
    n, mean = len(rps), sum(rps) / len(rps)
    centred = [i - (n - 1) / 2 for i in range(n)]
    slope = sum(t * (r - mean) for t, r in zip(centred, rps)) / sum(t * t for t in centred)
    return slope * (n - 1) / mean


def steady(rps: list[float]) -> bool:
    """The throughput half of the rule, for a series without JVM counters.

    >>> steady([5000.0, 9000.0] + [12000.0, 11900.0, 12100.0, 12050.0, 11950.0, 12000.0])
    True
    >>> steady([5000.0, 5010.0, 4990.0])      # too short to see a JIT step
    False
    """
    return judge([{"rps": r} for r in rps])["warm"]


def _warming_load(load: Load, seconds: float, *, connections: int | None = None) -> Load:
    """The load that warms the server: the run's own connections (or ``connections``) through wrk, for
    ``seconds``; its wrk threads are the run's, at most one a connection.

    A count load has no duration, a rate load warms faster as a closed loop: either is wrk at the same concurrency
    (h2load's own warm-up skews its byte counts). ``keepalive=False`` warms so too: it compiles accept and close.

    >>> _warming_load(Load(model="rate", rate=100, connections=8, threads=1, duration=5, keepalive=False), 3).keepalive
    False
    """
    own = load.connections  # a count load's are its users: Load sets them so
    chosen = connections or own
    pipeline = load.pipeline if chosen == own else 1  # a primer or a wider rate warm-up does not pipeline
    return Load(connections=chosen, threads=min(load.threads, chosen), duration=seconds,
                warmup=seconds, timeout=load.timeout, pipeline=pipeline, keepalive=load.keepalive,
                protocol=load.protocol, streams=load.streams)


#: The most connections a rate load's warm-up opens to carry its rate (:func:`_carrying`).
RATE_CONNECTIONS = 1000


def _carrying(load: Load, warming: Load, done: dict) -> Load:
    """The next warming slice of a rate load: with the connections that carry its rate.

    A rate load warms as a closed loop at its own connections, which carry less than its rate when each
    answer takes long: measured here, 200 connections on a 100 ms endpoint served 1,940 req/s where the run
    asked 3,000, so the JIT compiled the rest in the measured window. By Little's law a closed loop of c
    connections serving x req/s holds each request c/x s, so ceil(1.1 x rate x c/x) connections carry the
    rate; the count only grows, to at most :data:`RATE_CONNECTIONS`. (``auto`` only: a fixed warm-up is one
    invocation, with nothing measured before it to size it by.)

    >>> run = Load(model="rate", rate=3000, connections=200, threads=2, duration=10)
    >>> _carrying(run, _warming_load(run, 5), {"rps": 1940.0, "connections": 200}).connections
    341
    >>> _carrying(run, _warming_load(run, 5), {"rps": 9000.0, "connections": 200}).connections
    200
    >>> few = Load(model="rate", rate=1500, connections=2, threads=4, duration=10)  # its slices: 2 wrk threads
    >>> wider = _carrying(few, _warming_load(few, 5), {"rps": 448.0, "connections": 2})
    >>> wider.connections, wider.threads
    (8, 4)
    """
    rps, rate = done.get("rps") or 0.0, load.rate
    if load.model != "rate" or rate is None or rps <= 0 or rps >= rate:
        return warming
    needed = min(RATE_CONNECTIONS, math.ceil(1.1 * rate * done["connections"] / rps))
    if needed <= warming.connections:
        return warming
    return _warming_load(load, warming.duration, connections=needed)


def _counters(perfdata) -> dict:
    if perfdata is None:
        return {}
    try:
        values = perfdata.read()
    except (OSError, ValueError):
        return {}
    return {"compile_s": values["compile_s"], "compiles": values["compiles"], "gc_count": values["gc_count"],
            "gc_s": values["gc_s"], "jit_cpu_s": values.get("jit_cpu_s")}


def _slice(url: str, scenario, slice_load: Load, phase: str, *, began: float, cpus, workdir: Path, runner=None,
           perfdata=None, on_slice=None) -> dict:
    """One slice of warming load (:func:`drivers.warmer`), and the counters after it, on the clock of ``began``."""
    metrics, _ = drivers.execute(drivers.warmer(slice_load), url, scenario, slice_load, cpus=cpus, workdir=workdir,
                                 phase="warmup", runner=runner)
    done = {"t": round(time.monotonic() - began, 3), "phase": phase, "connections": slice_load.connections,
            "rps": metrics.get("rps"), "p99": metrics.get("p99"), "bytes_per_request": metrics.get("bytes_per_request"),
            **_counters(perfdata)}
    if on_slice is not None:
        on_slice(done)
    return done


#: A fork that sat idle while others warmed (``interleave="windows"``) is resumed: slices of its own load until
#: its compiler has been quiet over :data:`RESUME_SPAN` seconds, for at most :data:`RESUME_LIMIT`. Measured
#: here, four Jetty forks that waited 1.5-5 min compiled 0.9-1.8 s in their first 5 s back under load, the
#: one that had not waited nothing, and all of them little from their second window on; forks that waited 25-40 s
#: compiled 0.0-0.1 s in their first 5 s back, which one quiet slice now ends.
RESUME_SPAN = 5.0
RESUME_LIMIT = 60.0


def resume(url: str, scenario, load: Load, *, cpus, workdir: Path, runner=None, perfdata=None,
           limit: float = RESUME_LIMIT, on_slice=None) -> dict:
    """Bring a warmed server that sat idle back to its run's load: ``{"seconds", "quiet", "slices"}``.

    A fixed warm-up resumes for its own time, one slice at most (its threads come back; nothing is judged;
    none for no warm-up); ``auto`` with slices until the JIT was quiet over the last :data:`RESUME_SPAN` s
    (``quiet`` True), or ``limit`` (False); a server without counters, one slice (``quiet`` None).
    """
    began = time.monotonic()
    origin = {"t": 0.0, **_counters(perfdata)}
    first = SLICE if load.warmup == AUTO else min(SLICE, float(load.warmup))
    if first <= 0:
        return {"seconds": 0.0, "quiet": None, "slices": []}
    with warming.Room(load.warming if load.warmup == AUTO else "shared", perfdata) as one:
        slices = [one(lambda: _slice(url, scenario, _warming_load(load, first), "resume", began=began, cpus=cpus,
                                     workdir=workdir, runner=runner, perfdata=perfdata, on_slice=on_slice))]
        quiet = None if load.warmup != AUTO or perfdata is None else jit_quiet([origin, *slices], span=RESUME_SPAN)
        while quiet is False and time.monotonic() - began < limit:
            slices.append(one(lambda: _slice(url, scenario, _warming_load(load, SLICE), "resume", began=began,
                                             cpus=cpus, workdir=workdir, runner=runner, perfdata=perfdata,
                                             on_slice=on_slice)))
            quiet = jit_quiet([origin, *slices], span=RESUME_SPAN)
    return {"seconds": time.monotonic() - began, "quiet": quiet, "slices": slices}


def warm_up(url: str, scenario, load: Load, *, cpus, workdir: Path, runner=None, on_slice=None,
            perfdata=None, limit: float = LIMIT) -> dict:
    """Warm the server as ``load.warmup`` says and return what happened, to be stored with the run.

    ``{"mode": "fixed" | "auto", "seconds", "steady": bool | None, "class", "jit_quiet_s", "rule",
    "primed_s", "slices": [{"t", "phase", "connections", "rps", "p99", "compile_s", "compiles", "gc_count",
    "gc_s", "jit_cpu_s"}]}``; ``steady`` is None for a fixed warm-up (nothing was judged) and False when
    ``auto`` reached its limit. ``perfdata`` is the server's :class:`~benchlab.running.perfdata.PerfData`, or None
    for a server without JVM counters.

    ``auto`` first *primes* a JVM at :data:`PRIME_CONNECTIONS` connections until a slice's compiler is quiet
    (:data:`PRIME_QUIET`, at most :data:`PRIME_LIMIT` s), then warms it at the run's own load until the rule holds.

    Each slice makes room for the JIT as ``load.warming`` says (:mod:`benchlab.running.warming`, which also says
    why the compiler threads stay on the server's core).
    """
    began = time.monotonic()
    start = {"t": 0.0, "rps": None, "p99": None, **_counters(perfdata)}
    if load.warmup != AUTO:
        seconds = float(load.warmup)
        metrics: dict = {}
        if seconds > 0:
            metrics, _ = drivers.execute(drivers.warmer(load), url, scenario, _warming_load(load, seconds), cpus=cpus,
                                         workdir=workdir, phase="warmup", runner=runner)
        end = {"t": round(time.monotonic() - began, 3), **_counters(perfdata)}
        if metrics and on_slice is not None:  # the live view: the whole warm-up as one slice, its load unchanged
            on_slice({**end, "phase": "fixed", "connections": load.connections, "rps": metrics.get("rps"),
                      "p99": metrics.get("p99")})
        return {"mode": "fixed", "seconds": time.monotonic() - began, "steady": None, "class": None,
                "jit_quiet_s": None, "rule": None, "primed_s": None, "slices": [],
                "counters": [start, end] if perfdata else []}

    room = warming.Room(load.warming, perfdata)
    with room as take:
        def one(phase: str, slice_load: Load) -> dict:
            return take(lambda: _slice(url, scenario, slice_load, phase, began=began, cpus=cpus, workdir=workdir,
                                       runner=runner, perfdata=perfdata, on_slice=on_slice))

        slices: list[dict] = []
        prime = _warming_load(load, SLICE, connections=min(PRIME_CONNECTIONS, load.connections))
        if perfdata is not None and prime.connections < _warming_load(load, SLICE).connections:
            while time.monotonic() - began < min(PRIME_LIMIT, limit):
                slices.append(one("prime", prime))
                if jit_quiet([start, *slices], span=PRIME_QUIET):
                    break
        primed = slices[-1]["t"] if slices else None
        origin = slices[-1] if slices else start  # the counters as the run's own load begins
        own: list[dict] = []
        carrying = _warming_load(load, SLICE)
        while True:
            own.append(one("load", carrying))
            slices.append(own[-1])
            carrying = _carrying(load, carrying, own[-1])
            state = judge(own, origin=origin if perfdata else None)
            if state["warm"] or time.monotonic() - began >= limit:
                break
    return {"mode": "auto", "seconds": time.monotonic() - began, "steady": state["warm"], "class": state["class"],
            "jit_quiet_s": quiet_since([start, *slices]) if perfdata else None, "rule": state["rule"],
            "primed_s": primed, "slices": slices, "counters": [], **room.said}
