"""Repeats by precision: add interleaved rounds until every throughput ratio is known to +/- ``precision``.

The rule looks only at the width of the intervals, never at whether a difference is significant:
stopping once a test happens to reject would make its p-values lie (optional stopping). The width does
not depend on the direction of the difference, so stopping on it keeps every test at its level.
"""

from __future__ import annotations

import json
import math

from . import stats

AUTO = "auto"


def _cells(records) -> dict[str, dict[str, list[float]]]:
    """``{cell: {server: [rps, ...]}}`` of the finished runs, one rps per fork (the mean of its windows); a
    cell is every parameter but server, repeat, iteration and fork."""
    windows: dict[str, dict[str, dict[str, list[float]]]] = {}
    for record in records:
        if record.status != "ok":
            continue
        params = {k: v for k, v in record.params.items() if k not in ("server", "repeat", "iteration", "fork")}
        cell = json.dumps(params, sort_keys=True, default=str)
        fork = record.params.get("fork") or f"{record.id}@{record.started_at}"
        windows.setdefault(cell, {}).setdefault(record.params["server"], {}).setdefault(fork, []).append(
            record.metrics.get("rps"))
    return {cell: {server: [sum(v) / len(v) for v in forks.values()] for server, forks in servers.items()}
            for cell, servers in windows.items()}


def widest(records, baseline: str, *, alpha: float = 0.05) -> float:
    """The widest relative half-width among the cells' rps ratios to ``baseline`` (the mean's, alone).

    ``inf`` while some interval is missing or unbounded: fewer than 2 repeats, or failed ones.
    """
    worst = 0.0
    for servers in _cells(records).values():
        base = servers.get(baseline, [])
        others = [values for name, values in servers.items() if name != baseline] or [None]
        for values in others:
            if values is None:
                low, high, _ = stats.mean_ci(base, alpha=alpha)
                centre = sum(base) / len(base) if base else math.nan
            else:
                centre, low, high = stats.ratio_ci(values, base, alpha=alpha)
            if any(math.isnan(v) for v in (centre, low, high)) or centre <= 0:
                return math.inf
            worst = max(worst, high / centre - 1, 1 - low / centre)
    return worst


def enough(records, baseline: str, precision: float, *, alpha: float = 0.05) -> bool:
    """True when every ratio's interval lies within +/- ``precision`` of the ratio."""
    return widest(records, baseline, alpha=alpha) <= precision
