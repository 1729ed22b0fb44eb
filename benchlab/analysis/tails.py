"""The merged latency of each cell: percentiles of all its runs' requests, with an interval from resampling runs.

A cell's p99 is not the mean of its runs' p99s: the runs' histograms (:mod:`benchlab.store.histogram`) are merged
by adding their counts, and the percentile is read from the merged distribution, as if the repeats had been
one long run. Its interval comes from the run bootstrap: the runs (the independent unit; requests within a
run are not) are drawn with replacement, merged again and the percentile read again, ``resamples`` times;
the interval is the ``alpha/2`` and ``1 - alpha/2`` quantiles of those. With few runs there are few distinct
draws (10 at 3 runs), so this interval is narrow there: read it as the spread of the repeats, not as a
calibrated 95% interval. One run has no interval. Runs without a histogram (imported, older) are left out;
a cell with none has no row.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..schema import MERGED_COLUMNS, PERCENTILE_COLUMNS, SPECTRUM
from ..store.histogram import Histogram, quantiles, ranks, read_off
from . import cells

#: Cells of more runs than this are resampled 400 times rather than ``resamples`` (see :func:`resampled`).
LARGE = 100

#: The interval's method, as the ``method`` column names it.
METHOD = "run bootstrap"
#: The method's name where forks hold several windows: forks drawn, then windows within them.
TWO_LEVEL = "fork-window bootstrap"


def _matrix(histograms: list[Histogram]):
    """``(index, counts, mins, maxes)``: the runs' counts (one row each, zeros first) over every bucket from the
    lowest to the highest any run has. Bucket indexes are small integers (about 1,900 for 1 us to 100 s),
    so the dense columns need no sort of the 10,000 runs' buckets."""
    pairs = [h.arrays() for h in histograms]
    indexes = [i for i, _ in pairs]
    nonempty = [i for i in indexes if len(i)]
    low = min(int(i[0]) for i in nonempty) if nonempty else 0
    high = max(int(i[-1]) for i in nonempty) if nonempty else -1
    index = np.arange(low, high + 1, dtype=np.int64)
    counts = np.zeros((len(histograms), len(index) + 1), dtype=np.int64)
    counts[:, 0] = [h.zeros for h in histograms]
    if nonempty:
        rows = np.repeat(np.arange(len(histograms)), [len(i) for i in indexes])
        counts[rows, np.concatenate(indexes) - low + 1] = np.concatenate([found for _, found in pairs])
    return index, counts, np.array([h.min for h in histograms]), np.array([h.max for h in histograms])


def resampled(histograms: list[Histogram], qs, *, resamples: int = 2000, seed: int = 0, forks=None):
    """``(merged, draws)``: the percentiles ``qs`` of the merged runs, and of ``resamples`` run bootstrap
    draws (a (resamples, len(qs)) array; None below 2 runs).

    With ``forks`` (each histogram's fork, :func:`benchlab.analysis.cells.fork_keys`) a draw is two-level, as the
    windows of one server process are not independent: forks with replacement, then within each drawn fork
    its windows with replacement (Davison and Hinkley 1997, 2.4; Kalibera and Jones' hierarchical
    bootstrap). None below 2 forks. One window per fork is the run bootstrap.

    >>> from benchlab.store.histogram import Histogram
    >>> runs = [Histogram.of([0.001] * 99 + [0.010]), Histogram.of([0.001] * 99 + [0.020])]
    >>> merged, draws = resampled(runs, [50, 100]); merged.round(4).tolist(), draws.shape
    ([0.001, 0.02], (2000, 2))
    """
    index, counts, mins, maxes = _matrix(histograms)
    merged = quantiles(index, counts.sum(axis=0)[None, :], qs, mins.min(), maxes.max())[0]
    if len(histograms) < 2:
        return merged, None
    n = len(histograms)
    if forks is not None and len(set(forks)) < n:
        return merged, _two_level(index, counts, mins, maxes, qs, list(forks), resamples, seed)
    # Past LARGE runs a draw averages over so many runs that its distribution is near normal, and 400 draws
    # place its 2.5% and 97.5% points well enough; 2000 draws of 1,667 runs took 5 s of a 10,000-run summary.
    resamples = resamples if n <= LARGE else min(resamples, 400)
    # each draw takes n runs with replacement: the counts of n uniform picks, one row per draw (the same
    # law as a multinomial, whose row-by-row sampling took a third of a 10,000-run summary)
    picks = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    weights = np.bincount((picks + n * np.arange(resamples)[:, None]).ravel(),
                          minlength=resamples * n).reshape(resamples, n)
    chosen = weights > 0
    low = np.where(chosen, mins[None, :], np.inf).min(axis=1)
    high = np.where(chosen, maxes[None, :], -np.inf).max(axis=1)
    return merged, drawn(index, counts, weights, qs, low, high)


