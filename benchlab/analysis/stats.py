"""The statistics of a comparison: intervals, tests and verdicts, read from the runs frame.

Everything here reads the tidy runs frame (:data:`benchlab.store.results.COLUMNS`) and nothing else; the reasons
for each method and the simulation that checks them are in ``docs/statistics.md``.

- The interval of a mean, for a positive metric, is Cox's interval for a log-normal mean:
  ``exp(m + v/2 +- t(n-1) * sqrt(v/n + v**2/(2(n-1))))`` with ``m``, ``v`` the mean and variance of the
  logs. It stays positive and covers skewed metrics where Student t does not. A metric that can be 0 or
  negative (error counts) gets the Student t interval. ``ci_method`` says which: ``"cox"`` or ``"t"``.
- The interval of a ratio of means, for positive metrics, is the two-sample version of the same
  (Welch degrees of freedom); otherwise Fieller's interval. ``ratio_method`` says which.
- Forks of one round (the same suite and repeat: one fork of every server, run one after another) are
  judged *paired*: the rounds' log ratios share the machine's state of their round, which on this machine
  moved a round's forks together by as much as 20%. The ratio's interval is then the paired Cox interval
  (paired Fieller's where a value is 0), ``ratio_method`` "cox paired", and the test Wilcoxon's signed rank
  (exact over every sign flip); a fork whose round has no fork of the other server is left out. Forks that
  share fewer rounds than the sign flips need to reach ``alpha`` (6 at 0.05) are judged apart, as below.
- A difference is *significant* when a test rejects equality at ``alpha`` **and** the ratio's interval
  excludes 1. The test is Mann-Whitney U with an exact p (all splits of the repeats, ties included; a
  seeded Monte Carlo over 10 000 splits beyond 20 000; its normal approximation from 50 repeats a side
  without ties, named "Mann-Whitney normal") when the repeats let it reach ``alpha`` at all;
  with 3 against 3 its smallest two-sided p is 0.1, so there Welch's t-test is used, and the verdict
  names the test.

The noise and validity flags are in :mod:`benchlab.analysis.flags`, which reads this module (never the reverse).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..schema import COST_COLUMNS, LATENCY_COLUMNS
from . import cells, intervals, pairs

#: Metrics where lower is better (latencies, and what serving cost); the rest (rps) are higher-is-better.
LOWER_IS_BETTER = {*LATENCY_COLUMNS, *COST_COLUMNS}

# --- one metric ------------------------------------------------------------------------------------------

def mean_ci(values, *, alpha: float = 0.05) -> tuple[float, float, str]:
    """(low, high, method) of the mean at confidence ``1 - alpha``: ``"cox"`` when every value is positive,
    ``"t"`` (Student) otherwise; ``"none"``, with no interval, below 2 values or when all are equal.

    >>> low, high, method = mean_ci([10.0, 11.0, 12.0]); round(low, 2), round(high, 2), method
    (8.78, 13.83, 'cox')
    >>> [round(v, 3) for v in mean_ci([0, 1, 2], alpha=0.10)[:2]], mean_ci([0, 1, 2])[2]
    ([-0.686, 2.686], 't')
    """
    x = cells.finite(values)
    if len(x) < 2 or not intervals.varies(x):
        return math.nan, math.nan, "none"
    low, high = intervals.mean_interval(x, alpha)
    return float(low), float(high), "cox" if np.all(x > 0) else "t"


def describe(values, *, alpha: float = 0.05) -> dict:
    """n, mean, median, stdev, cv, min, max and the mean's interval (:func:`mean_ci`) at ``1 - alpha``.

    >>> describe([10.0, 11.0, 12.0])["ci_method"]
    'cox'
    """
    x = cells.finite(values)
    n = len(x)
    stdev = float(x.std(ddof=1)) if n > 1 else math.nan
    mean = float(x.mean()) if n else math.nan
    low, high, method = mean_ci(x, alpha=alpha)
    return {"n": n, "mean": mean, "median": float(np.median(x)) if n else math.nan, "stdev": stdev,
            "cv": stdev / mean if n > 1 and mean else math.nan, "min": float(x.min()) if n else math.nan,
            "max": float(x.max()) if n else math.nan, "ci_low": low, "ci_high": high, "ci_method": method}


def _sides(values, baseline, paired: bool) -> tuple[np.ndarray, np.ndarray]:
    """The finite values of each side; paired, the pairs where both are finite, still aligned."""
    if not paired:
        return cells.finite(values), cells.finite(baseline)
    a, b = (np.asarray(pd.to_numeric(pd.Series(list(x)), errors="coerce"), dtype=float) for x in (values, baseline))
    if len(a) != len(b):
        raise ValueError(f"paired sides must be aligned: {len(a)} values against {len(b)}")
    both = np.isfinite(a) & np.isfinite(b)
    return a[both], b[both]


def count(values, baseline, paired: bool) -> int:
    """How many repeats a verdict rests on: the pairs whose values are both finite, or the smaller side's."""
    a, b = _sides(values, baseline, paired)
    return len(a) if paired else min(len(a), len(b))


