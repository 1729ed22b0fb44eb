"""Intervals and tests over repeats, vectorised: the repeats lie on the last axis, so one call can take a
single cell or a simulation's thousands. :mod:`benchlab.analysis.stats` applies them to the runs frame.

Positive metrics get Cox's interval on the logs, others Student t; ratios the two-sample version (Fieller's
when a value is 0); the test is Mann-Whitney U with an exact permutation p (its normal approximation from
50 repeats a side without ties), or Welch t where no split can reach alpha. ``docs/statistics.md`` gives
the reasons and the calibration.

Forks run in rounds are judged paired, by :mod:`benchlab.analysis.pairs`.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterator

import numpy as np

EXACT_SPLITS = 20_000
#: From this many repeats a side, with no tie, Mann-Whitney's p comes from its normal approximation.
NORMAL_FROM = 50
MONTE_CARLO_SPLITS = 10_000
#: The largest cell's splits (repeats x splits) kept in memory, per (na, nb), between calls.
MASK_SIZE = 1_000_000
SEED = 20261130


# --- kernels: the repeats lie on the last axis, so a simulation can pass thousands of cells at once -------

def varies(x: np.ndarray):
    # Repeats that are all equal (whole milliseconds, zero errors) show no noise to scale an interval by;
    # a zero-width interval would claim certainty, so there is none.
    return x.max(axis=-1) > x.min(axis=-1)


def t_quantile(alpha: float, df):
    """Student's t two-sided ``alpha`` quantile on ``df`` degrees of freedom (an array: elementwise). scipy's
    ``ppf`` costs half a millisecond a call whatever its size, so each distinct df is asked once."""
    df = np.asarray(df, dtype=float)
    if df.ndim == 0:
        return _t_quantile(alpha, float(df))
    distinct, where = np.unique(df, return_inverse=True)
    return np.asarray(_t_ppf(alpha, distinct))[where].reshape(df.shape)


@functools.lru_cache(maxsize=1024)
def _t_quantile(alpha: float, df: float) -> float:
    return float(_t_ppf(alpha, df))


def _t_ppf(alpha: float, df):
    from scipy import stats

    return stats.t.ppf(1 - alpha / 2, df)


def welch_df(wa, wb, na: int, nb: int):
    # Welch-Satterthwaite. With no spread in either sample the width is 0 whatever the df, so say 1.
    total, parts = wa + wb, wa ** 2 / (na - 1) + wb ** 2 / (nb - 1)
    return np.where(parts > 0, total ** 2 / np.where(parts > 0, parts, 1.0), 1.0)


def t_interval(x: np.ndarray, alpha: float):
    n = x.shape[-1]
    half = t_quantile(alpha, n - 1) * x.std(axis=-1, ddof=1) / math.sqrt(n)
    return x.mean(axis=-1) - half, x.mean(axis=-1) + half


def difference_interval(a: np.ndarray, b: np.ndarray, alpha: float):
    """The interval of mean(a) - mean(b) by Welch's t (Welch-Satterthwaite df, :func:`welch_df`): a difference, not
    a ratio, for a figure that may be 0 on one side (a layer of a profile one server never enters). NaN below 2
    repeats a side, and where neither side's repeats differ (no noise to scale it by, as :func:`varies` says).

    >>> [round(float(v), 2) for v in difference_interval(np.array([10.0, 11, 12]), np.array([8.0, 9, 10]), 0.05)]
    [-0.27, 4.27]
    """
    na, nb = a.shape[-1], b.shape[-1]
    if na < 2 or nb < 2:
        return np.full(a.shape[:-1], np.nan), np.full(a.shape[:-1], np.nan)
    va, vb = a.var(axis=-1, ddof=1) / na, b.var(axis=-1, ddof=1) / nb
    half = t_quantile(alpha, welch_df(va, vb, na, nb)) * np.sqrt(va + vb)
    centre, either = a.mean(axis=-1) - b.mean(axis=-1), varies(a) | varies(b)
    return np.where(either, centre - half, np.nan), np.where(either, centre + half, np.nan)


def _log_mean(x: np.ndarray):
    """log(mean) estimated as m + v/2 (exact for a log-normal, to second order for a small cv) and its
    variance v/n + v^2/(2(n-1)) (Cox, in Land 1972)."""
    y = np.log(x)
    n, v = y.shape[-1], y.var(axis=-1, ddof=1)
    return y.mean(axis=-1) + v / 2, v / n + v ** 2 / (2 * (n - 1))


def _cox_interval(x: np.ndarray, alpha: float):
    centre, var = _log_mean(x)
    half = t_quantile(alpha, x.shape[-1] - 1) * np.sqrt(var)
    return np.exp(centre - half), np.exp(centre + half)


def _cox_ratio(a: np.ndarray, b: np.ndarray, alpha: float):
    (ca, wa), (cb, wb) = _log_mean(a), _log_mean(b)
    half = t_quantile(alpha, welch_df(wa, wb, a.shape[-1], b.shape[-1])) * np.sqrt(wa + wb)
    return np.exp(ca - cb - half), np.exp(ca - cb + half)


def _fieller_ratio(a: np.ndarray, b: np.ndarray, alpha: float):
    # Every r with (mean_a - r mean_b)^2 <= t^2 (va + r^2 vb). It is unbounded (NaN here) when mean_b
    # itself is not surely away from 0, which is the honest answer for a ratio to a count near 0.
    ma, mb = a.mean(axis=-1), b.mean(axis=-1)
    va, vb = a.var(axis=-1, ddof=1) / a.shape[-1], b.var(axis=-1, ddof=1) / b.shape[-1]
    t2 = t_quantile(alpha, welch_df(va, vb * (ma / mb) ** 2, a.shape[-1], b.shape[-1])) ** 2
    quad, half = mb ** 2 - t2 * vb, ma * mb
    root = np.sqrt(np.maximum(half ** 2 - quad * (ma ** 2 - t2 * va), 0.0))
    safe = np.where(quad > 0, quad, 1.0)
    return np.where(quad > 0, (half - root) / safe, np.nan), np.where(quad > 0, (half + root) / safe, np.nan)


def _welch_p(a: np.ndarray, b: np.ndarray):
    from scipy import stats

    va, vb = a.var(axis=-1, ddof=1) / a.shape[-1], b.var(axis=-1, ddof=1) / b.shape[-1]
    diff, se = np.abs(a.mean(axis=-1) - b.mean(axis=-1)), np.sqrt(va + vb)
    either = varies(a) | varies(b)  # not se > 0: the variance of equal floats can come out as 1e-37
    t = np.where(either, diff / np.where(either, se, 1.0), np.nan)
    return 2 * stats.t.sf(t, welch_df(va, vb, a.shape[-1], b.shape[-1]))


def _split_count(na: int, nb: int) -> int:
    every = math.comb(na + nb, na)
    return every if every <= EXACT_SPLITS else MONTE_CARLO_SPLITS


def _splits(na: int, nb: int) -> Iterator[np.ndarray]:
    """The splits of the pooled repeats in blocks, one row each holding the indices of the first sample's na:
    every split when there are at most EXACT_SPLITS, else MONTE_CARLO_SPLITS random ones from SEED."""
    n = na + nb
    step = max(1, min(1000, 1_000_000 // n))
    if math.comb(n, na) <= EXACT_SPLITS:
        every = itertools.combinations(range(n), na)
        for block in iter(lambda: list(itertools.islice(every, step)), []):
            yield np.array(block, dtype=np.intp)
        return
    rng = np.random.default_rng(SEED)
    for start in range(0, MONTE_CARLO_SPLITS, step):
        yield np.argpartition(rng.random((min(step, MONTE_CARLO_SPLITS - start), n)), na - 1)[:, :na]


def _mask(chosen: np.ndarray, n: int) -> np.ndarray:
    """Splits as a 0/1 matrix (n, splits): ranks @ mask is each split's rank sum."""
    mask = np.zeros((len(chosen), n))
    np.put_along_axis(mask, chosen, 1.0, axis=1)
    return np.ascontiguousarray(mask.T)