def _two_level(index, counts, mins, maxes, qs, forks: list, resamples: int, seed: int):
    """The draws of a two-level bootstrap: each draw's weight of a window is how often its fork was drawn
    times how often the window was drawn within that fork."""
    members = [np.flatnonzero(np.array([f == name for f in forks])) for name in dict.fromkeys(forks)]
    if len(members) < 2:
        return None
    rng = np.random.default_rng(seed)
    k = len(members)
    taken = rng.integers(0, k, size=(resamples, k))
    times = np.stack([(taken == f).sum(axis=1) for f in range(k)], axis=1)  # (resamples, forks)
    weights = np.zeros((resamples, len(forks)))
    for f, windows in enumerate(members):
        picks = rng.integers(0, len(windows), size=(resamples, len(windows)))
        within = np.stack([(picks == w).sum(axis=1) for w in range(len(windows))], axis=1)
        weights[:, windows] = times[:, f:f + 1] * within
    chosen = weights > 0
    low = np.where(chosen, mins[None, :], np.inf).min(axis=1)
    high = np.where(chosen, maxes[None, :], -np.inf).max(axis=1)
    return drawn(index, counts, weights, qs, low, high)


def drawn(index, counts, weights, qs, low, high) -> np.ndarray:
    """``quantiles(index, weights @ counts, qs, low, high)``: the percentiles of each weighted merge of the runs
    (one row of ``weights`` per draw), reading only the buckets the answer can be in.

    A merge's cumulative count is the weighted sum of its runs', so its ``q``-th percentile lies between the
    lowest and the highest of its runs' own ``q``-th percentiles; only that window of buckets (one more each
    side) is multiplied out. A draw whose answer is not strictly inside the window (it cannot be, but floating
    point rounding is checked, not trusted) is computed over every bucket. Floats, not int64: numpy
    multiplies int64 matrices without BLAS, 30x slower; counts stay exact below 2**53.

    >>> runs = np.array([[0, 5, 5, 0], [0, 0, 5, 5]]); index = np.array([10, 11, 12])
    >>> w = np.array([[2, 0], [1, 1], [0, 2]])
    >>> bool((drawn(index, runs, w, [50], 0, 1) == quantiles(index, w @ runs, [50], 0, 1)).all())
    True
    """
    qs = np.asarray(list(qs), dtype=float)
    cumulative = np.cumsum(counts, axis=1).astype(float)  # (runs, 1 + K), per run
    weights = np.asarray(weights, dtype=float)
    totals = weights @ cumulative[:, -1]
    rank = ranks(qs, totals)
    last = cumulative.shape[1] - 1
    found = np.empty(rank.shape, dtype=np.int64)
    for k, q in enumerate(qs):
        # each run's first bucket whose cumulative count reaches q% of its own count
        own = (cumulative < (q * cumulative[:, -1] / 100.0)[:, None]).sum(axis=1)
        start, stop = max(int(own.min()) - 1, 0), min(int(own.max()) + 1, last)
        below = (weights @ cumulative[:, start:stop + 1] < rank[:, k:k + 1]).sum(axis=1)
        outside = (below > stop - start) | ((below == 0) & (start > 0))
        if outside.any():
            below[outside] = (weights[outside] @ cumulative < rank[outside, k:k + 1]).sum(axis=1) - start
        found[:, k] = start + below
    return read_off(index, found, totals, qs, low, high)


def latency(histograms, runs: pd.DataFrame, *, percentiles=SPECTRUM, alpha: float = 0.05,
            resamples: int = 2000) -> pd.DataFrame:
    """The merged percentiles of every cell and server: the cell columns, server, then :data:`MERGED_COLUMNS`.

    ``histograms`` are the runs' stored histograms (None for a run without one), ``runs`` their frame, row
    for row (``Suite.histograms`` reads them once per suite).

    Example
    -------
    >>> import benchlab
    >>> benchlab.load("data/results").latency(percentiles=(50, 99))  # doctest: +SKIP
    """
    return _frame(_cells(histograms, runs, percentiles, resamples), percentiles, alpha)


