"""Was the measurement window steady? Throughput in its first and second halves, from the monitor's bytes.

The monitor samples, every quarter second, the bytes the load tool has read so far (the answers it got)
and the bytes the server has written; the kernel counts them (``/proc/<pid>/io``), so this costs the load
tool nothing, where a per-request callback inside wrk would cost it a Lua call per answer. Answers of one
scenario have one size, so bytes per second is throughput up to a constant, and the ratio of the halves
needs no constant at all.

``drift`` is the second half's rate over the first's, minus 1: +0.08 means the server served 8% more in the
second half, still warming; -0.08 that it slowed down (a heap filling, a thermal limit, a noisy neighbour).
``drift_limit`` is what the run's own quarter-second noise allows: twice the standard error of that
difference, and never less than :data:`FLOOR`. A run whose drift exceeds its limit is flagged ``drifting``.

Two things set the limit, both from windows measured on this machine with nothing else running (80 windows of
5 s, Undertow and a Go server, ``benchmarks/disturbance.py clean``; docs/machine.md). The quarter-second rates
are not independent: the host's noise comes in runs of seconds (lag-1 autocorrelation median 0.18, upper
quartile 0.47), so the standard error is widened by ``sqrt((1 + rho) / (1 - rho))``, rho the lag-1
autocorrelation of the halves' residuals (an AR(1) series' variance of the mean). And a clean 5 s window's
halves differ by up to 8% (95th percentile 8.1%, the largest 18.5%) with nothing warming and nothing else
running: under the old 2% floor and independent samples, 19 of those 80 windows read ``drifting``, "still
warming, or slowing down", which none was. With the 8% floor and the widened error, 4 of 80 (0.050; the
limits were chosen on these windows, so that is an in-sample figure), and the same windows with a steady rise
from 0.9 to 1.1 of their rate are flagged in 0.62 of them.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

FLOOR = 0.08  # a clean 5 s window's halves differ by up to this much on a shared 2-core machine (above)
RHO_LIMIT = 0.9  # the autocorrelation the widening believes at most: beyond it a half holds one value
MIN_INTERVALS = 8  # four per half: fewer and the halves say nothing


def rates(samples: Iterable[Sequence], role: str) -> list[tuple[float, float]]:
    """``(t, bytes per second)`` between consecutive samples of ``role`` while bytes were moving.

    The first and last moving intervals are dropped: the load tool connects in the one and stops in the
    middle of the other.

    >>> rates([(0, "load", 1, 1, 0), (1, "load", 1, 1, 10), (2, "load", 1, 1, 30), (3, "load", 1, 1, 40),
    ...        (4, "load", 1, 1, 45), (5, "load", 1, 1, 45)], "load")
    [(1.5, 20.0), (2.5, 10.0)]
    """
    points = sorted((s[0], s[4]) for s in samples if s[1] == role and len(s) > 4 and s[4] is not None)
    steps = [((t0 + t1) / 2, (b1 - b0) / (t1 - t0)) for (t0, b0), (t1, b1) in zip(points, points[1:]) if t1 > t0]
    moving = [i for i, (_, rate) in enumerate(steps) if rate > 0]
    if len(moving) < 3:
        return []
    return steps[moving[0] + 1:moving[-1]]


def drift(samples: Iterable[Sequence]) -> dict:
    """``{"drift": ..., "drift_limit": ...}`` of a run's measurement samples; None for both when the samples
    carry no byte counts (a container's load tool, an old run) or too few.

    The load tool's bytes are preferred (what was answered, seen where it arrived); the server's written
    bytes are used when the load tool's are missing.

    >>> steady = [(t / 4, "load", 50, 1, 1000 * t) for t in range(41)]
    >>> drift(steady)["drift"]
    0.0
    >>> warming = [(t / 4, "load", 50, 1, 1000 * t + 20 * t * t) for t in range(41)]
    >>> round(drift(warming)["drift"], 2)
    0.54
    """
    samples = list(samples)
    for role in ("load", "server"):
        steps = rates(samples, role)
        if len(steps) >= MIN_INTERVALS:
            break
    else:
        return {"drift": None, "drift_limit": None}
    middle = (steps[0][0] + steps[-1][0]) / 2
    first = [rate for t, rate in steps if t < middle]
    second = [rate for t, rate in steps if t >= middle]
    mean_first, mean_second = sum(first) / len(first), sum(second) / len(second)
    if mean_first <= 0:
        return {"drift": None, "drift_limit": None}
    error = math.sqrt(_variance(first) / len(first) + _variance(second) / len(second)) / mean_first
    rho = _autocorrelation(first, second)
    error *= math.sqrt((1 + rho) / (1 - rho))
    return {"drift": mean_second / mean_first - 1.0, "drift_limit": max(FLOOR, 2.0 * error)}


def _autocorrelation(*halves: list[float]) -> float:
    """The lag-1 autocorrelation of the halves' residuals (each about its own mean), within 0 and
    :data:`RHO_LIMIT`: a negative one would narrow the limit on a handful of samples.

    >>> round(_autocorrelation([1, 2, 3, 4], [5, 6, 7, 8]), 2)
    0.25
    >>> _autocorrelation([1, 1], [2, 2])
    0.0
    """
    residuals = [[v - sum(h) / len(h) for v in h] for h in halves]
    square = sum(r * r for h in residuals for r in h)
    if square == 0:
        return 0.0
    lagged = sum(a * b for h in residuals for a, b in zip(h, h[1:]))
    return min(max(lagged / square, 0.0), RHO_LIMIT)


def _variance(values: list[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = sum(values) / len(values)
    return sum((v - mean) ** 2 for v in values) / (len(values) - 1)


def curves(records) -> pd.DataFrame:
    """The warm-up curves of ``records`` (:class:`~benchlab.store.results.Run`), one row per slice: id, server,
    repeat, t (seconds since the warm-up began), its phase ("prime" at a light load, "load" at the run's
    own) and connections, rps, p99, the JIT's cumulative compile time (``compile_s``) and its compiler
    threads' CPU time (``jit_cpu_s``; None for a server without JVM counters), whether that run's warm-up
    ended steady, its class and the time its JIT went quiet.

    Only ``warmup="auto"`` keeps a curve; a fixed warm-up adds no rows.

    >>> from benchlab.store.results import Run
    >>> run = Run(id="r1", params={"server": "s", "repeat": 1}, metrics={"rps": 1e3}, metadata={"warmup": {
    ...     "mode": "auto", "steady": True, "slices": [{"t": 5.0, "rps": 900.0, "p99": 0.02}]}})
    >>> curves([run])[["server", "t", "rps"]].values.tolist()
    [['s', 5.0, 900.0]]
    """
    import pandas as pd

    rows = []
    for r in records:
        warm = (r.metadata or {}).get("warmup") or {}
        for s in warm.get("slices") or ():
            rows.append({"id": r.id, "server": r.params.get("server"), "repeat": r.params.get("repeat"),
                         "t": s.get("t"), "phase": s.get("phase", "load"), "connections": s.get("connections"),
                         "rps": s.get("rps"), "p99": s.get("p99"), "compile_s": s.get("compile_s"),
                         "jit_cpu_s": s.get("jit_cpu_s"),
                         "steady": warm.get("steady"), "class": warm.get("class"),
                         "jit_quiet_s": warm.get("jit_quiet_s")})
    return pd.DataFrame(rows, columns=["id", "server", "repeat", "t", "phase", "connections", "rps", "p99",
                                       "compile_s", "jit_cpu_s", "steady", "class", "jit_quiet_s"])


IDLE_CPU = 10.0   # % of a core: a server this quiet is not serving
BUSY_CPU = 50.0   # % of a core: a load tool this busy is sending


def idle(samples: Iterable[Sequence]) -> float | None:
    """The longest time (s) the server sat below :data:`IDLE_CPU` while the load tool, still running, was above
    :data:`BUSY_CPU` with its read bytes still growing: a server that stalls (seen here: Undertow near 0%
    while wrk spun at 96%, its throughput falling from 28k to 5k req/s). None without both roles' CPU samples.

    >>> rows = [(t / 4, "server", 0.0 if 4 <= t < 16 else 95.0, 1, 0) for t in range(20)]
    >>> rows += [(t / 4, "load", 96.0, 1, 1000 * t) for t in range(20)]
    >>> idle(rows)
    3.0
    >>> report = [(t / 4, "load", 100.0, 1, 1000 * min(t, 4)) for t in range(20)]  # busy, nothing read
    >>> idle([r for r in rows if r[1] == "server"] + report)  # only the one quarter second the bytes still moved
    0.25
    >>> ended = [(t / 4, "load", 96.0, 1, 1000 * t) for t in range(8)]  # the tool's samples end with its attack
    >>> idle([(t / 4, "server", 0.0 if t >= 8 else 95.0, 1, 0) for t in range(20)] + ended)  # its report: no stall
    0.0
    """
    server: dict[float, float] = {}
    load: dict[float, float] = {}
    last_io = None
    for s in sorted(samples, key=lambda s: s[0]):
        if s[2] is None:
            continue
        if s[1] == "server":
            server[s[0]] = s[2]
        elif s[1] == "load":
            io = s[4] if len(s) > 4 else None
            # Busy means sending: wrk spends its last seconds at 100% CPU on its report, with nothing moving.
            moving = io is None or last_io is None or io > last_io
            load[s[0]] = s[2] if moving else 0.0
            last_io = io if io is not None else last_io
    if not server or not load:
        return None
    load_times = sorted(load)
    longest, began, t = 0.0, None, 0.0
    for t in sorted(server):
        i = bisect.bisect_right(load_times, t) - 1  # the load tool's latest sample at or before t
        # after its last sample the tool has ended (vegeta's report of 97,000 answers took 2.7 s at 19,500 req/s,
        # and the server, its load over, sat idle through it): no stall
        busy = 0 <= i and t <= load_times[-1] and load[load_times[i]] > BUSY_CPU
        if server[t] < IDLE_CPU and busy:
            began = t if began is None else began
        elif began is not None:
            longest, began = max(longest, t - began), None  # idle until this sample
    if began is not None:
        longest = max(longest, t - began)
    return longest
