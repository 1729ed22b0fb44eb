"""The knee of a sweep: the least load at which a server reaches a share of its best throughput.

A connection sweep's knee is the fewest connections whose mean rps is at least ``share`` of the server's
best; a rate sweep's is the highest rate still served at ``share`` of what was asked.

>>> import pandas as pd
>>> runs = pd.DataFrame({"server": ["a"] * 3, "connections": [16, 64, 256], "rps": [5e3, 9.6e3, 1e4],
...                      "p99": [0.001, 0.002, 0.02], "status": ["ok"] * 3})
>>> int(knees(runs).iloc[0]["knee: fewest connections >= 95% of best"])
64
"""

from __future__ import annotations

import pandas as pd

from .cells import ok


def knees(runs: pd.DataFrame, share: float = 0.95, *, by_rate: bool = False) -> pd.DataFrame:
    """One row per server: its best rps and where, and its knee with the rps and p99 there (ms), from the
    mean of each load point's finished runs."""
    point = "rate" if by_rate else "connections"
    means = ok(runs).groupby(["server", point], as_index=False)[["rps", "p99"]].mean()
    rows = [(_rate_knee if by_rate else _connection_knee)(server, group, share)
            for server, group in means.groupby("server")]
    return pd.DataFrame(rows)


def _rate_knee(server: str, group: pd.DataFrame, share: float) -> dict:
    kept = group[group["rps"] >= share * group["rate"]].sort_values("rate")
    top = kept.iloc[-1] if len(kept) else None
    return {"server": server, f"highest rate served at >= {share:.0%} (req/s)": None if top is None else top["rate"],
            "achieved there (req/s)": None if top is None else round(top["rps"], 1),
            "p99 there (ms)": None if top is None else round(top["p99"] * 1000, 2)}


def _connection_knee(server: str, group: pd.DataFrame, share: float) -> dict:
    best = group["rps"].max()
    at = group[group["rps"] >= share * best].sort_values("connections").iloc[0]
    return {"server": server, "best rps": round(best, 1),
            "best at connections": int(group.loc[group["rps"].idxmax(), "connections"]),
            f"knee: fewest connections >= {share:.0%} of best": int(at["connections"]),
            "rps at knee": round(at["rps"], 1), "p99 at knee (ms)": round(at["p99"] * 1000, 2)}
