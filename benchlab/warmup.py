"""Warm-up: a fixed time, or ``auto``: slices of load until the JVM says it is warm and throughput agrees.

A JVM on one core is far from warm after 10 s, and throughput alone cannot tell: measured here, Jetty
served 4.7-5.0k req/s from 15 s to 35 s, a plateau flat enough for any "last slices agree" rule, while its
JIT added 5 s of compile time every 5 s; after t = 80 s its compiler was quiet and it served 14-22k. So
``auto`` asks the JVM (:mod:`benchlab.perfdata`) after every slice of :data:`SLICE` seconds, and calls the
server warm only when both hold:

1. **the compiler is quiet**: over the last :data:`QUIET_WINDOW` seconds the JIT's compile time grew by
   at most :data:`QUIET_SHARE` of the wall time. Measured here (``benchmarks/warmup.py``'s curves), a
   compiling JVM adds 0.3-1.0 s of compile time per second of wall time, and a warm one 0.000-0.03
   (a late compile or an invalidation now and then); 0.05 sits between them.
2. **throughput has a steady state**: the change points of the slice series
   (:mod:`benchlab.changepoints`) leave a last segment of at least :data:`STEADY_WINDOW` seconds, long
   enough to see a JIT step, and the last :data:`STEADY_WINDOW` seconds show no significant upward trend.

A server with no JVM counters (not a JVM, or a JVM without perfdata) is judged on throughput alone, and
its warm-up says so (``"rule": "throughput"``). At :data:`LIMIT` seconds the warm-up stops regardless:
the run is flagged ``not_warm``. Each warm-up is classified as Barrett et al. do (*flat*, *warm-up*,
*slowdown*, *no steady state*), and the time the JIT went quiet is kept, with the curve of rps, p99 and
compile time per slice. Nothing of the warm-up is a result.
"""

from __future__ import annotations

import time
from pathlib import Path

from . import changepoints, drivers
from .load import AUTO, Load

SLICE = 5.0
LIMIT = 180.0
QUIET_WINDOW = 20.0
QUIET_SHARE = 0.05
STEADY_WINDOW = 30.0


def _slices(seconds: float) -> int:
    return max(2, int(round(seconds / SLICE)))


def jit_quiet(slices: list[dict], *, window: float = QUIET_WINDOW, share: float = QUIET_SHARE) -> bool | None:
    """Whether the compile time in ``slices`` (``{"t", "compile_s"}`` each) grew by at most ``share`` of
    the wall time over the last ``window`` seconds; None when the slices carry no compile time.

    >>> jit_quiet([{"t": 5.0 * i, "compile_s": 30.0 + 0.05 * i} for i in range(1, 8)])
    True
    >>> jit_quiet([{"t": 5.0 * i, "compile_s": 4.0 * i} for i in range(1, 8)])
    False
    """
    known = [s for s in slices if s.get("compile_s") is not None]
    if not known:
        return None
    end = known[-1]["t"]
    before = [s for s in known if s["t"] <= end - window + 1e-9]
    if not before:
        return False  # not yet a whole window of counters
    start = before[-1]
    return (known[-1]["compile_s"] - start["compile_s"]) <= share * (end - start["t"])


def quiet_since(slices: list[dict], *, window: float = QUIET_WINDOW, share: float = QUIET_SHARE) -> float | None:
    """The time the JIT went quiet for good: the end of the first window after which every window was
    quiet; None if it never did (or nothing was counted).

    >>> curve = [{"t": 5.0 * i, "compile_s": min(4.0 * i, 40.0)} for i in range(1, 20)]
    >>> quiet_since(curve)
    70.0
    """
    if not any(s.get("compile_s") is not None for s in slices):
        return None
    since = None
    for i in range(1, len(slices) + 1):
        quiet = jit_quiet(slices[:i], window=window, share=share)
        if quiet and since is None:
            since = slices[i - 1]["t"]
        elif not quiet:
            since = None
    return since


