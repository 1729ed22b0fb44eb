"""Borrowed strength for the fork variance: a verdict of 2 to 5 rounds judged with a variance learned from more
than its own pair of servers, vectorised as :mod:`benchlab.analysis.intervals` is (trials on the leading axes).

The unit is the log of a fork mean. Two sources are borrowed from, as in Smyth's moderated t (Stat. Appl. Genet.
Mol. Biol. 2004; limma's ``fitFDist``, ``squeezeVar`` and ``ebayes``):

- **the sitting**: the servers of one cell, pooled where Bartlett's test does not reject equal variances. By round
  (every fork in a round, each server once a round) the variance is the two-way residual of server x round,
  (S - 1)(R - 1) degrees of freedom, so the round's shared state is out of it; apart, the servers' variances about
  their own means, sum(n - 1) degrees of freedom.
- **this machine's history**: each stored comparison's variance of the same kind and metric, with its degrees of
  freedom, fitted to a scaled F by the method of moments (:func:`fit_prior`: d0, s0^2); the sitting's variance is
  squeezed, s~^2 = (d s^2 + d0 s0^2) / (d + d0), with a t on d + d0 degrees of freedom (at most the pooled
  degrees of freedom of sitting and history, limma's cap). Fewer than :data:`MIN_VARIANCES` stored variances give
  no prior (d0 = 0). The history weighs at most :data:`HISTORY_WEIGHT` of the sitting's own degrees of freedom
  (:func:`weight`): a sitting noisier than its history that no test can see at 2 rounds is not squeezed toward it.

A sitting whose pooled variance (over all its servers) is above its prior's F(d, d0) quantile :data:`NOISY` is not
squeezed (:func:`noisy`): it is judged on the sitting alone and flagged ``noisy_sitting``. ``docs/statistics.md``
gives the simulation that checks both.
"""

from __future__ import annotations

import numpy as np

#: limma's squeezeVar borrows nothing from fewer variances: "no theoretical advantage from empirical Bayes with
#: less than 3 observations".
MIN_VARIANCES = 3
#: A sitting's variance above this quantile of F(d, d0) times s0^2 is not squeezed (``noisy_sitting``).
NOISY = 0.95
#: The history's weight, d0, is at most this share of the sitting's own degrees of freedom (and at least 1): a
#: sitting five times noisier than its history, which its 2 to 8 degrees of freedom cannot tell from chance, then
#: gives its own variance at least two thirds of the weight (docs/statistics.md: with d0 as fitted it covered 0.83
#: at 2 rounds, and 0.953-0.955 at 2 to 5 rounds with this cap).
HISTORY_WEIGHT = 0.5
#: Bartlett's test at this level decides whether a cell's servers share one fork variance.
EQUAL_SPREAD = 0.05


def trigamma_inverse(x):
    """The y with trigamma(y) = x, by limma's Newton iteration (``trigammaInverse``), elementwise.

    >>> from scipy.special import polygamma
    >>> round(float(polygamma(1, trigamma_inverse(0.5))), 6)
    0.5
    """
    from scipy.special import polygamma

    x = np.asarray(x, dtype=float)
    y = 0.5 + 1 / x
    for _ in range(50):
        tri = polygamma(1, y)
        step = tri * (1 - tri / x) / polygamma(2, y)
        y = y + step
        if np.all(-step / y < 1e-8):
            break
    # limma's shortcuts where the iteration is not needed: trigamma(y) ~ 1/y for small x, 1/y^2 for large
    return np.where(x > 1e7, 1 / np.sqrt(x), np.where(x < 1e-6, 1 / x, y))