def ratio_method(values, baseline, *, paired: bool = False) -> str:
    """How :func:`ratio_ci` builds its interval here: ``"cox"`` (every value positive), ``"fieller"``
    (some 0 or negative), each with `` paired`` when the values are pairs of one round, or ``"none"`` (fewer
    than 2 values a side, a baseline mean of 0, or no repeat that differs from the others on either side)."""
    a, b = _sides(values, baseline, paired)
    if len(a) < 2 or len(b) < 2 or b.mean() == 0 or not (intervals.varies(a) or intervals.varies(b)):
        return "none"
    return ("cox" if np.all(a > 0) and np.all(b > 0) else "fieller") + (" paired" if paired else "")


def ratio_ci(values, baseline, *, alpha: float = 0.05, paired: bool = False) -> tuple[float, float, float]:
    """(mean(values) / mean(baseline), low, high) at confidence ``1 - alpha``; :func:`ratio_method` says
    how. Fieller's interval can be unbounded (the baseline's mean is not surely above 0): NaN bounds.
    ``paired``: ``values[i]`` and ``baseline[i]`` were measured in one round (:func:`.cells.rounds`), and
    the interval is taken from the pairs' log ratios (:mod:`.pairs`).

    >>> [round(v, 3) for v in ratio_ci([178, 180, 176], [100, 101, 99])]
    [1.78, 1.737, 1.824]
    >>> [round(v, 3) for v in ratio_ci([178, 200, 160], [100, 112, 90], paired=True)]  # apart: 1.39-2.29
    [1.781, 1.771, 1.792]
    """
    a, b = _sides(values, baseline, paired)
    if len(a) == 0 or len(b) == 0 or b.mean() == 0:
        return math.nan, math.nan, math.nan
    if ratio_method(a, b, paired=paired) == "none":
        return float(a.mean() / b.mean()), math.nan, math.nan
    low, high = (pairs.ratio_interval if paired else intervals.ratio_interval)(a, b, alpha)
    return float(a.mean() / b.mean()), float(low), float(high)


