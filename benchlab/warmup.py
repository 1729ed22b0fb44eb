"""Warm-up: a fixed time, or ``auto``: slices of load until throughput has stopped rising.

A JVM on one core is far from warm after 10 s (Tomcat gave 9.0k req/s after 15 s of warm-up and 18.1k
after 60 s), so a fixed warm-up measures how fast the JIT settles as much as how fast the server serves.
``auto`` offers load in slices of :data:`SLICE` seconds and stops once the last three slices agree
within :data:`TOLERANCE` with no upward trend, or at :data:`LIMIT` seconds, after which the run is
flagged ``not_warm``. Nothing of the warm-up is a result, but its curve is kept with the run.
"""

from __future__ import annotations

import time
from pathlib import Path

from . import drivers
from .load import AUTO, Load

SLICE = 5.0
LIMIT = 180.0
TOLERANCE = 0.02
WINDOW = 3


def steady(rps: list[float], *, tolerance: float = TOLERANCE, window: int = WINDOW) -> bool:
    """True when the last ``window`` slices lie within ``tolerance`` of their mean and do not rise.

    "Do not rise": the last is at most half the tolerance above the first, so a slow climb of 1% per
    slice still counts as warming.

    >>> steady([5000, 9000, 11800, 12000, 11900])
    True
    >>> steady([10000, 10090, 10180])          # within 2%, but climbing 0.9% a slice
    False
    """
    last = rps[-window:]
    if len(last) < window or min(last) <= 0:
        return False
    mean = sum(last) / window
    return (max(last) - min(last)) / mean <= tolerance and (last[-1] - last[0]) / mean <= tolerance / 2


def _warming_load(load: Load, seconds: float) -> Load:
    """The load that warms the server: the run's own connections through wrk, for ``seconds``.

    A count load has no duration of its own, and a rate load warms faster as a closed loop; either way
    it is wrk at the same concurrency (h2load's own warm-up option skews its byte counts).
    """
    connections = load.users if load.model == "count" else load.connections
    return Load(connections=connections, threads=min(load.threads, connections), duration=seconds,
                warmup=seconds, timeout=load.timeout)


def warm_up(url: str, scenario, load: Load, *, cpus, workdir: Path, runner=None, on_slice=None) -> dict:
    """Warm the server as ``load.warmup`` says and return what happened, to be stored with the run.

    ``{"mode": "fixed" | "auto", "seconds": float, "steady": bool | None, "slices": [{"t", "rps", "p99"}]}``;
    ``steady`` is None for a fixed warm-up (nothing was judged) and False when ``auto`` reached its limit.
    """
    wrk = drivers.tool("wrk")
    began = time.monotonic()
    if load.warmup != AUTO:
        if load.warmup > 0:
            drivers.execute(wrk, url, scenario, _warming_load(load, load.warmup), cpus=cpus, workdir=workdir,
                            phase="warmup", runner=runner)
        return {"mode": "fixed", "seconds": time.monotonic() - began, "steady": None, "slices": []}
    slices: list[dict] = []
    while True:
        metrics, _ = drivers.execute(wrk, url, scenario, _warming_load(load, SLICE), cpus=cpus, workdir=workdir,
                                     phase="warmup", runner=runner)
        slices.append({"t": round(time.monotonic() - began, 3), "rps": metrics.get("rps"), "p99": metrics.get("p99")})
        if on_slice is not None:
            on_slice(slices[-1])
        done = steady([s["rps"] or 0.0 for s in slices])
        if done or time.monotonic() - began >= LIMIT:
            return {"mode": "auto", "seconds": time.monotonic() - began, "steady": done, "slices": slices}