@functools.lru_cache(maxsize=8)
def _kept(na: int, nb: int) -> tuple[np.ndarray, np.ndarray]:
    """Every split at once, indices and mask, kept per (na, nb) for a cell small enough (MASK_SIZE): a
    simulation asks for the same splits thousands of times."""
    chosen = np.concatenate(list(_splits(na, nb)))
    mask = _mask(chosen, na + nb)
    chosen.flags.writeable = mask.flags.writeable = False
    return chosen, mask


def _mann_whitney_p(a: np.ndarray, b: np.ndarray):
    """Two-sided p of the Mann-Whitney rank sum from its permutation distribution, with midranks for ties:
    exact over every split, or Monte Carlo with p = (1 + k) / (1 + splits) so it never undershoots.

    The null distribution depends only on the pooled ranks as a set, so rows with the same sorted ranks
    (every row without ties) share it: for a small cell it is computed once per set, and each row is
    counted against its set's. Tied rows, mostly each its own set, take every split at once."""
    from scipy import stats

    na, nb = a.shape[-1], b.shape[-1]
    ranks = stats.rankdata(np.concatenate([a, b], axis=-1), axis=-1)
    centre = na * (na + nb + 1) / 2
    observed = np.abs(ranks[..., :na].sum(axis=-1) - centre) - 1e-9  # ranks are multiples of 1/2
    splits = _split_count(na, nb)
    if (na + nb) * splits > MASK_SIZE:  # a large cell: the splits a block at a time, never all in memory
        at_least = np.zeros(ranks.shape[:-1])
        for chosen in _splits(na, nb):
            at_least += (np.abs(ranks @ _mask(chosen, na + nb) - centre) >= observed[..., None]).sum(axis=-1)
    else:
        at_least = _counted(ranks.reshape(-1, na + nb), observed.ravel(), centre, *_kept(na, nb))
    at_least = at_least.reshape(ranks.shape[:-1])
    return at_least / splits if math.comb(na + nb, na) <= EXACT_SPLITS else (1 + at_least) / (1 + splits)