def test_difference(values, baseline, *, alpha: float = 0.05, paired: bool = False) -> tuple[str, float]:
    """(test name, two-sided p): Mann-Whitney U with an exact (permutation) p when these sizes let it reach
    ``alpha``, from its normal approximation ("Mann-Whitney normal") with 50 or more repeats a side and no
    tie, else Welch's t; ``("none", nan)`` below 2 values a side. ``paired`` (pairs of one round): Wilcoxon's
    signed rank with an exact sign-flip p from 6 pairs (at ``alpha`` 0.05), ``("none", nan)`` below.

    >>> name, p = test_difference([1, 1, 1, 2], [2, 2, 3, 3]); name, round(p, 3)  # 6 of 70 splits
    ('Mann-Whitney', 0.086)
    >>> test_difference([11, 12, 13, 14, 15, 16], [10, 11, 12, 13, 14, 15], paired=True)  # 2 of 64 flips
    ('Wilcoxon signed-rank', 0.03125)
    """
    a, b = _sides(values, baseline, paired)
    if paired:
        name = pairs.test_name(len(a), alpha)
        return name, (math.nan if name == "none" else float(pairs.p_value(a, b, alpha)))
    name = intervals.test_name(a, b, alpha)
    return name, (math.nan if name == "none" else float(intervals.p_value(a, b, alpha)))

# a statistics function, not a pytest test; mypy knows no attributes of a function, pytest reads this one
test_difference.__test__ = False  # type: ignore[attr-defined]


def components(values, forks) -> dict:
    """The variance of a metric's windows split into its two sources: ``between_cv``, how far forks (server
    processes) lie apart, and ``within_cv``, how far one fork's windows lie apart, each on the log scale,
    so a relative spread (0.05 is about 5%). One-way random-effects analysis of variance by the method of
    moments (Searle, Casella and McCulloch 1992, ch. 3): ``within`` is the pooled variance of windows about
    their fork's mean, ``between`` is (MSB - MSW) / n0, 0 when negative, with n0 the mean fork size adjusted
    for unequal sizes. NaN where the data cannot tell: between needs 2 forks, within a fork of 2 windows.

    >>> c = components([100, 102, 98, 150, 153, 147], ["a", "a", "a", "b", "b", "b"])
    >>> c["forks"], c["windows"], round(c["within_cv"], 3), round(c["between_cv"], 2)
    (2, 6, 0.02, 0.29)
    """
    v = pd.to_numeric(pd.Series(list(values)), errors="coerce").astype(float).to_numpy()
    codes, _ = pd.factorize(pd.Series(list(forks), dtype=object))  # a missing fork key is -1: left out
    keep = np.isfinite(v) & (v > 0) & (codes >= 0)
    y = np.log(v[keep])
    codes, _ = pd.factorize(codes[keep])
    sizes = np.bincount(codes) if len(codes) else np.zeros(0, dtype=int)
    k, n = len(sizes), len(y)
    out = {"forks": k, "windows": n, "between_cv": math.nan, "within_cv": math.nan}
    if k == 0:
        return out
    fork_means = np.bincount(codes, weights=y) / sizes
    within = float(((y - fork_means[codes]) ** 2).sum() / (n - k)) if n > k else math.nan
    out["within_cv"] = math.sqrt(within) if within == within else math.nan
    if k >= 2:
        msb = float((sizes * (fork_means - y.mean()) ** 2).sum() / (k - 1))
        n0 = (n - (sizes ** 2).sum() / n) / (k - 1)
        between = max(0.0, (msb - (within if within == within else 0.0)) / n0)
        out["between_cv"] = math.sqrt(between)
    return out


# --- the frame-level functions --------------------------------------------------------------------------

def pick_baseline(runs: pd.DataFrame, baseline: str | None = None) -> str | None:
    servers = list(dict.fromkeys(runs["server"]))
    if baseline is not None:
        if baseline not in servers:
            from ..errors import UsageError

            raise UsageError(f"unknown baseline {baseline!r}: choose one of {', '.join(map(str, servers))}")
        return baseline
    return servers[0] if servers else None


