"""What a window cost the server (:func:`spent`), and what a warm fork carries under a latency limit (:func:`search`).

Each window's cost is the server's CPU seconds over its load, read exactly before and after (its process tree from
``/proc``, or its container's cgroup), and those per answer: what docs/cost.md judges at a fixed rate.

Capacity under a latency limit is the highest paced rate a warm fork carries with a percentile under a limit.

``slo="p99<5ms"`` with ``load="rate"`` makes each window of a fork a search (Envoy Nighthawk's scheme): from the
run's ``rate``, measured windows at a rate that doubles while a step *passes*, then a bisection between the last
rate that passed and the first that failed until they are within :data:`RESOLUTION` of each other; the rate found
is then *held* and measured once more, and that window is the run, its ``capacity_rps`` the rate found.

A step passes (:func:`passes`) when its load tool had CPU to spare, its percentile is under the limit, it kept its
rate (sent and achieved) and it lost almost no request, each judged by the flags' own limits; a step that failed on
its percentile alone is measured again, and two of three decide. Each step is a window of
:func:`benchlab.running.window.measure` at its rate (the cores looked at first, the monitor running), shorter than
the held one (:data:`STEP_SHARE` of ``duration``, at least :data:`STEP_MIN` seconds). What stopped the search at
the lowest rate that failed is the run's ``capacity_by``: "server", or "load tool" (then the capacity is the tool's,
flagged, never taken for the server's).
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from collections.abc import Callable
from typing import Protocol, TypeVar

from ..analysis.flags import GENERATOR_BUSY_LIMIT, RATE_SHORTFALL_LIMIT
from ..analysis.validity import ERROR_SHARE_LIMIT
from ..errors import UsageError
from ..schema import ERROR_KINDS, PERCENTILE_COLUMNS, SECONDS


class _Metered(Protocol):
    metrics: dict


#: What a window's measurement is to the search: anything with its metrics (:class:`~.window.Measured`).
Measured = TypeVar("Measured", bound=_Metered)

#: The bisection stops when the failing rate is within this share above the passing one (Nighthawk: 1%).
RESOLUTION = 0.01
#: A search step's window: this share of the run's duration, at least :data:`STEP_MIN` s.
STEP_SHARE = 0.5
STEP_MIN = 2.0
#: The most steps of one search: doublings from the first rate, then the bisection's.
MAX_STEPS = 24
#: The most windows that hold the rate found, each :data:`RESOLUTION` below the one before that failed. Measured
#: here (tests/test_cost.py: Tomcat, 8 threads, 10 ms a request, 2 s steps, 4 s holds): the holds kept 767-794
#: req/s in 5 searches of 6, and in the sixth three holds kept nothing, so that fork had no capacity.
HOLDS = 6
#: A step passes only if its load tool was no busier than the ``generator_bound`` flag allows (measured here, vegeta on
#: one core answered p99 over 5 ms at 20,000-23,000 req/s on reflect while the server used under half its core), it
#: kept its rate as the ``rate_shortfall`` flag asks, and lost no more requests than the validity rule lets a window.
TOOL_BUSY, KEPT, ERROR_LIMIT = GENERATOR_BUSY_LIMIT, RATE_SHORTFALL_LIMIT, ERROR_SHARE_LIMIT

_SLO = re.compile(r"^\s*(p\d+)\s*<=?\s*(\d+(?:\.\d+)?)\s*(ms|s|us|µs)\s*$")


def spent(before: float | None, after: float | None, metrics: dict) -> dict:
    """What the window cost the server: its CPU seconds from just before the load tool started to just after it
    ended, and those per answer (an error status is an answer; a refused or timed-out request is not).

    The span is the load tool's whole run, a few milliseconds wider than its measured time at each end, in which
    a server under no load spends next to nothing; what a JVM does in the background (its GC, its compiler) is part
    of what serving costs it.

    >>> spent(10.0, 12.5, {"requests": 50_000, "errors_timeout": 0, "errors_connect": 0})
    {'server_cpu_s': 2.5, 'cpu_per_request': 5e-05}
    >>> spent(None, 1.0, {"requests": 10})
    {'server_cpu_s': None, 'cpu_per_request': None}
    """
    if before is None or after is None:
        return {"server_cpu_s": None, "cpu_per_request": None}
    unanswered = sum(metrics.get(f"errors_{kind}") or 0 for kind in ERROR_KINDS if kind != "status")
    answered = (metrics.get("requests") or 0) - unanswered
    used = round(after - before, 6)
    return {"server_cpu_s": used, "cpu_per_request": used / answered if answered > 0 else None}


def parse(slo: str) -> tuple[str, float]:
    """``(percentile column, limit in seconds)`` from ``"p99<5ms"``; a mistake is one line that names the fix.

    >>> parse("p99<5ms"), parse("p999 <= 20ms")
    (('p99', 0.005), ('p999', 0.02))
    """
    match = _SLO.match(str(slo))
    if not match:
        hint = " (the limit needs its unit)" if re.match(r"^\s*p\d+\s*<=?\s*[\d.]+\s*$", str(slo)) else ""
        raise UsageError(f"bad slo {slo!r}{hint}: give a percentile under a limit with its unit, such as p99<5ms")
    column, value, unit = match.groups()
    if column not in PERCENTILE_COLUMNS:
        raise UsageError(f"bad slo {slo!r}: the percentile is one of {', '.join(PERCENTILE_COLUMNS)}")
    seconds = float(value) * (1e-6 if unit in ("us", "µs") else SECONDS[unit])
    if seconds <= 0:
        raise UsageError(f"bad slo {slo!r}: the limit must be more than 0")
    return column, seconds


def passes(metrics: dict, column: str, limit: float, *, load_cores: int = 1) -> tuple[bool, str]:
    """Whether a step's window met the limit and kept its rate, and if not, why ("p99 7.2 ms", "kept 96%",
    "load tool sent 91%", "errors 0.4%").

    >>> passes({"p99": 0.004, "target_rps": 1000, "sent_rps": 1000, "achieved_rps": 999, "requests": 10}, "p99", 0.005)
    (True, '')
    >>> passes({"p99": 0.004, "target_rps": 1000, "sent_rps": 900, "achieved_rps": 899, "requests": 9}, "p99", 0.005)
    (False, 'load tool sent 90%')
    """
    target = metrics.get("target_rps") or math.nan
    sent, achieved = metrics.get("sent_rps") or 0.0, metrics.get("achieved_rps") or 0.0
    errors = sum(metrics.get(f"errors_{kind}") or 0 for kind in ERROR_KINDS)
    busy = (metrics.get("load_cpu_mean") or 0.0) / (100.0 * max(1, load_cores))
    if busy > TOOL_BUSY:  # a load tool out of CPU queues its own requests: the latency it reports is its own
        return False, f"load tool busy {busy:.0%}"
    value = metrics.get(column)
    # then the percentile: a server past its knee answers late, and the load tool, its requests in flight all taken
    # (vegeta's MAX_WORKERS), then sends less too; a tool that sent less while the answers came fast is the tool's
    if value is None or value >= limit:
        return False, f"{column} {value * 1e3:.3g} ms" if value is not None else f"no {column}"
    if sent < KEPT * target:
        return False, f"load tool sent {sent / target:.0%}"
    if achieved < KEPT * target:
        return False, f"kept {achieved / target:.0%}"
    if errors > ERROR_LIMIT * max(1, metrics.get("requests") or 0):
        return False, f"errors {errors / max(1, metrics.get('requests') or 0):.1%}"
    return True, ""


def search(load, measure_at: Callable[..., Measured], *, load_cores: int = 1) -> tuple[Measured, dict]:
    """``(held, found)``: the held window's measurement and what the search found, from ``measure_at(load)`` (a
    window of ``load``, returning an object with ``.metrics``), starting at ``load.rate``.

    ``found`` is ``{"capacity_rps", "capacity_by", "steps", "search_s", "slo"}``. Each step is ``{"rate", column,
    "sent_rps", "achieved_rps", "passed", "why", "attempt", "t"}``: a step failed on its percentile alone is measured
    up to three times, two deciding, ``attempt`` counting them. ``capacity_by`` is "server" (a step at a higher rate
    failed the limit), "load tool" (the tool could not send a higher rate), "limit" (no step passed: the first rate
    is already too much; the held window is then at the first rate), or "steps" (:data:`MAX_STEPS` ran out).
    """
    column, limit = parse(load.slo)
    step_load = dataclasses.replace(load, duration=max(STEP_MIN, STEP_SHARE * load.duration))
    began = time.monotonic()
    steps: list[dict] = []
    decided: list[tuple[float, bool, str]] = []  # each rate tried, whether it passed, and why not
    def once(rate: float, attempt: int) -> tuple[bool, str]:
        metrics = measure_at(dataclasses.replace(step_load, rate=round(rate, 1))).metrics
        ok, why = passes(metrics, column, limit, load_cores=load_cores)
        steps.append(_step(rate, column, metrics, ok, why, attempt=attempt, began=began))
        return ok, why

    def step(rate: float) -> bool:
        # A step that failed on its percentile alone is measured again, and two of three decide: a 2 s window's p99
        # rests on its slowest 1%, which one GC pause can move (measured here: reflect on Undertow passed at 3,969
        # req/s with p99 0.67 ms after failing at 4,000 with 21.8 ms).
        ok, why = once(rate, 1)
        if not ok and why.startswith(column) and len(steps) < MAX_STEPS - 1:
            ok = once(rate, 2)[0] and once(rate, 3)[0]
        decided.append((rate, ok, why))
        return ok

    low, high = None, None
    rate = float(load.rate)
    while len(steps) < MAX_STEPS:  # doubling while it passes
        if not step(rate):
            high = rate
            break
        low, rate = rate, rate * 2
    while low is not None and high is not None and high > low * (1 + RESOLUTION) and len(steps) < MAX_STEPS:
        middle = (low + high) / 2
        if step(middle):
            low = middle
        else:
            high = middle
    failed = [(rate, why) for rate, ok, why in decided if not ok]
    lowest = min(failed)[1] if failed else None  # what stopped it at the lowest rate that failed: server or tool
    by = ("limit" if low is None else "steps" if lowest is None or high is None or high > low * (1 + RESOLUTION) else
          "load tool" if lowest.startswith("load tool") else "server")
    held, low, by = _hold(load, low, by, measure_at, steps, began, load_cores=load_cores)
    return held, {"capacity_rps": round(low, 1) if low is not None else None, "capacity_by": by, "steps": steps,
                  "search_s": round(time.monotonic() - began, 1), "slo": load.slo}


def _hold(load, low: float | None, by: str, measure_at: Callable[..., Measured], steps: list[dict], began: float,
          *, load_cores: int) -> tuple[Measured, float | None, str]:
    """``(held, capacity, by)``: the rate found held for a whole window, and where that window failed, held again
    :data:`RESOLUTION` lower, at most :data:`HOLDS` times (each a step marked ``held``). A 2 s step can pass at a
    rate whose queue grows by 1% of it, which a 4 s window shows (measured here: Tomcat on ``sleep:50`` found
    4,050 req/s, 200 threads / 50 ms = 4,000, and 2 of 3 held windows fell short). The last window measured is
    always the one kept, so the run's files are its own. A rate no hold kept is no
    capacity: ``by`` is then "hold" (flagged ``capacity_unfound``)."""
    if low is None:  # nothing passed: the first rate is held as the run, not as a capacity
        return measure_at(dataclasses.replace(load, rate=round(float(load.rate), 1))), None, by
    column, limit = parse(load.slo)
    rate = low
    for attempt in range(1, HOLDS + 1):
        if attempt > 1:  # the last hold fell short: a step lower
            rate *= 1 - RESOLUTION
        held = measure_at(dataclasses.replace(load, rate=round(rate, 1)))
        ok, why = passes(held.metrics, column, limit, load_cores=load_cores)
        steps.append(_step(rate, column, held.metrics, ok, why, attempt=attempt, began=began, held=True))
        if ok or by != "server":
            return held, rate, by
    return held, rate, "hold"


def _step(rate: float, column: str, metrics: dict, ok: bool, why: str, *, attempt: int, began: float,
          held: bool = False) -> dict:
    """One step of a search as its metadata keeps it (a held window's marked ``held``)."""
    return {"rate": round(rate, 1), column: metrics.get(column), "sent_rps": metrics.get("sent_rps"),
            "achieved_rps": metrics.get("achieved_rps"), "passed": ok, "why": why, "attempt": attempt,
            **({"held": True} if held else {}), "t": round(time.monotonic() - began, 1)}