def judge(slices: list[dict], *, origin: dict | None = None) -> dict:
    """The state of a warm-up so far: ``{"warm", "class", "jit_quiet", "rule"}``.

    ``warm`` is the rule of this module; ``class`` the Barrett class of the throughput series; ``rule``
    "jit+throughput", or "throughput" when the server has no JVM counters. ``origin`` holds the counters
    read before the first slice.
    """
    rps = [s.get("rps") or 0.0 for s in slices]
    steady_slices = _slices(STEADY_WINDOW)
    kind, _ = changepoints.classify(rps, steady_slices=steady_slices) if rps else (changepoints.NO_STEADY_STATE, [])
    quiet = jit_quiet([origin, *slices] if origin else slices)
    settled = (len(rps) >= steady_slices and min(rps[-steady_slices:]) > 0 and kind != changepoints.NO_STEADY_STATE
               and not changepoints.rising(rps[-steady_slices:]))
    warm = settled and quiet is not False
    return {"warm": warm, "class": kind, "jit_quiet": quiet,
            "rule": "throughput" if quiet is None else "jit+throughput"}


def steady(rps: list[float]) -> bool:
    """The throughput half of the rule, for a series without JVM counters.

    >>> steady([5000.0, 9000.0] + [12000.0, 11900.0, 12100.0, 12050.0, 11950.0, 12000.0])
    True
    >>> steady([5000.0, 5010.0, 4990.0])      # too short to see a JIT step
    False
    """
    return judge([{"rps": r} for r in rps])["warm"]


def _warming_load(load: Load, seconds: float) -> Load:
    """The load that warms the server: the run's own connections through wrk, for ``seconds``.

    A count load has no duration of its own, and a rate load warms faster as a closed loop; either way
    it is wrk at the same concurrency (h2load's own warm-up option skews its byte counts).
    """
    connections = load.users if load.model == "count" else load.connections
    return Load(connections=connections, threads=min(load.threads, connections), duration=seconds,
                warmup=seconds, timeout=load.timeout)


def _counters(perfdata) -> dict:
    if perfdata is None:
        return {}
    try:
        values = perfdata.read()
    except (OSError, ValueError):
        return {}
    return {"compile_s": values["compile_s"], "compiles": values["compiles"], "gc_count": values["gc_count"],
            "gc_s": values["gc_s"]}


def warm_up(url: str, scenario, load: Load, *, cpus, workdir: Path, runner=None, on_slice=None,
            perfdata=None, limit: float = LIMIT) -> dict:
    """Warm the server as ``load.warmup`` says and return what happened, to be stored with the run.

    ``{"mode": "fixed" | "auto", "seconds", "steady": bool | None, "class", "jit_quiet_s", "rule",
    "slices": [{"t", "rps", "p99", "compile_s", "compiles", "gc_count", "gc_s"}]}``; ``steady`` is None for
    a fixed warm-up (nothing was judged) and False when ``auto`` reached its limit. ``perfdata`` is the
    server's :class:`~benchlab.perfdata.PerfData`, or None for a server without JVM counters.
    """
    wrk = drivers.tool("wrk")
    began = time.monotonic()
    start = {"t": 0.0, "rps": None, "p99": None, **_counters(perfdata)}
    if load.warmup != AUTO:
        if load.warmup > 0:
            drivers.execute(wrk, url, scenario, _warming_load(load, load.warmup), cpus=cpus, workdir=workdir,
                            phase="warmup", runner=runner)
        end = {"t": round(time.monotonic() - began, 3), **_counters(perfdata)}
        return {"mode": "fixed", "seconds": time.monotonic() - began, "steady": None, "class": None,
                "jit_quiet_s": None, "rule": None, "slices": [], "counters": [start, end] if perfdata else []}
    slices: list[dict] = []
    while True:
        metrics, _ = drivers.execute(wrk, url, scenario, _warming_load(load, SLICE), cpus=cpus, workdir=workdir,
                                     phase="warmup", runner=runner)
        slices.append({"t": round(time.monotonic() - began, 3), "rps": metrics.get("rps"), "p99": metrics.get("p99"),
                       **_counters(perfdata)})
        if on_slice is not None:
            on_slice(slices[-1])
        state = judge(slices, origin=start if perfdata else None)
        if state["warm"] or time.monotonic() - began >= limit:
            return {"mode": "auto", "seconds": time.monotonic() - began, "steady": state["warm"],
                    "class": state["class"], "jit_quiet_s": quiet_since([start, *slices]) if perfdata else None,
                    "rule": state["rule"], "slices": slices, "counters": []}