def summary(runs: pd.DataFrame, metrics=("rps", "p50", "p99"), baseline: str | None = None, *,
            alpha: float = 0.05) -> pd.DataFrame:
    """Per cell, server and metric: n, mean, median, stdev, cv, min, max, the mean's interval at
    ``1 - alpha`` (``ci_method`` says how), the ratio to the baseline server with its interval
    (``ratio_method`` says how), plus the cell's flags.

    ``n`` counts forks (server processes): with ``compare(windows=m)`` each fork's windows are averaged
    first, and the intervals and tests take the fork means, since windows of one process are not
    independent. ``windows`` is how many windows went in, and ``between_cv`` and ``within_cv`` split their
    spread into fork-to-fork and window-to-window (:func:`components`).

    Example
    -------
    >>> import benchlab
    >>> benchlab.load("data/results").summary(["rps", "p99"])  # doctest: +SKIP
    """
    from .flagframe import flags_by_cell
    from .flags import runs_flags
    from .validity import usable

    baseline = pick_baseline(runs, baseline)
    found = runs_flags(runs.reset_index(drop=True))  # each run's own, found once for both below
    _frame, cell_flags = flags_by_cell(runs, found=found)  # {(cell, server): the flags of its runs and of the cell}
    windows, left = usable(runs, found=found)  # the one rule: no window with a validity flag enters a statistic
    rows = []
    keys, groups = cells.group(cells.forks(cells.ok(runs)))  # every side, the ones left without a clean fork too
    clean_forks = _by_cell(cells.forks(windows))
    clean_windows = _by_cell(windows)
    raw_all = _by_cell(cells.ok(runs))
    for cell, group in groups:
        cell = cell if isinstance(cell, tuple) else (cell,)
        kept = clean_forks.get(cell, group.iloc[0:0])
        base = kept[kept["server"] == baseline]
        measured = clean_windows.get(cell, group.iloc[0:0])
        for server, all_runs in group.groupby("server", sort=False):
            mine = ",".join(sorted(cell_flags.get((cell, server), ())))
            server_runs = kept[kept["server"] == server]
            judged = len(server_runs) > 0
            own = measured[measured["server"] == server] if judged else raw_all[cell][raw_all[cell]["server"] == server]
            lost = left.get((cell, server), {}).get("left", 0)
            for metric in metrics:
                row = {c: cells.restore(v) for c, v in zip(keys, cell)}
                # a side with no clean fork still shows its figures, marked not judged and given no ratio
                row.update(server=server, metric=metric,
                           **describe((server_runs if judged else all_runs)[metric], alpha=alpha))
                a, b, paired = cells.rounds(server_runs, base, metric, alpha=alpha)
                ratio, low, high = (ratio_ci(a, b, alpha=alpha, paired=paired) if len(base) and judged
                                    else (math.nan,) * 3)
                parts = components(own[metric], cells.fork_keys(own))
                row.update(ratio=ratio, ratio_low=low, ratio_high=high,
                           ratio_method=ratio_method(a, b, paired=paired) if judged else "none",
                           windows=parts["windows"], between_cv=parts["between_cv"], within_cv=parts["within_cv"],
                           left_out=lost, judged=judged, flags=mine)
                rows.append(row)
    return pd.DataFrame(rows, columns=[*keys, "server", "metric", "n", "mean", "median", "stdev", "cv", "min",
                                       "max", "ci_low", "ci_high", "ci_method", "ratio", "ratio_low",
                                       "ratio_high", "ratio_method", "windows", "between_cv", "within_cv",
                                       "left_out", "judged", "flags"])


def _by_cell(frame: pd.DataFrame) -> dict:
    """``{cell: rows}`` of a frame, each cell a tuple as :func:`cells.group` names it."""
    if frame.empty:
        return {}
    _, grouped = cells.group(frame)
    return {(cell if isinstance(cell, tuple) else (cell,)): rows for cell, rows in grouped}


