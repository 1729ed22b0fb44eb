"""The hosts of a comparison run on several machines: the rounds each ran, and whether one differs from the rest.

``compare(hosts=[...])`` runs each round whole on one host, so a host is a block of rounds, as a round is a block
of forks. A host whose machine is slower (another CPU, a busy neighbour, another image) shifts every fork it ran,
which pairing by round absorbs in a verdict but which a reader should know of. The test, stated once:

- the unit is the round: each (cell, server)'s clean fork means (the one rule, :mod:`.validity`) are taken on a
  log scale and centred on that (cell, server)'s mean over every host, so servers of any speed share one scale,
  and a round's value is the mean of its forks' centred values (its forks share the machine's moment);
- each host's rounds against the other hosts' rounds, by Student's two-sided t-test, the variance pooled: under
  the null the hosts are alike, their spread included, so for normal round values its level is exact, where
  Welch's approximate degrees of freedom flagged 8.4% at 3 rounds against 9; the host ``host_differs`` when
  p < :data:`LEVEL` / the number of hosts (Bonferroni; with two hosts both tests are one test, at
  :data:`LEVEL`); a host, or the rest, with fewer than two rounds is not judged (p None).

Its false-positive rate, simulated in ``tests/test_hosts_stats.py`` (4000 null comparisons each): 5.2% for two
hosts of 3 rounds, 4.6% for two of 6, 5.0% for three of 4 and 4.9% for four of 3.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..schema import CELL
from . import cells, validity

#: The family-wise level of ``host_differs`` over the hosts of one comparison.
LEVEL = 0.05
#: The columns of :func:`hosts`.
COLUMNS = ("host", "rounds", "runs", "failed", "shift", "p", "host_differs")


def pooled_t(mine: np.ndarray, rest: np.ndarray) -> float:
    """Student's two-sided p-value of two samples' means, their variance pooled (2 values each at least); two
    constant samples give 1 when equal, else 0.

    >>> round(pooled_t(np.array([1.0, 2.0, 3.0]), np.array([2.0, 3.0, 4.0, 5.0])), 3)
    0.158
    """
    from scipy.special import stdtr

    n, m = len(mine), len(rest)
    df = n + m - 2
    pooled = ((n - 1) * mine.var(ddof=1) + (m - 1) * rest.var(ddof=1)) / df
    if pooled == 0:
        return 1.0 if mine.mean() == rest.mean() else 0.0
    t = (mine.mean() - rest.mean()) / np.sqrt(pooled * (1 / n + 1 / m))
    return float(2 * stdtr(df, -abs(t)))


def judge(values, hosts, *, level: float = LEVEL) -> pd.DataFrame:
    """Each host's rounds (``values``, one a round, on a log scale; ``hosts`` names each round's host) against the
    other hosts' rounds: ``host``, ``rounds``, ``shift`` (its rounds' mean over the others', as a ratio - 1),
    ``p`` (Student's t, pooled) and ``host_differs``: :func:`per_host` as a frame.

    >>> judge([0.0, 0.01, -0.01, 0.0, 0.2, 0.21, 0.19, 0.2], list("aaaabbbb"))[["host", "host_differs"]].values.tolist()
    [['a', True], ['b', True]]
    """
    return pd.DataFrame(per_host(values, hosts, level=level))


def per_host(values, hosts, *, level: float = LEVEL) -> dict[str, list]:
    """:func:`judge`'s test, its columns as lists (what the simulations of its level call 4,000 times).

    >>> per_host([0.0, 0.01, 0.2, 0.21], list("aabb"))["host_differs"]
    [True, True]
    """
    values, hosts = np.asarray(values, dtype=float), np.asarray(hosts, dtype=object)
    names = list(dict.fromkeys(hosts))
    cut = level / (len(names) if len(names) > 2 else 1)
    columns: dict[str, list] = {"host": names, "rounds": [], "shift": [], "p": [], "host_differs": []}
    for name in names:
        mine, rest = values[hosts == name], values[hosts != name]
        p = pooled_t(mine, rest) if len(mine) >= 2 and len(rest) >= 2 else None
        columns["rounds"].append(len(mine))
        columns["shift"].append(float(np.expm1(mine.mean() - rest.mean())) if len(mine) and len(rest) else None)
        columns["p"].append(p)
        columns["host_differs"].append(p is not None and p < cut)
    return columns


def round_values(runs: pd.DataFrame, metric: str = "rps") -> pd.DataFrame:
    """One row per round (``suite``, ``repeat``) that ran on a host: its ``host`` and ``value``, the mean of its
    forks' log ``metric`` centred per (cell, server)."""
    clean = runs[validity.fit(runs)] if len(runs) else runs
    clean = clean[clean["host"].notna()] if "host" in clean else clean.iloc[0:0]
    forks = cells.forks(clean)
    value = np.log(pd.to_numeric(forks[metric], errors="coerce").astype(float).where(lambda v: v > 0))
    forks = forks.assign(_value=value)[value.notna().to_numpy()]
    if forks.empty:
        return pd.DataFrame(columns=["suite", "repeat", "host", "value"])
    group = [repr(tuple(map(cells.key, row))) for row in forks[[c for c in CELL if c in forks] + ["server"]]
             .itertuples(index=False)]
    forks = forks.assign(_value=forks["_value"] - forks.groupby(group)["_value"].transform("mean"))
    by_round = forks.groupby(["suite", "repeat"], sort=True, dropna=False)
    return by_round.agg(host=("host", "first"), value=("_value", "mean")).reset_index()


def hosts(runs: pd.DataFrame, metric: str = "rps", *, level: float = LEVEL) -> pd.DataFrame:
    """Per host: the rounds it ran, its runs and how many failed, and :func:`judge`'s test of its rounds against the
    other hosts' (``shift``, ``p``, ``host_differs``); empty when no run names a host."""
    if "host" not in runs or not runs["host"].notna().any():
        return pd.DataFrame(columns=list(COLUMNS))
    ran = runs[runs["host"].notna()]
    counts = ran.groupby("host", sort=False).agg(
        rounds=("repeat", lambda r: len(set(zip(ran.loc[r.index, "suite"], r)))), runs=("id", "size"),
        failed=("status", lambda s: int((s == "failed").sum())))
    rounds = round_values(runs, metric)
    judged = judge(rounds["value"], rounds["host"], level=level).set_index("host")
    out = counts.join(judged[["shift", "p", "host_differs"]], how="left").reset_index()
    out["host_differs"] = out["host_differs"].fillna(False).astype(bool)
    return out[list(COLUMNS)]
