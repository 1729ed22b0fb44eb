"""A sitting's fork variance on the runs frame: its cells' log fork means, laid out by round or apart, judged with
strength borrowed from the cell's other servers and this machine's history (:mod:`benchlab.analysis.borrow`), and
the words that say what was borrowed.

A sitting is one comparison (a ``suite``); a cell's servers share its rounds. The same layout serves the sitting
judged and each stored one (:mod:`benchlab.analysis.history`), so a stored variance is of the kind it is a prior for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import borrow


@dataclass(frozen=True)
class Layout:
    """One cell's log fork means of one metric: ``logs[server, round]`` by round (every server a fork in each round,
    at least 2 rounds) or ``logs[server, fork]`` apart (NaN padding), the servers in order, and ``forks`` counted."""

    servers: tuple
    logs: np.ndarray
    paired: bool
    forks: int


def layout(forks: pd.DataFrame, metric: str) -> Layout | None:
    """The :class:`Layout` of one cell's fork rows (:func:`benchlab.analysis.cells.forks`); None where no value is
    positive. By round over the rounds (``suite``, ``repeat``) that every server has one fork in, when there are 2
    or more; else apart.

    >>> rows = pd.DataFrame({"server": ["a", "b", "a", "b"], "suite": "s", "repeat": [1, 1, 2, 2],
    ...                      "rps": [100.0, 120.0, 110.0, 130.0]})
    >>> found = layout(rows, "rps"); found.paired, found.logs.shape
    (True, (2, 2))
    """
    values = pd.to_numeric(forks[metric], errors="coerce") if metric in forks else pd.Series(dtype=float)
    rows = forks[(values > 0).to_numpy()].assign(_log=np.log(values[values > 0]))
    if rows.empty:
        return None
    servers = tuple(dict.fromkeys(rows["server"]))
    by_round = _by_round(rows, servers)
    if by_round is not None:
        return Layout(servers, by_round, True, len(rows))
    sides = [rows.loc[rows["server"] == s, "_log"].to_numpy(dtype=float) for s in servers]
    logs = np.full((len(servers), max(len(side) for side in sides)), np.nan)
    for i, side in enumerate(sides):
        logs[i, :len(side)] = side
    return Layout(servers, logs, False, len(rows))


def _by_round(rows: pd.DataFrame, servers: tuple) -> np.ndarray | None:
    if not {"suite", "repeat"} <= set(rows.columns) or rows[["suite", "repeat"]].isna().any().any():
        return None
    keyed = rows.assign(_round=list(zip(rows["suite"].astype(str), rows["repeat"])))
    if keyed.duplicated(["server", "_round"]).any():  # two forks of one server in a round: not a block design
        return None
    table = keyed.pivot(index="server", columns="_round", values="_log").loc[list(servers)]
    table = table.dropna(axis=1)  # the rounds every server has a fork in
    return table.to_numpy(dtype=float) if table.shape[1] >= 2 and len(servers) >= 2 else None


def variance(found: Layout) -> tuple[float, float]:
    """``(s^2, d)``: the cell's pooled fork variance over all its servers (two-way residual by round, else about
    each server's mean) and its degrees of freedom; what a stored sitting contributes to a prior."""
    own, dfs = (borrow.two_way if found.paired else borrow.one_way)(found.logs)
    s2, d, _ = borrow.pooled(own, dfs)
    return float(s2), float(d)


@dataclass(frozen=True)
class Borrowed:
    """A pair judged with borrowed strength: the interval, the moderated t's p, and what it borrowed."""

    low: float
    high: float
    p: float
    paired: bool
    rounds: int
    said: str


def judge(found: Layout, server, against, prior, *, alpha: float) -> tuple[Borrowed | None, dict]:
    """``(borrowed, figures)``: ``server`` against ``against`` in a cell's :class:`Layout` with ``prior`` (a
    :class:`benchlab.analysis.history.Prior` or None); ``borrowed`` None where nothing beyond the pair's own
    variance would be used (a noisy sitting borrows nothing from its history, only, where they pool, from its other
    servers). ``figures`` holds the sitting's variance and its prior's for the ``noisy_sitting`` flag."""
    if server not in found.servers or against not in found.servers:
        return None, {}
    first, second = found.servers.index(server), found.servers.index(against)
    d0, s02, history_df = (prior.d0, prior.s02, prior.df) if prior is not None else (0.0, math.nan, 0.0)
    out = {k: float(np.asarray(v)) for k, v in
           borrow.judge(found.logs, first, second, (d0, s02, history_df), paired=found.paired, alpha=alpha).items()}
    figures = {"s2": out["sitting_s2"], "d": out["sitting_d"], "s02": s02, "d0": d0, "noisy": bool(out["noisy"])}
    if not out["borrowed"] or not all(map(math.isfinite, (out["low"], out["high"]))):
        return None, figures
    rounds = int(np.isfinite(found.logs[first]).sum() if not found.paired else found.logs.shape[1])
    pooled = int(out["servers"])
    parts = [f"fork variance pooled over {pooled} servers" if pooled > 2 else "fork variance of this pair"]
    if prior is not None and out["d0_used"] > 0:
        fitted = "inf" if math.isinf(prior.d0) else f"{prior.d0:.0f}"
        parts.append(f"and {prior.forks} stored forks {prior.scope}, d0 = {out['d0_used']:.3g} (fitted {fitted})")
    return Borrowed(out["low"], out["high"], out["p"], found.paired, rounds, " ".join(parts)), figures


def noisy(runs: pd.DataFrame, borrowing, baseline, *, alpha: float, metrics=("rps", "p99")) -> list[dict]:
    """The ``noisy_sitting`` flags of a runs frame judged with ``borrowing`` (a
    :class:`benchlab.analysis.history.History`): per cell and metric, the first pair against ``baseline`` whose
    sitting variance lay above its prior, with the figures (level "cell", the explanation from
    :data:`benchlab.schema.FLAGS`)."""
    from ..schema import FLAGS
    from . import cells
    from .validity import usable

    clean, _ = usable(runs)
    if clean.empty or baseline is None:
        return []
    keys, groups = cells.group(cells.forks(clean))
    rows = []
    for cell, group in groups:
        cell = cell if isinstance(cell, tuple) else (cell,)
        for metric in metrics:
            shape = layout(group, metric)
            prior = borrowing.prior(metric, shape.paired, cells.load_point(group)) if shape is not None else None
            if shape is None or prior is None:
                continue
            for server in (s for s in shape.servers if s != baseline):
                figures = judge(shape, server, baseline, prior, alpha=alpha)[1]
                if figures.get("noisy"):
                    d0 = "inf" if math.isinf(prior.d0) else f"{prior.d0:.0f}"
                    text = FLAGS["noisy_sitting"].format(
                        metric=metric, times=figures["s2"] / prior.s02, s2=figures["s2"], d=figures["d"],
                        s02=prior.s02, d0=d0, limit=float(borrow.limit(figures["d"], prior.d0)), level=borrow.NOISY,
                        server=server, against=baseline)
                    rows.append({"level": "cell", "id": None, **{c: cells.restore(v) for c, v in zip(keys, cell)},
                                 "server": server, "flag": "noisy_sitting", "explanation": text})
                    break
    return rows