def _counted(pooled: np.ndarray, observed: np.ndarray, centre: float, chosen: np.ndarray, mask: np.ndarray):
    """Per row of ``pooled`` ranks, how many splits give a rank sum at least as far from ``centre``."""
    at_least = np.empty(observed.shape)
    ordered = np.sort(pooled, axis=-1)
    plain = (ordered == np.arange(1, pooled.shape[-1] + 1)).all(axis=-1)  # no tie: the ranks 1..n
    if plain.any():
        at_least[plain] = _against(ordered[plain][0], observed[plain], centre, chosen)
    tied = np.flatnonzero(~plain)
    if not len(tied):
        return at_least
    sets, which = np.unique(ordered[tied], axis=0, return_inverse=True)
    if 4 * len(sets) > len(tied):  # mostly one row a set: every split of a block of rows at once
        step = max(1, 250_000 // mask.shape[1])
        for start in range(0, len(tied), step):
            rows = tied[start:start + step]
            at_least[rows] = (np.abs(pooled[rows] @ mask - centre) >= observed[rows, None]).sum(axis=-1)
        return at_least
    which = which.ravel()
    order = np.argsort(which, kind="stable")
    for ranks_set, members in zip(sets, np.split(order, np.cumsum(np.bincount(which))[:-1])):
        at_least[tied[members]] = _against(ranks_set, observed[tied[members]], centre, chosen)
    return at_least


def _against(ranks_set: np.ndarray, observed: np.ndarray, centre: float, chosen: np.ndarray) -> np.ndarray:
    """How many splits of ``ranks_set`` give a rank sum at least ``observed`` from ``centre``, per value."""
    spread = np.sort(np.abs(ranks_set[chosen].sum(axis=-1) - centre))
    return spread.size - np.searchsorted(spread, observed, side="left")


# --- the rules, vectorised: each picks its method per row, so a simulation runs exactly this code -------

def mean_interval(x: np.ndarray, alpha: float):
    positive = np.all(x > 0, axis=-1)
    with np.errstate(over="ignore"):  # 2 repeats 1e6x apart: the upper bound is inf, and rightly so
        cox = _cox_interval(np.where(positive[..., None], x, 1.0), alpha)
    t = t_interval(x, alpha)
    low, high = np.where(positive, cox[0], t[0]), np.where(positive, cox[1], t[1])
    return np.where(varies(x), low, np.nan), np.where(varies(x), high, np.nan)


def ratio_interval(a: np.ndarray, b: np.ndarray, alpha: float):
    return cox_or_fieller(a, b, alpha, _cox_ratio, _fieller_ratio)


def cox_or_fieller(a: np.ndarray, b: np.ndarray, alpha: float, cox, fieller):
    """The interval of mean(a) / mean(b) by ``cox`` (on the logs) in each row where every value is positive, else
    by ``fieller``; NaN where neither side's values differ. The one choice, for independent samples
    (:func:`ratio_interval`) and pairs (:func:`benchlab.analysis.pairs.ratio_interval`) alike."""
    positive = np.all(a > 0, axis=-1) & np.all(b > 0, axis=-1)
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        logs = cox(np.where(positive[..., None], a, 1.0), np.where(positive[..., None], b, 1.0), alpha)
        plain = fieller(a, b, alpha)
    either = varies(a) | varies(b)
    return (np.where(positive & either, logs[0], np.where(either, plain[0], np.nan)),
            np.where(positive & either, logs[1], np.where(either, plain[1], np.nan)))


def which_test(na: int, nb: int, alpha: float) -> str:
    if na < 2 or nb < 2:
        return "none"
    # A rank test's smallest two-sided p is 2 / C(n, k); compared as integers, this never overflows.
    return "Mann-Whitney" if math.comb(na + nb, na) > 2 / alpha else "Welch t"


def normal_applies(a: np.ndarray, b: np.ndarray):
    """Per row: both sides have at least NORMAL_FROM repeats and no two pooled values are equal. There the
    normal approximation of U (with continuity correction) is accurate to a few thousandths, and a
    permutation over 10 000 random splits of thousands of repeats took most of a second a pair."""
    if min(a.shape[-1], b.shape[-1]) < NORMAL_FROM:
        return np.zeros(a.shape[:-1], dtype=bool)
    pooled = np.sort(np.concatenate([a, b], axis=-1), axis=-1)
    return ~np.any(pooled[..., 1:] == pooled[..., :-1], axis=-1)


def test_name(a: np.ndarray, b: np.ndarray, alpha: float) -> str:
    """The test :func:`p_value` uses for one cell: "Mann-Whitney normal" (the normal approximation),
    "Mann-Whitney" (a permutation p), "Welch t" or "none"."""
    name = which_test(a.shape[-1], b.shape[-1], alpha)
    return "Mann-Whitney normal" if name == "Mann-Whitney" and normal_applies(a, b) else name


# a statistics function, not a pytest test; mypy knows no attributes of a function, pytest reads this one
test_name.__test__ = False  # type: ignore[attr-defined]


def p_value(a: np.ndarray, b: np.ndarray, alpha: float):
    if which_test(a.shape[-1], b.shape[-1], alpha) != "Mann-Whitney":
        return _welch_p(a, b)
    normal = normal_applies(a, b)
    if not normal.any():
        return _mann_whitney_p(a, b)
    from scipy import stats

    p = np.asarray(stats.mannwhitneyu(a, b, method="asymptotic", axis=-1).pvalue, dtype=float)
    if normal.all():
        return p
    # The permutation's splits are drawn once for all rows, so leaving the normal rows out changes no p.
    p = np.array(p, copy=True)
    p[~normal] = _mann_whitney_p(a[~normal], b[~normal])
    return p


def significant(p, low, high, alpha: float):
    # Both must agree: the test rejects, and the ratio's interval lies wholly on one side of 1.
    return (p < alpha) & ((low > 1) | (high < 1))
