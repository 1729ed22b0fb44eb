"""Intervals and tests over pairs, vectorised as :mod:`benchlab.analysis.intervals` is: ``a[..., i]`` and
``b[..., i]`` are the forks of one round, the pairs on the last axis, aligned.

Forks run in rounds (one fork of every server, one after another) share the machine's state of that round: here
a round's three forks rose and fell together by as much as 20%. Their ratio is judged on the rounds' log
ratios, where that shared state cancels: a paired Cox interval (Fieller's paired one when a value is 0), and
Wilcoxon's signed-rank test with an exact sign-flip p, from as many pairs as its flips need to reach alpha.
``docs/statistics.md`` gives the calibration.
"""

from __future__ import annotations

import numpy as np

from .intervals import MONTE_CARLO_SPLITS, SEED, cox_or_fieller, t_quantile

#: Up to this many pairs the signed-rank p takes every sign flip (2**14 = 16 384); beyond, MONTE_CARLO_SPLITS.
EXACT_PAIRS = 14


def _paired_cox(a: np.ndarray, b: np.ndarray, alpha: float):
    """log(mean a / mean b) estimated as mean(d) + (va - vb)/2, d the pairs' log ratios and va, vb each side's
    log variance (Cox's m + v/2 on each side; a round effect shared by a pair cancels in d and in va - vb), with
    variance var(d)/n + (va**2 + vb**2 - 2 cab**2) / (2(n-1)) (the second term that of (va - vb)/2 for
    normal logs, cab their covariance); t with n - 1 degrees of freedom."""
    ya, yb = np.log(a), np.log(b)
    n = a.shape[-1]
    va, vb = ya.var(axis=-1, ddof=1), yb.var(axis=-1, ddof=1)
    cab = ((ya - ya.mean(axis=-1, keepdims=True)) * (yb - yb.mean(axis=-1, keepdims=True))).sum(axis=-1) / (n - 1)
    d = ya - yb
    centre = d.mean(axis=-1) + (va - vb) / 2
    half = t_quantile(alpha, n - 1) * np.sqrt(d.var(axis=-1, ddof=1) / n + (va ** 2 + vb ** 2 - 2 * cab ** 2)
                                              / (2 * (n - 1)))
    return np.exp(centre - half), np.exp(centre + half)


def _paired_fieller(a: np.ndarray, b: np.ndarray, alpha: float):
    # Every r with mean(a - r b)^2 <= t^2 var(a - r b) / n: Fieller's interval with the pairs' covariance.
    n = a.shape[-1]
    ma, mb = a.mean(axis=-1), b.mean(axis=-1)
    va, vb = a.var(axis=-1, ddof=1) / n, b.var(axis=-1, ddof=1) / n
    vab = ((a - ma[..., None]) * (b - mb[..., None])).sum(axis=-1) / (n - 1) / n
    t2 = t_quantile(alpha, n - 1) ** 2
    quad, half, const = mb ** 2 - t2 * vb, ma * mb - t2 * vab, ma ** 2 - t2 * va
    root = np.sqrt(np.maximum(half ** 2 - quad * const, 0.0))
    safe = np.where(quad > 0, quad, 1.0)
    return np.where(quad > 0, (half - root) / safe, np.nan), np.where(quad > 0, (half + root) / safe, np.nan)


def ratio_interval(a: np.ndarray, b: np.ndarray, alpha: float):
    """The interval of mean(a) / mean(b) from pairs: :func:`_paired_cox` where every value is positive, else
    :func:`_paired_fieller`; NaN below 2 pairs or where no pair's values differ from the others'."""
    if a.shape[-1] < 2:
        return np.full(a.shape[:-1], np.nan), np.full(a.shape[:-1], np.nan)
    return cox_or_fieller(a, b, alpha, _paired_cox, _paired_fieller)


def differences(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """What the paired tests take: each pair's log ratio where every value of the row is positive, else a - b."""
    positive = np.all(a > 0, axis=-1) & np.all(b > 0, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(positive[..., None], np.log(np.where(positive[..., None], a / np.where(b > 0, b, 1.0), 1.0)),
                        a - b)


def reach(alpha: float) -> int:
    """The fewest pairs whose sign flips can reach ``alpha``: the smallest two-sided p of the signed rank is
    2 / 2**n, so 6 at 0.05 and 8 at 0.01. Below it, pairs are not judged paired at all (:func:`.cells.rounds`).

    >>> reach(0.05), reach(0.01)
    (6, 8)
    """
    n = 1
    while 2 ** n <= 2 / alpha:
        n += 1
    return n


def test_name(n: int, alpha: float) -> str:
    """"Wilcoxon signed-rank" from :func:`reach` pairs, "none" below: a paired t on 3 rounds called 7.6% of this
    machine's real A/A comparisons significant (its log ratios are light-tailed, near bimodal), where the sign
    flips are exact whatever the shape of a symmetric distribution.

    >>> test_name(5, 0.05), test_name(6, 0.05)
    ('none', 'Wilcoxon signed-rank')
    """
    return "Wilcoxon signed-rank" if n >= reach(alpha) else "none"


# a statistics function, not a pytest test; mypy knows no attributes of a function, pytest reads this one
test_name.__test__ = False  # type: ignore[attr-defined]


def _flips(n: int) -> np.ndarray:
    """Sign flips as rows of +-1: every one up to EXACT_PAIRS pairs, else MONTE_CARLO_SPLITS from SEED."""
    if n <= EXACT_PAIRS:
        return 1.0 - 2.0 * ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1)
    return np.where(np.random.default_rng(SEED).random((MONTE_CARLO_SPLITS, n)) < 0.5, -1.0, 1.0)


def _signed_rank_p(d: np.ndarray):
    """Two-sided p of Wilcoxon's signed-rank sum, sum(sign(d) rank|d|), from its sign-flip distribution: midranks
    for ties, and a zero difference ranked but signed 0 (Pratt), so it moves no sum. Exact over every flip up to
    EXACT_PAIRS pairs, else Monte Carlo with p = (1 + k) / (1 + flips). The distribution depends only on the set
    of signed ranks' sizes, so rows sharing one (every row without ties or zeros) share it."""
    from scipy import stats

    n = d.shape[-1]
    rows = d.reshape(-1, n)
    sizes = stats.rankdata(np.abs(rows), axis=-1) * (rows != 0)
    observed = np.abs((np.sign(rows) * sizes).sum(axis=-1)) - 1e-9  # ranks are multiples of 1/2
    flips = _flips(n)
    at_least = np.empty(len(rows))
    sets, which = np.unique(np.sort(sizes, axis=-1), axis=0, return_inverse=True)
    which = which.ravel()
    for k, ranks_set in enumerate(sets):
        spread = np.sort(np.abs(flips @ ranks_set))
        mine = which == k
        at_least[mine] = spread.size - np.searchsorted(spread, observed[mine], side="left")
    p = at_least / len(flips) if n <= EXACT_PAIRS else (1 + at_least) / (1 + len(flips))
    return p.reshape(d.shape[:-1])


def p_value(a: np.ndarray, b: np.ndarray, alpha: float):
    """The signed-rank p on :func:`differences`; NaN below :func:`reach` pairs."""
    if test_name(a.shape[-1], alpha) == "none":
        return np.full(a.shape[:-1], np.nan)
    return _signed_rank_p(differences(a, b))
