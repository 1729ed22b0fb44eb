"""What load to offer: the load models and their parameters.

Three models, one :class:`Load`:

``duration``  a closed loop for a fixed time: ``connections`` keep one request in flight each (wrk), or
              ``pipeline`` requests each, sent together (HTTP/1.1 pipelining, as TechEmpower's pipelined test).
``count``     a closed loop of a fixed number of requests: ``users`` in parallel, ``loops`` each
              (h2load, JMeter), as the published JMeter thread groups were.
``rate``      an open loop at a constant ``rate`` of requests per second for a fixed time (vegeta):
              requests leave on schedule whether or not the server keeps up, so a stall shows in the
              latency instead of being hidden (no coordinated omission); ``keepalive=False`` opens a
              connection per request, as Gatling's new user per request does (a duration load's too: wrk
              sends ``Connection: close``, so the warm-up of such a run warms the accept and close paths).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..errors import UsageError
from ..schema import AUTO, LOAD_MODELS, SECONDS, WARMINGS, LoadModel, Warming, Wire  # warmup=AUTO: warm until warm
from . import protocols

MODELS = LOAD_MODELS


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|min|m|h)?\s*$")


def parse_duration(value: str | float | int, *, what: str = "duration") -> float:
    """Seconds from ``"30s"``, ``"2m"``, ``"500ms"``, ``"1h"`` or a number of seconds.

    >>> parse_duration("2m")
    120.0
    """
    if isinstance(value, bool):
        raise UsageError(f"bad {what} {value!r}: give seconds or a string such as '30s', '2m' or '500ms'")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value))
        if not match:
            raise UsageError(f"bad {what} {value!r}: use a number with a unit, such as '30s', '2m' or '500ms'")
        seconds = float(match.group(1)) * SECONDS[match.group(2) or "s"]
    if seconds < 0 or math.isnan(seconds) or math.isinf(seconds):
        raise UsageError(f"bad {what} {value!r}: it must be zero or more seconds")
    return seconds


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{name} must be a whole number of 1 or more, not {value!r}")
    return value


@dataclass(frozen=True)
class Load:
    """One load setting, checked when it is built. Times are in seconds.

    Examples
    --------
    >>> Load(connections=200, threads=4, duration=30, warmup=10).model
    'duration'
    >>> Load.count(users=100, loops=1000).requests
    100000
    """

    model: LoadModel = "duration"
    connections: int = 200
    threads: int = 1
    duration: float = 30.0
    warmup: float | str = "auto"
    warming: Warming = "jit-first"  # how warmup="auto" makes room for a JVM's compiler (benchlab.running.warming)
    timeout: float = 10.0
    users: int | None = None
    loops: int | None = None
    rate: float | None = None
    ramp_up: float = 0.0
    plan: str | None = None
    pipeline: int = 1
    keepalive: bool = True
    slo: str | None = None  # a rate load's capacity search: "p99<5ms" (benchlab.running.cost); rate: its start
    protocol: Wire = "http1"  # what the requests speak (benchlab.running.protocols)
    streams: int = 1  # HTTP/2's requests in flight on each connection (h2load -m)

    def __post_init__(self) -> None:
        if self.model not in MODELS:
            raise UsageError(f"unknown load model {self.model!r}: choose one of {', '.join(MODELS)}")
        for name in ("duration", "warmup", "timeout", "ramp_up"):
            if name == "warmup" and self.warmup == AUTO:
                continue
            if name == "warmup" and isinstance(self.warmup, str) and not _DURATION.match(self.warmup):
                raise UsageError(f"bad warmup {self.warmup!r}: use 'auto' (until the JIT is quiet and throughput "
                                 "steady) or a time such as '30s'")
            object.__setattr__(self, name, parse_duration(getattr(self, name), what=name))
        if self.warming not in WARMINGS:
            raise UsageError(f"unknown warming {self.warming!r}: choose one of {', '.join(WARMINGS)}")
        if self.model == "count":
            users = _positive_int("users", self.users)
            loops = _positive_int("loops", self.loops)
            if users * loops < 1:
                raise UsageError("users x loops must be 1 or more requests")
            object.__setattr__(self, "connections", users)
        else:
            _positive_int("connections", self.connections)
        _positive_int("threads", self.threads)
        if self.model == "rate":
            if self.rate is None or isinstance(self.rate, bool) or not self.rate > 0:
                raise UsageError(f"rate must be more than 0 requests per second, not {self.rate!r}")
            object.__setattr__(self, "rate", float(self.rate))
        if self.model in ("duration", "rate") and self.duration <= 0:
            raise UsageError("duration must be more than 0 seconds, for example '10s'")
        if self.model == "duration" and self.connections < self.threads:
            raise UsageError(
                f"connections ({self.connections}) must be at least threads ({self.threads}): "
                "each thread needs one connection or more; raise connections or lower threads"
            )
        if self.timeout <= 0:
            raise UsageError("timeout must be more than 0 seconds")
        if not isinstance(self.keepalive, bool):
            raise UsageError(f"keepalive is True or False, not {self.keepalive!r}")
        if not self.keepalive and (self.model == "count" or self.pipeline > 1):
            raise UsageError(f"keepalive=False opens a connection per request of a rate or duration load; a "
                             f"{'pipelined' if self.pipeline > 1 else self.model} load keeps its connections: drop "
                             f"keepalive or {'pipeline' if self.pipeline > 1 else 'use load=rate'}")
        if self.slo is not None:
            from . import cost  # lazily: it reads the flags' limits, and a Load is built before pandas is needed

            column, limit = cost.parse(self.slo)
            if self.model != "rate":
                raise UsageError(f"slo={self.slo!r} searches the highest paced rate under a latency limit: it needs "
                                 f"load='rate' (an open loop, rates the search's first rate), not {self.model!r}")
            object.__setattr__(self, "slo", f"{column}<{limit * 1e3:g}ms")
        _positive_int("pipeline", self.pipeline)
        protocols.check(self.protocol)
        _positive_int("streams", self.streams)
        if self.streams > 1 and self.protocol not in protocols.HTTP2:
            raise UsageError(f"streams={self.streams} sets HTTP/2's requests in flight on a connection; protocol "
                             f"{self.protocol!r} sends one at a time: give protocol='h2c' or 'h2', or use pipeline")
        if self.pipeline > 1 and self.protocol != "http1":
            raise UsageError(f"pipeline={self.pipeline} is HTTP/1.1 pipelining in clear text, not {self.protocol!r}: "
                             "drop pipeline, or use streams with HTTP/2")
        if self.pipeline > 1 and self.model != "duration":
            raise UsageError(f"pipeline={self.pipeline} pipelines a timed closed loop (load='duration', wrk); a "
                             f"{self.model} load sends one request at a time: drop pipeline or use load='duration'")

    @classmethod
    def count(cls, users: int, loops: int, **options) -> Load:
        """A fixed-count closed loop: ``users`` in parallel, ``loops`` requests each."""
        if isinstance(users, int) and isinstance(loops, int) and not isinstance(users, bool) and users * loops < 1:
            raise UsageError("users x loops must be 1 or more requests: raise users or loops")
        return cls(model="count", users=users, loops=loops, **options)

    @classmethod
    def constant_rate(cls, rate: float, duration: float | str = 30.0, **options) -> Load:
        """An open loop at ``rate`` requests per second."""
        return cls(model="rate", rate=rate, duration=parse_duration(duration), **options)

    @property
    def requests(self) -> int | None:
        """The planned request count of a ``count`` load, else None."""
        if self.model != "count":
            return None
        assert self.users is not None and self.loops is not None  # a count load has both (__post_init__)
        return self.users * self.loops

    @property
    def warmup_seconds(self) -> float:
        """The warm-up expected, for progress and ETA: a fixed warm-up, or for ``auto`` what a JVM on one core needs
        here: 60 s with its compiler first (41-46 s measured, docs/warm-up.md), else 200 s (140-320 s at 200
        connections)."""
        if self.warmup != AUTO:
            return float(self.warmup)
        return 60.0 if self.warming == "jit-first" else 200.0

    @property
    def planned_seconds(self) -> float:
        """How long the measured phase is expected to take, for progress and ETA."""
        if self.slo is not None:  # a capacity search: some 12 steps of half a window, then the held window
            from . import cost

            return self.duration + 12 * max(cost.STEP_MIN, cost.STEP_SHARE * self.duration)
        requests = self.requests
        if requests is not None:
            # A guess of 20k requests/s: only used for an ETA before the first run has finished.
            return max(1.0, requests / 20000.0)
        return self.duration
