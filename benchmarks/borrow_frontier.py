"""What any interval built from a sitting's own variance must pay at 2 rounds to cover a sitting five times noisier
than its history: the narrowest such intervals, beside the moderated t with the history's weight as fitted, capped,
and the sitting's own t.

    python3 benchmarks/borrow_frontier.py [--sittings 400000]

The model is tests/test_borrow.py's, simplified: 3 servers by round, the prior known (s0 = 1, d0 = 8), each server's
variance the sitting's times exp(0.3 Z), the sitting's variance pooled over all its servers (d = 2). An interval
here is centre +- h(x) x sqrt(2 / R), any function h of x = s^2 / s0^2. The frontier chooses h in each of 60 bins
of x to make the calm sittings' mean half-width least for a given coverage of the noisy ones (a Lagrangian over the
bins: each bin's h maximises lambda x its noisy coverage - its calm width). Half-widths are in units of s0.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats

SERVERS, ROUNDS, D0, BINS = 3, 2, 8, 60


def sittings(rng, n: int, times: float):
    """(s^2, |centre| / sqrt(2/R)) of ``n`` null sittings whose variance is ``times`` the prior's."""
    sitting = D0 / rng.chisquare(D0, (n, 1)) * times
    sd = np.sqrt(sitting * np.exp(0.3 * rng.standard_normal((n, SERVERS))))
    logs = rng.standard_normal((n, SERVERS, ROUNDS)) * sd[..., None]
    residual = logs - logs.mean(-1, keepdims=True) - logs.mean(-2, keepdims=True) + logs.mean((-2, -1), keepdims=True)
    s2 = (residual ** 2).sum((-2, -1)) / ((SERVERS - 1) * (ROUNDS - 1))
    return s2, np.abs((logs[:, 0] - logs[:, 1]).mean(-1)) / np.sqrt(2.0 / ROUNDS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sittings", type=int, default=400_000)
    n = parser.parse_args().sittings
    rng = np.random.default_rng(0)
    (calm, calm_err), (noisy, noisy_err) = sittings(rng, n, 1.0), sittings(rng, n, 5.0)
    d = (SERVERS - 1) * (ROUNDS - 1)
    flag = stats.f.ppf(0.95, d, D0)

    def show(name, half):
        print(f"{name:44} calm: coverage {np.mean(calm_err <= half(calm)):.3f}, mean half-width "
              f"{np.mean(half(calm)):.2f} | noisy: coverage {np.mean(noisy_err <= half(noisy)):.3f}")

    def moderated(d0, flagged: bool = False):
        def half(s2):
            squeezed = stats.t.ppf(0.975, d + d0) * np.sqrt((d * s2 + d0) / (d + d0))
            return np.where(s2 > flag, stats.t.ppf(0.975, d) * np.sqrt(s2), squeezed) if flagged else squeezed
        return half

    print(f"{n} sittings a side, 2 rounds, 3 servers (d = 2), the prior known: s0 = 1, d0 = {D0}")
    show(f"moderated t, d0 = {D0} (as fitted)", moderated(D0))
    show("moderated t, d0 = 1 (capped), flag at 0.95", moderated(1, flagged=True))
    show("moderated t, d0 = 0.5, flag at 0.95", moderated(0.5, flagged=True))
    show("the sitting's own t (d = 2)", lambda s2: stats.t.ppf(0.975, d) * np.sqrt(s2))
    edges = np.quantile(np.log(np.concatenate([calm, noisy])), np.linspace(0, 1, BINS + 1))
    edges[0], edges[-1] = -np.inf, np.inf
    calm_bin, noisy_bin = np.digitize(np.log(calm), edges) - 1, np.digitize(np.log(noisy), edges) - 1
    grid = np.linspace(0.05, 15, 600)
    cover = np.array([[np.sum(noisy_err[noisy_bin == b] <= h) for h in grid] for b in range(BINS)]) / n
    calm_cover = np.array([[np.sum(calm_err[calm_bin == b] <= h) for h in grid] for b in range(BINS)]) / n
    share = np.bincount(calm_bin, minlength=BINS) / n
    for lam in (12, 16, 20, 24, 28):
        best = (lam * cover - grid[None, :] * share[:, None]).argmax(axis=1)
        rows = np.arange(BINS)
        print(f"{'frontier, lambda ' + str(lam):44} calm: coverage {calm_cover[rows, best].sum():.3f}, mean "
              f"half-width {(grid[best] * share).sum():.2f} | noisy: coverage {cover[rows, best].sum():.3f}")


if __name__ == "__main__":
    main()