def table(runs: pd.DataFrame, metric: str = "rps", *, alpha: float = 0.05) -> pd.DataFrame:
    """The per-fork table the published comparison used: one row per server, columns ``fork 1`` .. ``fork N``
    (each fork's mean over its windows), ``mean`` and the mean's interval at ``1 - alpha``, ``cv``, then
    ``windows`` (how many went in), ``within_cv`` (how far one fork's windows lay apart; NaN when each fork is
    one window) and ``left out`` (which forks and windows the one rule left out and why, and how many were
    retaken: :func:`benchlab.analysis.validity.standing`). The columns are named so whatever the data: a run of
    one window (``run()``, or ``compare()`` with one window a fork) is a fork of one window.

    The mean, its interval and ``windows`` are the summary's: over the windows used. A fork shows the mean of its
    used windows, or, left out whole, of all its windows, and ``left out`` names it.

    Cells other than the server become part of the row index when the runs hold more than one.
    """
    from .validity import standing

    said = standing(runs)
    finished = runs.assign(standing=said)[(runs["status"] == "ok").to_numpy() if "status" in runs else True]
    keys = cells.varying(finished)
    finished = finished.assign(**{c: finished[c].astype(object).map(cells.key) for c in keys})
    retaken = runs.assign(standing=said)[[s == "retaken" for s in said]]
    retaken = retaken.assign(**{c: retaken[c].astype(object).map(cells.key) for c in keys})
    counted = {k if isinstance(k, tuple) else (k,): len(g)
               for k, g in retaken.groupby([*keys, "server"], sort=False, dropna=False)}
    rows = []
    for group_key, group in finished.groupby([*keys, "server"], sort=False, dropna=False):
        group_key = group_key if isinstance(group_key, tuple) else (group_key,)
        row, used = _fork_columns(group, metric)
        d = describe(cells.fork_means(used[metric], cells.fork_keys(used)), alpha=alpha)
        row.update(dict(zip([*keys, "server"], group_key)), mean=d["mean"], ci_low=d["ci_low"], ci_high=d["ci_high"],
                   cv=d["cv"], ci=_format_ci(d["ci_low"], d["ci_high"]), windows=len(used),
                   within_cv=components(used[metric], cells.fork_keys(used))["within_cv"])
        retakes = counted.get(group_key, 0)
        row["left out"] = "; ".join(filter(None, [row["left out"], f"{retakes} retaken" if retakes else ""]))
        rows.append(row)
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    fork_columns = sorted([c for c in frame if c.startswith("fork ")], key=lambda c: int(c.split()[1]))
    return frame[[*keys, "server", *fork_columns, "mean", "ci", "ci_low", "ci_high", "cv", "windows",
                  "within_cv", "left out"]].set_index([*keys, "server"])


def _fork_columns(windows: pd.DataFrame, metric: str) -> tuple[dict, pd.DataFrame]:
    """``({"fork 1": ..., "left out": "fork 2 (jit_active)"}, the windows used)`` of one server's finished windows
    in a cell: each fork the mean of its used windows (of all of them where none was used), forks in the order
    of their repeat; a window left out in a fork that kept others is named with its number."""
    used = windows[windows["standing"] == "used"]
    forks = cells.fork_keys(windows)
    order = windows.assign(_fork=forks).sort_values(["repeat", "started_at"], na_position="last")["_fork"]
    row: dict = {}
    out = []
    for i, fork in enumerate(dict.fromkeys(order), start=1):
        mine = windows[forks == fork]
        kept = mine[mine["standing"] == "used"]
        row[f"fork {i}"] = (kept if len(kept) else mine)[metric].astype(float).mean()
        why = [w for w in mine["standing"] if w != "used"]
        if not len(kept):
            out.append(f"fork {i} {why[0].removeprefix('left out ')}")
        elif why:
            out += [f"fork {i} window {n} {w.removeprefix('left out ')}"
                    for n, w in zip(mine.get("window", pd.Series([None] * len(mine))), mine["standing"]) if w != "used"]
    row["left out"] = "; ".join(out)
    return row, used


def _format_ci(low: float, high: float) -> str:
    if math.isnan(low):
        return "-"
    return f"[{low:,.4g}, {high:,.4g}]"