def fit_prior(variances, dfs):
    """``(d0, s0^2)`` of stored variances on the last axis (NaN ones left out), limma's ``fitFDist`` by moments on
    the logs: e = log s^2 - digamma(d/2) + log(d/2); V = var(e) - mean(trigamma(d/2)); d0 = 2 trigamma^-1(V) and
    s0^2 = exp(mean(e) + digamma(d0/2) - log(d0/2)), or d0 = inf and s0^2 = exp(mean(e)) when V <= 0. d0 = 0 (no
    prior) below :data:`MIN_VARIANCES` variances. Variances are floored at 1e-5 of their median, as limma does.

    >>> [round(float(v), 4) for v in fit_prior([0.004, 0.03, 0.0005, 0.02, 0.001, 0.05, 0.008], 2)]
    [2.2638, 0.007]
    >>> fit_prior([0.010, 0.012, 0.008, 0.011, 0.009, 0.010], 2)[0]  # closer than chance: no spread of their own
    array(inf)
    """
    from scipy.special import digamma, polygamma

    s2 = np.asarray(variances, dtype=float)
    d = np.broadcast_to(np.asarray(dfs, dtype=float), s2.shape)
    keep = np.isfinite(s2) & np.isfinite(d) & (d > 0)
    n = keep.sum(axis=-1)
    floor = 1e-5 * np.nanmedian(np.where(keep, s2, np.nan), axis=-1)[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        half = np.where(keep, d / 2, 1.0)
        e = np.where(keep, np.log(np.maximum(s2, floor)) - digamma(half) + np.log(half), 0.0)
        mean = e.sum(axis=-1) / np.maximum(n, 1)
        spread = (np.where(keep, e - mean[..., None], 0.0) ** 2).sum(axis=-1) / np.maximum(n - 1, 1)
        spread = spread - np.where(keep, polygamma(1, half), 0.0).sum(axis=-1) / np.maximum(n, 1)
        d0 = np.where(spread > 0, 2 * trigamma_inverse(np.where(spread > 0, spread, 1.0)), np.inf)
        s02 = np.where(np.isfinite(d0), np.exp(mean + digamma(np.where(np.isfinite(d0), d0, 2) / 2)
                                               - np.log(np.where(np.isfinite(d0), d0, 2) / 2)), np.exp(mean))
    enough = n >= MIN_VARIANCES
    return np.where(enough, d0, 0.0), np.where(enough, s02, np.nan)


def squeeze(s2, d, d0, s02):
    """limma's ``squeezeVar``: (d s^2 + d0 s0^2) / (d + d0); s0^2 itself where d0 is infinite, s^2 where d0 is 0.

    >>> float(squeeze(0.04, 1, 3, 0.01))
    0.0175
    """
    s2, d, d0, s02 = (np.asarray(v, dtype=float) for v in (s2, d, d0, s02))
    finite = np.isfinite(d0)
    with np.errstate(invalid="ignore"):
        mixed = (d * s2 + np.where(finite & (d0 > 0), d0 * s02, 0.0)) / (d + np.where(finite, d0, 0.0))
    return np.where(finite, mixed, s02)


def weight(d0, d, share: float = HISTORY_WEIGHT):
    """The prior's degrees of freedom a sitting of ``d`` takes: d0, at most ``share`` x d and at least 1 (0 stays 0).

    >>> [float(w) for w in weight([np.inf, 12.0, 0.5, 0.0], 4)]
    [2.0, 2.0, 0.5, 0.0]
    """
    cap = np.maximum(share * np.asarray(d, dtype=float), 1.0)
    return np.minimum(np.asarray(d0, dtype=float), cap)


def noisy(s2, d, d0, s02, level: float = NOISY):
    """Whether a sitting's variance ``s2`` (``d`` degrees of freedom) lies above the ``level`` quantile of its
    prior, s0^2 F(d, d0) (a chi-square over d where d0 is infinite); False where there is no prior (d0 = 0).

    >>> bool(noisy(0.06, 4, 12, 0.01)), bool(noisy(0.015, 4, 12, 0.01))
    (True, False)
    """
    return np.asarray(_ratio(s2, s02) > limit(d, d0, level)) & (np.asarray(d0) > 0)


def limit(d, d0, level: float = NOISY):
    """The ``level`` quantile of F(d, d0) (of chi-square(d) / d where d0 is infinite): how far above s0^2 a
    sitting's variance may lie and still be squeezed."""
    from scipy import stats

    d, d0 = np.asarray(d, dtype=float), np.asarray(d0, dtype=float)
    with np.errstate(invalid="ignore"):
        f = stats.f.ppf(level, d, np.where(np.isfinite(d0) & (d0 > 0), d0, 1.0))
    return np.where(np.isfinite(d0), f, stats.chi2.ppf(level, d) / d)


def _ratio(s2, s02):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(s2, dtype=float) / np.asarray(s02, dtype=float)


# --- the sitting's own variance: the servers of one cell, by round or apart -----------------------------------

def two_way(logs):
    """``(per-server mean squares, their df)`` of log fork means ``logs[..., server, round]`` (no NaN): the residual
    of the additive model server + round, whose (S - 1)(R - 1) degrees of freedom are shared equally, so their
    df-weighted mean is the two-way residual variance.

    >>> [round(float(v), 5) for v in pooled(*two_way([[0.0, 0.3, -0.2], [0.1, 0.42, -0.1]]))[:2]]
    [7e-05, 2.0]
    """
    logs = np.asarray(logs, dtype=float)
    servers, rounds = logs.shape[-2:]
    residual = (logs - logs.mean(axis=-1, keepdims=True) - logs.mean(axis=-2, keepdims=True)
                + logs.mean(axis=(-2, -1), keepdims=True))
    own = np.full(logs.shape[:-1], (servers - 1) * (rounds - 1) / servers)
    return (residual ** 2).sum(axis=-1) / own, own


def one_way(logs):
    """``(per-server variances, their df)`` of log fork means ``logs[..., server, fork]``, each server about its own
    mean; NaN pads a server with fewer forks (a server of one fork has 0 degrees of freedom)."""
    logs = np.asarray(logs, dtype=float)
    n = np.isfinite(logs).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.nanmean(logs, axis=-1, keepdims=True)
        own = np.nansum((logs - mean) ** 2, axis=-1) / (n - 1)
    return np.where(n > 1, own, np.nan), np.maximum(n - 1, 0).astype(float)


def pooled(variances, df):
    """``(s^2, d, equal)``: the df-weighted variance of the servers on the last axis, its degrees of freedom, and
    whether Bartlett's test at :data:`EQUAL_SPREAD` leaves them equal (True for fewer than 3 servers with degrees of
    freedom: a pair's pool is itself).

    >>> [bool(pooled([0.010, 0.012, 0.011], 4)[2]), bool(pooled([0.010, 0.012, 0.30], 4)[2])]
    [True, False]
    """
    from scipy import stats

    v = np.asarray(variances, dtype=float)
    df = np.broadcast_to(np.asarray(df, dtype=float), v.shape)
    use = (df > 0) & np.isfinite(v)
    df = np.where(use, df, 0.0)
    v = np.where(use, np.maximum(v, 1e-300), 1.0)
    total, k = df.sum(axis=-1), use.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        s2 = (df * v).sum(axis=-1) / total
        statistic = total * np.log(s2) - (df * np.log(v)).sum(axis=-1)
        correction = 1 + ((np.where(use, 1 / np.where(use, df, 1.0), 0.0)).sum(axis=-1) - 1 / total) / (3 * (k - 1))
        p = stats.chi2.sf(statistic / correction, np.maximum(k - 1, 1))
    return s2, total, (k < 3) | (p >= EQUAL_SPREAD)


# --- one pair: its variance, squeezed or not, its interval and its test ---------------------------------------

def judge(logs, first: int, second: int, prior, *, paired: bool, alpha: float,
          share: float = HISTORY_WEIGHT) -> dict:
    """Servers ``first`` against ``second`` from log fork means ``logs[..., server, round]`` (``paired``) or
    ``logs[..., server, fork]`` (apart, NaN padding), with ``prior`` = (d0, s0^2, the history's degrees of freedom)
    broadcast on the leading axes and weighed by :func:`weight` with ``share``. Returns arrays: ``low``, ``high`` and
    ``p`` of the ratio (geometric means', which is the means' where the pool's variances are equal), ``s2`` and
    ``d`` (the sitting's variance used), ``df`` (the moderated t's), ``servers`` (how many were pooled), ``noisy``
    with ``sitting_s2`` and ``sitting_d`` (all the servers' pool, which the flag tests), ``d0`` (fitted) and
    ``d0_used``, and ``borrowed`` (something beyond the pair's own variance was used: more servers, or a prior).
    Where ``borrowed`` is False the pair is judged as it would be without this module, by the caller."""
    logs = np.asarray(logs, dtype=float)
    own, dfs = (two_way if paired else one_way)(logs)
    sitting_s2, sitting_d, equal = pooled(own, dfs)
    pair_logs = logs[..., [first, second], :]
    pair_s2, pair_d, _ = pooled(*(two_way if paired else one_way)(pair_logs))
    # The pool may widen a pair's variance, never narrow it below the pair's own: a server noisier than the others
    # (bimodal, say), which Bartlett's test cannot see at 2 rounds, keeps at least its own spread.
    pool = equal & (sitting_s2 >= pair_s2)
    servers = np.where(pool, (dfs > 0).sum(axis=-1), 2)
    s2, d = np.where(pool, sitting_s2, pair_s2), np.where(pool, sitting_d, pair_d)
    d0, s02, history_df = (np.asarray(v, dtype=float) for v in prior)
    # The flag reads every server of the sitting, the most degrees of freedom it has, whether or not the pair pools.
    loud = noisy(sitting_s2, sitting_d, d0, s02)
    kept_d0 = np.where(loud, 0.0, weight(d0, d, share))
    with np.errstate(invalid="ignore"):
        borrowed = ((kept_d0 > 0) | (servers > 2)) & (d > 0)
    moderated_s2 = squeeze(s2, d, kept_d0, s02)
    df = total_df(d, kept_d0, history_df)
    a, b = pair_logs[..., 0, :], pair_logs[..., 1, :]
    if paired:
        centre, scale = (a - b).mean(axis=-1), 2.0 / a.shape[-1]
    else:
        na, nb = np.isfinite(a).sum(axis=-1), np.isfinite(b).sum(axis=-1)
        centre, scale = np.nanmean(a, axis=-1) - np.nanmean(b, axis=-1), 1.0 / na + 1.0 / nb
    low, high, p = moderated(centre, moderated_s2, scale, np.maximum(df, 1.0), alpha)
    return {"low": low, "high": high, "p": p, "s2": s2, "d": d, "df": df, "servers": servers, "noisy": loud,
            "sitting_s2": sitting_s2, "sitting_d": sitting_d, "borrowed": borrowed, "s02": s02, "d0": d0,
            "d0_used": kept_d0}


# --- the interval and the test ---------------------------------------------------------------------------
def moderated(centre, s2, scale, df, alpha: float):
    """``(low, high, p)`` of a ratio whose log is estimated by ``centre`` with variance ``scale * s2``: the interval
    exp(centre +- t(df) sqrt(scale s2)) and the moderated t's two-sided p, on ``df`` degrees of freedom.

    >>> [round(float(v), 3) for v in moderated(0.06, 0.0004, 1.0, 20, 0.05)]
    [1.018, 1.107, 0.007]
    """
    from scipy import stats

    se = np.sqrt(np.asarray(scale, dtype=float) * np.asarray(s2, dtype=float))
    half = stats.t.ppf(1 - alpha / 2, df) * se
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2 * stats.t.sf(np.abs(centre) / se, df)
    return np.exp(centre - half), np.exp(centre + half), p


def total_df(d, d0, history_df):
    """limma's degrees of freedom of the moderated t: d + d0, at most the sitting's and the history's together."""
    return np.minimum(np.asarray(d, dtype=float) + np.asarray(d0, dtype=float),
                      np.asarray(d, dtype=float) + np.asarray(history_df, dtype=float))
