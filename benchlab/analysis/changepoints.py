"""Change points in a series of throughput slices, and the warm-up class they give.

The classes are those of Barrett et al., "Virtual machine warmup blows hot and cold" (OOPSLA 2017), as
warmup_stats computes them, turned round for throughput (higher is faster):

- ``flat``: no change point: the series was steady from its start;
- ``warm-up``: the last segment is the fastest (no earlier segment is faster beyond the noise);
- ``slowdown``: an earlier segment was faster than the last;
- ``no steady state``: the last segment is shorter than the window a steady state must last.

Change points are found by optimal partitioning (PELT without pruning; a warm-up has at most a few
hundred slices) with a Normal mean-shift cost on the logs of the series (throughput's noise is a share of
its level: 300 req/s at 5k, 1.5k at 18k, as measured here), the noise's scale estimated robustly from the
first differences (so steps do not inflate it), and a penalty of :data:`PENALTY` x log(n) per change point,
chosen so that a series of pure noise gets a false change point in under 5% of cases
(``tests/test_changepoints.py`` simulates it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..schema import WARMUP_CLASSES, WarmupClass

PENALTY = 6.0
MIN_SEGMENT = 2  # one slice is an outlier (a GC, a connection storm), not a segment

CLASSES = WARMUP_CLASSES
FLAT, WARMUP, SLOWDOWN, NO_STEADY_STATE = WARMUP_CLASSES


@dataclass(frozen=True)
class Segment:
    start: int   # index of its first slice
    end: int     # one past its last
    mean: float

    @property
    def length(self) -> int:
        return self.end - self.start


def noise(values, *, floor: float = 0.005) -> float:
    """A robust estimate of the slice-to-slice noise's standard deviation: the median absolute first
    difference, scaled for a Normal and for differencing; never below ``floor`` (on logs, 0.5%).

    >>> noise([10.0, 10.0, 10.0]) > 0
    True
    """
    x = np.asarray(values, dtype=float)
    if len(x) < 3:
        return max(floor, 1e-12)
    d = np.abs(np.diff(x))
    return max(float(np.median(d)) / 0.6745 / math.sqrt(2.0), floor, 1e-12)


def segments(values, *, penalty: float = PENALTY, min_segment: int = MIN_SEGMENT) -> list[Segment]:
    """The series cut at its change points: the partition minimising the squared error over the noise's
    variance plus ``penalty`` x log(n) per cut.

    >>> [(s.start, s.end) for s in segments([5.0] * 8 + [20.0] * 8)]
    [(0, 8), (8, 16)]
    >>> len(segments([10.0, 10.2, 9.9, 10.1, 9.8, 10.0]))
    1
    """
    raw = np.asarray(values, dtype=float)
    n = len(raw)
    if n == 0:
        return []
    x = np.log(raw) if (raw > 0).all() else raw
    sigma2 = noise(x) ** 2
    beta = penalty * math.log(max(n, 2))
    # Plain floats, not numpy scalars: the double loop is the cost of a warm-up's every slice.
    s1 = [0.0, *np.cumsum(x).tolist()]
    s2 = [0.0, *np.cumsum(x * x).tolist()]
    best = [0.0] + [math.inf] * n
    cut = [0] * (n + 1)
    for b in range(1, min(min_segment, n + 1)):  # fewer slices than a segment: one short segment
        best[b] = (s2[b] - s1[b] * s1[b] / b) / sigma2
    for b in range(min_segment, n + 1):
        sb1, sb2 = s1[b], s2[b]
        low, where = (sb2 - sb1 * sb1 / b) / sigma2, 0  # no cut before b
        for a in range(min_segment, b - min_segment + 1):
            total = sb1 - s1[a]
            value = best[a] + (sb2 - s2[a] - total * total / (b - a)) / sigma2 + beta
            if value < low:
                low, where = value, a
        best[b], cut[b] = low, where
    bounds = []
    b = n
    while b > 0:
        a = cut[b]
        bounds.append((a, b))
        b = a
    return [Segment(a, b, float(raw[a:b].mean())) for a, b in reversed(bounds)]


def classify(values, *, steady_slices: int) -> tuple[WarmupClass, list[Segment]]:
    """The warm-up class of a throughput series (:data:`CLASSES`) and its segments. The last segment must
    hold at least ``steady_slices`` slices to be a steady state.

    >>> classify([5.0] * 6 + [20.0] * 8, steady_slices=6)[0]
    'warm-up'
    >>> classify([20.0] * 6 + [5.0] * 8, steady_slices=6)[0]
    'slowdown'
    >>> classify([5.0] * 10 + [20.0] * 3, steady_slices=6)[0]
    'no steady state'
    >>> classify([10.0, 10.1, 9.9, 10.0, 10.2, 9.8, 10.1], steady_slices=6)[0]
    'flat'
    """
    found = segments(values)
    if not found or found[-1].length < steady_slices:
        return NO_STEADY_STATE, found
    if len(found) == 1:
        return FLAT, found
    last = found[-1]
    raw = np.asarray(values, dtype=float)
    sigma = noise(np.log(raw)) if (raw > 0).all() else noise(raw) / max(abs(last.mean), 1e-12)  # relative
    faster = [s for s in found[:-1]
              if s.mean / last.mean - 1 > max(2.0 * sigma * math.sqrt(1 / s.length + 1 / last.length), 0.01)]
    return (SLOWDOWN if faster else WARMUP), found


def rising(values) -> bool:
    """True when an ordinary least-squares line through ``values`` (equally spaced) rises significantly
    (one-sided t test of its slope at 5%): the series is still getting faster.

    >>> rising([1.0, 2.0, 3.1, 3.9, 5.0, 6.1])
    True
    >>> rising([10.0, 10.3, 9.8, 10.1, 9.9, 10.2])
    False
    """
    y = np.asarray(values, dtype=float)
    n = len(y)
    if n < 3:
        return False
    t = np.arange(n, dtype=float) - (n - 1) / 2.0
    slope = float((t * (y - y.mean())).sum() / (t * t).sum())
    residual = y - y.mean() - slope * t
    dof = n - 2
    s2 = float((residual * residual).sum()) / dof
    if s2 <= 0:
        return bool(slope > 0)
    from scipy import stats

    error = math.sqrt(s2 / float((t * t).sum()))
    return bool(slope / error > stats.t.ppf(0.95, dof))
