"""The latency fields of a result, computed from every request's latency (h2load's log, JMeter's JTL)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...schema import LATENCY_COLUMNS, PERCENTILE_COLUMNS


def percentile(ordered: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile of ``ordered`` (sorted ascending, not empty)."""
    # round() first: 99.9 / 100 * 1000 is 999.0000000000001 in floating point, whose ceiling is 1000.
    rank = max(1, math.ceil(round(q * len(ordered) / 100.0, 9)))
    return ordered[min(rank, len(ordered)) - 1]


def summary(seconds: Sequence[float]) -> dict:
    """lat_min, lat_mean, lat_stdev, lat_max and p50..p9999 of per-request latencies in seconds.

    >>> summary([0.001, 0.002, 0.003, 0.004])["p50"]
    0.002
    """
    if not seconds:
        return dict.fromkeys(LATENCY_COLUMNS)
    ordered = sorted(seconds)
    n = len(ordered)
    mean = math.fsum(ordered) / n
    stdev = math.sqrt(math.fsum((x - mean) ** 2 for x in ordered) / (n - 1)) if n > 1 else 0.0
    return {
        "lat_min": ordered[0],
        "lat_mean": mean,
        "lat_stdev": stdev,
        "lat_max": ordered[-1],
        **{name: percentile(ordered, q) for name, q in PERCENTILE_COLUMNS.items()},
    }
