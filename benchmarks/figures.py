"""What every benchmark script prints: a ratio measured in pairs, its 95% interval, and the goal beside it."""

from __future__ import annotations

import math
import statistics


def ratio_interval(ratios: list[float], *, confidence: float = 0.95) -> tuple[float, float, float]:
    """(geometric mean, low, high) of pair ratios: a Student t interval on their logs."""
    from scipy import stats

    logs = [math.log(r) for r in ratios]
    centre = statistics.mean(logs)
    if len(logs) < 2:
        return math.exp(centre), math.nan, math.nan
    half = stats.t.ppf((1 + confidence) / 2, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(centre), math.exp(centre - half), math.exp(centre + half)


def verdict(low: float, high: float, goal: float, *, at_least: bool = True) -> str:
    """"met", "missed" or "not decided" by the interval [low, high] against the goal."""
    if math.isnan(low):
        return "not decided (one pair has no interval)"
    if at_least:
        return "met" if low >= goal else "missed" if high < goal else "not decided: more pairs needed"
    return "met" if high <= goal else "missed" if low > goal else "not decided: more pairs needed"


def line(name: str, ratios: list[float], goal: float, *, at_least: bool = True) -> str:
    centre, low, high = ratio_interval(ratios)
    sign = ">=" if at_least else "<="
    return (f"{name}: {centre:.3f} [{low:.3f}, {high:.3f}] (95% interval over {len(ratios)} pairs); "
            f"goal {sign} {goal:g}: {verdict(low, high, goal, at_least=at_least)}")
