"""The verdicts of a comparison: each server against the baseline (or every pair), per cell, in one sentence each.

They read the tidy runs frame through the one rule of :mod:`benchlab.analysis.validity` (no window with a validity
flag enters a verdict) and take fork means as their unit, paired by round where the forks ran in rounds enough
(:func:`benchlab.analysis.cells.rounds`); the intervals and tests are :mod:`benchlab.analysis.stats`'.
"""

from __future__ import annotations

import math

import pandas as pd

from . import cells, intervals, sittings
from .pairs import reach as rounds_needed
from .stats import LOWER_IS_BETTER, _by_cell, count, pick_baseline, ratio_ci, test_difference
from .validity import said, usable


def _format_change(metric: str, ratio: float, low: float, high: float) -> str:
    if math.isnan(ratio):
        return f"{metric} n/a"
    text = f"{ratio - 1:+.0%} {metric}"
    if not math.isnan(low):
        text += f" [{low - 1:+.0%}, {high - 1:+.0%}]"
    return text


def verdicts(runs: pd.DataFrame, metric: str = "rps", baseline: str | None = None, *,
             alpha: float = 0.05, pairs: str = "baseline", borrowing=None) -> pd.DataFrame:
    """Pairwise comparisons per cell: each server against the baseline (``pairs="all"``: every pair).

    A difference is significant when :func:`test_difference` rejects at ``alpha`` and the ratio's interval
    at confidence ``1 - alpha`` (:func:`ratio_ci`) excludes 1. The ``verdict`` column reads, for example,
    ``"spring-jetty vs spring-tomcat: +78% rps [+70%, +86%], significant (Mann-Whitney p=0.008)"`` or
    ``"... not distinguishable at 3 repeats (Welch t p=0.31)"``; forks that ran in rounds are judged by round
    (:func:`.cells.rounds`), ``"... not distinguishable at 6 rounds (Wilcoxon signed-rank p=0.31)"``.
    """
    baseline = pick_baseline(runs, baseline)
    rows = []
    clean, left = usable(runs)  # the one rule: no window with a validity flag enters a verdict
    keys, groups = cells.group(cells.forks(cells.ok(runs)))  # every side, to say why one is not judged
    kept_by_cell = _by_cell(cells.forks(clean))  # fork means of the clean windows: the unit of every test
    for cell, group in groups:
        cell = cell if isinstance(cell, tuple) else (cell,)
        servers = list(dict.fromkeys(group["server"]))
        kept = kept_by_cell.get(cell, group.iloc[0:0])
        shape = sittings.layout(kept, metric) if borrowing is not None else None
        prior = borrowing.prior(metric, shape.paired, cells.load_point(kept)) if shape is not None else None
        if pairs == "all":
            pairings = [(a, b) for i, b in enumerate(servers) for a in servers[i + 1:]]
        else:
            pairings = [(s, baseline) for s in servers if s != baseline and baseline in servers]
        for server, against in pairings:
            notes = "; ".join(filter(None, (said(left.get((cell, s))) for s in (server, against))))
            row = {c: cells.restore(v) for c, v in zip(keys, cell)}
            row.update(_verdict(kept[kept["server"] == server], kept[kept["server"] == against], metric,
                                server=server, against=against, alpha=alpha, notes=notes,
                                borrowed=_borrowed(shape, prior, server, against, alpha)))
            rows.append(row)
    return pd.DataFrame(rows, columns=[*keys, "metric", "server", "baseline", "change", "change_low",
                                       "change_high", "p_value", "test", "significant", "better", "judged",
                                       "verdict"])


def _borrowed(shape, prior, server, against, alpha: float):
    """The pair judged with borrowed strength, or None (nothing to borrow, or a noisy sitting)."""
    return None if shape is None else sittings.judge(shape, server, against, prior, alpha=alpha)[0]


def _verdict(mine: pd.DataFrame, theirs: pd.DataFrame, metric: str, *, server, against, alpha: float,
             notes: str, borrowed=None) -> dict:
    """One pairing's verdict from its sides' clean fork rows; ``notes`` says what each side left out. A side
    with no clean fork is not judged: the verdict says why, and nothing about a difference."""
    if mine.empty or theirs.empty:
        return {"metric": metric, "server": server, "baseline": against, "change": math.nan,
                "change_low": math.nan, "change_high": math.nan, "p_value": math.nan, "test": "none",
                "significant": False, "better": None, "judged": False,
                "verdict": f"{server} vs {against}: {metric} not judged: {notes or 'no finished run'}"}
    a, b, paired = cells.rounds(mine, theirs, metric, alpha=alpha)
    ratio, low, high = ratio_ci(a, b, alpha=alpha, paired=paired)
    test, p = test_difference(a, b, alpha=alpha, paired=paired)
    n = count(a, b, paired)
    unit = "round" if paired else "repeat"
    lent = ""
    if borrowed is not None and not paired:  # the signed rank cannot judge these rounds: borrow strength
        low, high, p, test, lent = borrowed.low, borrowed.high, borrowed.p, "moderated t", f"; {borrowed.said}"
        n, unit = borrowed.rounds, "round" if borrowed.paired else "repeat"
    significant = bool(intervals.significant(p, low, high, alpha))
    change = _format_change(metric, ratio, low, high)
    if significant:
        tail = f"significant ({test} {_format_p(p)}{lent})"
    elif test == "none":
        least = f"{rounds_needed(alpha)} rounds" if paired else "2 each"  # `pairs` is an option here
        tail = f"not distinguishable at {n} {unit}{'s' if n != 1 else ''} (at least {least} are needed)"
    elif math.isnan(p):
        tail = f"not distinguishable at {n} {unit}s (no {unit} differed from the others)"
    elif p < alpha:  # the test alone rejects: say why that is not enough, not just a p that looks significant
        tail = (f"not distinguishable at {n} {unit}s ({test} {_format_p(p)}, but the {1 - alpha:.0%} interval "
                f"includes 0%, and both must agree)")
    else:
        tail = f"not distinguishable at {n} {unit}s ({test} {_format_p(p)}{lent})"
    better = None
    if significant:
        better = (ratio < 1) if metric in LOWER_IS_BETTER else (ratio > 1)
    return {"metric": metric, "server": server, "baseline": against, "change": ratio - 1, "change_low": low - 1,
            "change_high": high - 1, "p_value": p, "test": test, "significant": significant, "better": better,
            "judged": True, "verdict": f"{server} vs {against}: {change}, {tail}" + (f"; {notes}" if notes else "")}


def _format_p(p: float) -> str:
    # The normal approximation of thousands of clearly different repeats gives a p below the smallest float.
    return "p<1e-300" if p == 0 else f"p={p:.3g}"