def _cells(histograms, runs: pd.DataFrame, percentiles, resamples: int) -> list[dict]:
    """One entry per cell and server whose runs have histograms: keys, server, merged values and draws."""
    found: list[dict] = []
    keys, groups = cells.group(cells.ok(runs))
    for cell, group in groups:
        cell = cell if isinstance(cell, tuple) else (cell,)
        for server, server_runs in group.groupby("server", sort=False):
            positions = [i for i in server_runs.index if histograms[i] is not None]
            kept = [histograms[i] for i in positions]
            if not kept:
                continue
            forks = cells.fork_keys(runs.loc[positions])
            # each cell its own seed, so a ratio of two cells' draws pairs independent draws
            merged, draws = resampled(kept, percentiles, resamples=resamples, seed=len(found), forks=forks)
            found.append({"cell": {c: cells.restore(v) for c, v in zip(keys, cell)}, "server": server,
                          "merged": merged, "draws": draws, "n": len(kept),
                          "method": METHOD if len(set(forks)) == len(forks) else TWO_LEVEL,
                          "count": sum(h.count for h in kept)})
    return found


def _frame(found: list[dict], percentiles, alpha: float) -> pd.DataFrame:
    rows = []
    for entry in found:
        draws = entry["draws"]
        for k, q in enumerate(percentiles):
            low, high = ((math.nan, math.nan) if draws is None else
                         np.quantile(draws[:, k], [alpha / 2, 1 - alpha / 2]).tolist())
            rows.append({**entry["cell"], "server": entry["server"], "percentile": float(q),
                         "latency_s": float(entry["merged"][k]), "low": low, "high": high,
                         "method": entry["method"] if draws is not None else "none", "n": entry["n"],
                         "count": entry["count"]})
    columns = [*(found[0]["cell"] if found else ()), "server", *MERGED_COLUMNS]
    return pd.DataFrame(rows, columns=columns)


def into_summary(summary: pd.DataFrame, histograms, runs: pd.DataFrame, baseline: str | None, *,
                 alpha: float = 0.05, resamples: int = 2000) -> pd.DataFrame:
    """The summary with each latency percentile row (p50 ... p9999) of a cell whose runs have histograms
    taken from the merged distribution: ``mean`` is the merged percentile, ``ci_low``/``ci_high`` its run
    bootstrap interval (``ci_method`` "merged, run bootstrap"), ``ratio`` merged over the baseline's merged,
    with an interval from independent draws of both. n, median, stdev, cv, min and max still describe the
    runs' own percentiles (the per-run table shows each run's)."""
    metrics = [m for m in summary["metric"].unique() if m in PERCENTILE_COLUMNS] if len(summary) else []
    if not metrics:
        return summary
    qs = [PERCENTILE_COLUMNS[m] for m in metrics]
    found = _cells(histograms, runs, qs, resamples)
    if not found:
        return summary
    summary = summary.copy()
    key_columns = list(found[0]["cell"])
    by_key = {(tuple(cells.key(v) for v in e["cell"].values()), e["server"]): e for e in found}
    for position, row in enumerate(summary.to_dict("records")):
        if row["metric"] not in metrics:
            continue
        cell = tuple(cells.key(row.get(c)) for c in key_columns)
        mine, base = by_key.get((cell, row["server"])), by_key.get((cell, baseline))
        if mine is None:
            continue
        k = metrics.index(row["metric"])
        update = {"mean": mine["merged"][k], "ci_method": "merged, " + (mine["method"] if mine["draws"] is not None
                                                                     else "none")}
        update["ci_low"], update["ci_high"] = _bounds(mine["draws"], k, alpha)
        if base is not None and base["merged"][k] > 0 and row.get("judged") is not False:
            update["ratio"] = mine["merged"][k] / base["merged"][k]
            both = None if mine["draws"] is None or base["draws"] is None else (
                mine["draws"][:, k] / base["draws"][:, k])[:, None]
            update["ratio_low"], update["ratio_high"] = _bounds(both, 0, alpha)
            update["ratio_method"] = mine["method"] if both is not None else "none"
        for column, value in update.items():
            summary.iloc[position, summary.columns.get_loc(column)] = value
    return summary


def _bounds(draws, k: int, alpha: float) -> tuple[float, float]:
    if draws is None:
        return math.nan, math.nan
    low, high = np.quantile(draws[:, k], [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)
