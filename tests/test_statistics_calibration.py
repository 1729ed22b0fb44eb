"""Calibration of :mod:`benchlab.analysis.stats` on data with a known answer: do the intervals cover the truth, and
do the verdicts call a difference "significant" no more often than ``alpha`` when there is none?

Every setting draws TRIALS cells of two servers with n repeats each and runs the package's own rules on
all of them at once: the vectorised kernels that mean_ci, ratio_ci, test_difference and verdicts call
(test_the_simulation_runs_the_public_code checks that they agree cell by cell). The truths:

- normal:     10 000 req/s x (1 + 0.10 Z); the mean is 10 000.
- log-normal: 10 000 req/s x exp(0.5 Z), a skewed metric (a p99 that spreads 3x over 3 repeats is
              common at this sigma); the mean is 10 000 exp(0.125).
- t3:         10 000 req/s x (1 + 0.05 T3), Student t with 3 df: rare far outliers; the mean is 10 000.
- ms 2.5:     round(2.5 exp(0.2 Z)) ms, a fast endpoint's p50 as JMeter records it (whole ms, so mostly
              2 and 3); the truth is the mean of the recorded value, sum(k P(round = k)).
- ms 20:      round(20 exp(0.1 Z)) ms, a p99 in whole ms.

The other server is the same noise scaled by 1 (the null: every ratio of means, medians or geometric
means is 1) or by 1.3 (the ratio of means is 1.3; for whole ms, E[round(1.3 X)] / E[round(X)]).
Coverage is counted over the cells that have an interval (whole-ms repeats that are all equal get
none); `no_ci` is the share without one. False positives are verdicts called significant under the null.

Print the table: python3 -m pytest -s -q tests/test_statistics_calibration.py -p no:cacheprovider
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from benchlab.analysis import cells, intervals, pairs, stats, verdicts

TRIALS = 4000
SIZES = (2, 3, 5, 9, 10, 30)
ALPHA = 0.05
COVERAGE_FLOOR = 0.94
SEED = 12


def margin(p: float, trials: int) -> float:
    """Two binomial standard errors: a rule whose true rate sits exactly at the bound fails ~2% of runs."""
    return 2 * math.sqrt(p * (1 - p) / trials)


def whole_ms(median: float, sigma: float):
    def draw(rng, shape, scale):
        return np.round(scale * median * np.exp(sigma * rng.standard_normal(shape)))

    def mean(scale):
        k = np.arange(0, int(20 * median) + 2)
        dist = scipy_stats.lognorm(sigma, scale=scale * median)
        return float((k * (dist.cdf(k + 0.5) - dist.cdf(k - 0.5))).sum())
    return draw, mean


NOISES = {
    "normal": (lambda rng, shape, scale: scale * 1e4 * (1 + 0.10 * rng.standard_normal(shape)),
               lambda scale: scale * 1e4),
    "log-normal": (lambda rng, shape, scale: scale * 1e4 * np.exp(0.5 * rng.standard_normal(shape)),
                   lambda scale: scale * 1e4 * math.exp(0.125)),
    "t3": (lambda rng, shape, scale: scale * 1e4 * (1 + 0.05 * rng.standard_t(3, shape)),
           lambda scale: scale * 1e4),
    "ms 2.5": whole_ms(2.5, 0.2),
    "ms 20": whole_ms(20.0, 0.1),
}


def delta_t_ratio(a, b, alpha):
    """The plain t interval of a ratio (delta method, Welch df): the width reference for the ratio."""
    ra, rb = (x.var(axis=-1, ddof=1) / x.shape[-1] / x.mean(axis=-1) ** 2 for x in (a, b))
    half = intervals.t_quantile(alpha, intervals.welch_df(ra, rb, a.shape[-1], b.shape[-1])) * np.sqrt(ra + rb)
    ratio = a.mean(axis=-1) / b.mean(axis=-1)
    return ratio * (1 - half), ratio * (1 + half)


def covered(low, high, truth):
    given = ~np.isnan(low)
    return float(np.mean(((low <= truth) & (truth <= high))[given])), int(given.sum())


def width_vs(low, high, ref_low, ref_high):
    # The typical (median) cell: a mean of widths at 2 repeats is one cell in a few hundred whose two
    # values differ 5x, where every positive interval must reach far up.
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.nanmedian((high - low) / (ref_high - ref_low)))


def calibrate(noise: str, n: int) -> dict:
    draw, mean = NOISES[noise]
    rng = np.random.default_rng([SEED, list(NOISES).index(noise), n])
    x = draw(rng, (TRIALS, n), 1.0)
    low, high = intervals.mean_interval(x, ALPHA)
    row = {"noise": noise, "n": n, "test": intervals.which_test(n, n, ALPHA)}
    row["mean_cov"], given = covered(low, high, mean(1.0))
    row["no_ci"] = 1 - given / TRIALS
    row["mean_w/t"] = width_vs(low, high, *intervals.t_interval(x, ALPHA))
    for scale, name in [(1.0, "ratio_cov_1"), (1.3, "ratio_cov_1.3")]:
        a, b = draw(rng, (TRIALS, n), scale), draw(rng, (TRIALS, n), 1.0)
        low, high = intervals.ratio_interval(a, b, ALPHA)
        row[name], cells = covered(low, high, mean(scale) / mean(1.0))
        given = min(given, cells)
        if scale == 1.0:
            row["ratio_w/t"] = width_vs(low, high, *delta_t_ratio(a, b, ALPHA))
            row["false_pos"] = float(np.mean(intervals.significant(intervals.p_value(a, b, ALPHA), low, high, ALPHA)))
    return {**row, "given": given}


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    frame = pd.DataFrame([calibrate(noise, n) for noise in NOISES for n in SIZES])
    print(f"\n{TRIALS} trials per row, alpha {ALPHA}; fails below coverage {COVERAGE_FLOOR} - "
          f"{margin(COVERAGE_FLOOR, TRIALS):.4f} or above false positives {ALPHA} + {margin(ALPHA, TRIALS):.4f}\n"
          "(two binomial standard errors; more where fewer cells have an interval)")
    shown = frame[["noise", "n", "mean_cov", "mean_w/t", "no_ci", "ratio_cov_1", "ratio_cov_1.3", "ratio_w/t",
                   "test", "false_pos"]]
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return frame


def test_mean_interval_covers(table):
    for _, row in table.iterrows():
        assert row["mean_cov"] >= COVERAGE_FLOOR - margin(COVERAGE_FLOOR, row["given"]), row


def test_ratio_interval_covers_at_1_and_at_1_3(table):
    for _, row in table.iterrows():
        floor = COVERAGE_FLOOR - margin(COVERAGE_FLOOR, row["given"])
        assert row["ratio_cov_1"] >= floor and row["ratio_cov_1.3"] >= floor, row


def test_verdicts_hold_their_level(table):
    for _, row in table[table.n >= 3].iterrows():
        assert row["false_pos"] <= ALPHA + margin(ALPHA, TRIALS), row


def test_intervals_are_not_absurdly_wide(table):
    # Against the plain t interval on the same data (the delta-method t interval for the ratio), which
    # does not cover skewed metrics at few repeats: some extra width is the price of covering them. At 2
    # repeats t reaches below 0 where a positive interval reaches far up, so 2 and 3 get more room.
    for _, row in table.iterrows():
        limit = {2: 6.0, 3: 2.0}.get(row["n"], 1.25)
        assert row["mean_w/t"] <= limit and row["ratio_w/t"] <= limit, row


def test_no_jump_between_9_and_10_repeats(table):
    # The old mean_ci switched to a bootstrap at 10 and its interval got narrower than 9's t interval,
    # with coverage falling from 0.95 to 0.89. Now one method: both cover, and 10 repeats narrow the
    # interval by about what t(0.975, 9) / t(0.975, 8) * sqrt(9 / 10) = 0.931 predicts.
    assert {stats.mean_ci(np.arange(1.0, n + 1))[2] for n in (9, 10)} == {"cox"}
    for noise in ("normal", "log-normal", "t3"):
        nine, ten = (table[(table.noise == noise) & (table.n == n)].iloc[0] for n in (9, 10))
        se_of_difference = math.sqrt(2 * 0.95 * 0.05 / TRIALS)
        assert abs(nine.mean_cov - ten.mean_cov) < 3 * se_of_difference
        draw, _ = NOISES[noise]
        rng = np.random.default_rng([SEED, 99])
        widths = [np.nanmean(np.subtract(*intervals.mean_interval(draw(rng, (TRIALS, n), 1.0), ALPHA)[::-1]))
                  for n in (9, 10)]
        assert 0.85 < widths[1] / widths[0] < 1.0, (noise, widths)


def test_every_n_from_2_to_30_covers():
    # The table samples n; the intervals (cheap, no test) are checked at every n in between as well.
    rows = []
    for noise in ("normal", "log-normal", "t3"):
        draw, mean = NOISES[noise]
        rng = np.random.default_rng([SEED, 30, list(NOISES).index(noise)])
        for n in range(2, 31):
            x, a13, a, b = (draw(rng, (TRIALS, n), scale) for scale in (1.0, 1.3, 1.0, 1.0))
            rows.append({"noise": noise, "n": n,
                         "mean_cov": covered(*intervals.mean_interval(x, ALPHA), mean(1.0))[0],
                         "ratio_cov_1": covered(*intervals.ratio_interval(a, b, ALPHA), 1.0)[0],
                         "ratio_cov_1.3": covered(*intervals.ratio_interval(a13, b, ALPHA), 1.3)[0]})
    sweep = pd.DataFrame(rows)
    print(f"\nevery n from 2 to 30, {TRIALS} trials each: the lowest coverage of each interval, and where")
    for noise, group in sweep.groupby("noise", sort=False):
        print(f"{noise:>10}  " + "  ".join(f"{c} {group[c].min():.3f} (n={group.loc[group[c].idxmin(), 'n']})"
                                          for c in ("mean_cov", "ratio_cov_1", "ratio_cov_1.3")))
    floor = COVERAGE_FLOOR - margin(COVERAGE_FLOOR, TRIALS)
    assert (sweep[["mean_cov", "ratio_cov_1", "ratio_cov_1.3"]] >= floor).all().all(), sweep


def test_the_simulation_runs_the_public_code():
    rng = np.random.default_rng([SEED, 7])
    for noise, n in [(k, n) for k in NOISES for n in (2, 3, 4, 12)]:
        draw, _ = NOISES[noise]
        a, b = draw(rng, (3, n), 1.2), draw(rng, (3, n), 1.0)
        low, high = intervals.ratio_interval(a, b, ALPHA)
        p = intervals.p_value(a, b, ALPHA)
        mean_low, _ = intervals.mean_interval(a, ALPHA)
        for i in range(3):
            assert stats.mean_ci(a[i])[0] == pytest.approx(mean_low[i], nan_ok=True)
            assert stats.ratio_ci(a[i], b[i])[1:] == pytest.approx((low[i], high[i]), nan_ok=True)
            assert stats.test_difference(a[i], b[i])[1] == pytest.approx(p[i], nan_ok=True)
            runs = pd.DataFrame({"server": ["a"] * n + ["b"] * n, "rps": [*a[i], *b[i]], "status": "ok",
                                 "scenario": "hello"})
            verdict = verdicts.verdicts(runs, baseline="b").iloc[0]
            assert verdict["significant"] == bool(intervals.significant(p[i], low[i], high[i], ALPHA))


# --- two levels: forks (server processes) x windows (iterations within one) ---------------------------------
#
# A fork's windows share its JIT's and heap's luck: forks of one server here lay 2x apart while one warm
# fork's 5 s windows varied about +/-25%. The model: window j of fork i is mu * F_i * W_ij, with F_i the
# fork effect and W_ij the window noise, both of mean 1. The rules take fork means as their unit, so the
# truth of a ratio is mu_a / mu_b whatever the design. Fork effects: log-normal with sd `between` on the
# logs, or "bimodal" (half the forks at 1x, half at 2x, rescaled to mean 1, as the Tomcat forks 9.8k,
# 11.3k and 20.2k looked). Window noise: log-normal with sd `within`.

TWO_LEVEL_TRIALS = 3000
#: (forks a side, windows a fork)
DESIGNS = ((3, 1), (3, 5), (5, 3), (10, 2), (5, 10), (20, 1))
#: (name, fork effect sd or "bimodal", window sd): the ratios of the two noises, from none between forks to
#: forks dominating, and the bimodal forks seen here.
MIXES = (("windows only", 0.0, 0.10), ("equal", 0.10, 0.10), ("forks 3x", 0.15, 0.05),
         ("windows 4x", 0.05, 0.20), ("bimodal forks", "bimodal", 0.15))


def draw_two_level(rng, trials: int, forks: int, windows: int, between, within: float, scale: float = 1.0):
    """(trials, forks) fork means of ``windows`` windows each, and the raw (trials, forks, windows)."""
    if between == "bimodal":
        effect = np.where(rng.random((trials, forks, 1)) < 0.5, 1.0, 2.0) / 1.5
    else:
        effect = np.exp(between * rng.standard_normal((trials, forks, 1)) - between ** 2 / 2)
    noise = np.exp(within * rng.standard_normal((trials, forks, windows)) - within ** 2 / 2)
    raw = scale * 1e4 * effect * noise
    return raw.mean(axis=-1), raw


def calibrate_two_level(mix: tuple, forks: int, windows: int) -> dict:
    name, between, within = mix
    rng = np.random.default_rng([SEED, 2, MIXES.index(mix), forks, windows])
    row = {"mix": name, "forks": forks, "windows": windows}
    for scale, column in ((1.0, "cov_1"), (1.3, "cov_1.3")):
        a, _ = draw_two_level(rng, TWO_LEVEL_TRIALS, forks, windows, between, within, scale)
        b, _ = draw_two_level(rng, TWO_LEVEL_TRIALS, forks, windows, between, within)
        low, high = intervals.ratio_interval(a, b, ALPHA)
        row[column], row["given"] = covered(low, high, scale)
        if scale == 1.0:
            p = intervals.p_value(a, b, ALPHA)
            row["false_pos"] = float(np.mean(intervals.significant(p, low, high, ALPHA)))
            row["test"] = intervals.which_test(forks, forks, ALPHA)
    return row


@pytest.fixture(scope="module")
def two_level() -> pd.DataFrame:
    frame = pd.DataFrame([calibrate_two_level(mix, k, m) for mix in MIXES for k, m in DESIGNS])
    print(f"\ntwo levels, {TWO_LEVEL_TRIALS} trials per row: forks x windows a side, fork means as the unit")
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return frame


def test_two_level_ratio_intervals_cover_at_every_design(two_level):
    for _, row in two_level[two_level.forks >= 3].iterrows():
        floor = COVERAGE_FLOOR - margin(COVERAGE_FLOOR, row["given"])
        assert row["cov_1"] >= floor and row["cov_1.3"] >= floor, row


def test_two_level_verdicts_hold_their_level_at_every_design(two_level):
    for _, row in two_level.iterrows():
        assert row["false_pos"] <= ALPHA + margin(ALPHA, TWO_LEVEL_TRIALS), row


def test_pooling_the_windows_as_repeats_would_not_hold_its_level():
    # What JMH's pooling of iterations does: with forks 3x noisier than windows, 3 forks x 5 windows taken
    # as 15 independent repeats calls a difference that is not there far more often than alpha. The
    # same data as fork means holds it (the test above): this is why the unit is the fork.
    rng = np.random.default_rng([SEED, 3])
    _, a = draw_two_level(rng, TWO_LEVEL_TRIALS, 3, 5, 0.15, 0.05)
    _, b = draw_two_level(rng, TWO_LEVEL_TRIALS, 3, 5, 0.15, 0.05)
    a, b = a.reshape(TWO_LEVEL_TRIALS, -1), b.reshape(TWO_LEVEL_TRIALS, -1)
    low, high = intervals.ratio_interval(a, b, ALPHA)
    pooled = float(np.mean(intervals.significant(intervals.p_value(a, b, ALPHA), low, high, ALPHA)))
    assert pooled > 3 * ALPHA, pooled


def test_variance_components_find_the_truth():
    # The one-way random-effects estimates of stats.components, averaged over many cells, land on the
    # simulated sds (log scale); the between estimate is slightly biased low by its truncation at 0.
    rng = np.random.default_rng([SEED, 4])
    for between, within in ((0.15, 0.05), (0.05, 0.20), (0.10, 0.10)):
        found = []
        for _ in range(300):
            _, raw = draw_two_level(rng, 1, 8, 4, between, within)
            forks = np.repeat(np.arange(8), 4)
            found.append(stats.components(raw.ravel(), forks))
        assert np.mean([f["within_cv"] for f in found]) == pytest.approx(within, rel=0.08)
        assert np.mean([f["between_cv"] for f in found]) == pytest.approx(between, rel=0.2)
        assert all(f["forks"] == 8 and f["windows"] == 32 for f in found)


def test_the_frame_rules_take_fork_means():
    # stats.verdicts and stats.summary over windows stored as runs (fork, iteration) give what the kernels
    # give on the fork means: the two-level calibration above is the calibration of the public code.
    rng = np.random.default_rng([SEED, 5])
    for forks, windows in ((3, 4), (4, 2), (6, 3)):
        means_a, a = draw_two_level(rng, 1, forks, windows, 0.1, 0.1, 1.2)
        means_b, b = draw_two_level(rng, 1, forks, windows, 0.1, 0.1)
        rows = [{"server": server, "rps": v, "status": "ok", "scenario": "hello", "repeat": i + 1,
                 "window": j + 1, "fork": f"{server}-{i}", "id": f"{server}-{i}-{j}"}
                for server, raw in (("a", a[0]), ("b", b[0])) for i in range(forks) for j, v in enumerate(raw[i])]
        runs = pd.DataFrame(rows)
        low, high = intervals.ratio_interval(means_a, means_b, ALPHA)
        p = intervals.p_value(means_a, means_b, ALPHA)
        verdict = verdicts.verdicts(runs, baseline="b").iloc[0]
        assert verdict["change_low"] + 1 == pytest.approx(low[0]) and verdict["p_value"] == pytest.approx(p[0])
        summary = stats.summary(runs, metrics=("rps",), baseline="b").set_index("server")
        assert summary.loc["a", "n"] == forks and summary.loc["a", "windows"] == forks * windows
        assert summary.loc["a", "ratio_low"] == pytest.approx(low[0])


def test_merged_tails_resample_forks_then_windows():
    # Latencies whose scale differs from fork to fork (sd 0.3 on the logs) and little between one fork's
    # windows. Resampling windows as if independent ignores the fork effect and its interval of the merged
    # p99 covers the truth far less often than the two-level draw, which is also wider.
    from benchlab.analysis.tails import resampled
    from benchlab.store.histogram import Histogram

    rng = np.random.default_rng([SEED, 6])
    truth = np.quantile(np.exp(0.3 * rng.standard_normal(400_000) + 0.2 * rng.standard_normal(400_000)) * 1e-3, 0.99)
    hits = {"two-level": 0, "windows": 0}
    widths = {"two-level": [], "windows": []}
    trials, forks, windows = 150, 8, 3
    for trial in range(trials):
        effects = np.exp(0.3 * rng.standard_normal(forks))
        hists = [Histogram.of(effects[f] * np.exp(0.2 * rng.standard_normal(1000)) * 1e-3)
                 for f in range(forks) for _ in range(windows)]
        keys = [f for f in range(forks) for _ in range(windows)]
        for name, given in (("two-level", keys), ("windows", None)):
            _, draws = resampled(hists, [99], resamples=400, seed=trial, forks=given)
            low, high = np.quantile(draws[:, 0], [0.025, 0.975])
            hits[name] += low <= truth <= high
            widths[name].append(high - low)
    # Measured: two-level 0.41, windows 0.31 of 150. Neither reaches 0.95: a percentile bootstrap of a
    # p99 from 8 forks undercovers, as a tail that rests on the slowest one or two forks cannot be
    # resampled from 8 (docs/statistics.md says so beside the merged intervals). Two levels are still
    # the honest draw: wider, and closer to the truth more often.
    print(f"\nmerged p99 of {forks} forks x {windows} windows, {trials} trials: coverage two-level "
          f"{hits['two-level'] / trials:.2f}, windows as independent {hits['windows'] / trials:.2f}")
    assert np.median(widths["two-level"]) > 1.5 * np.median(widths["windows"])
    assert hits["two-level"] > hits["windows"] + 0.05 * trials, hits


# --- rounds: forks of every server run one after another share the machine of their round ------------------
#
# Measured here (81 forks, 27 rounds of Tomcat, Jetty and Undertow): a round's three forks rose and fell
# together (round 7 served 20.2k / 16.0k / 19.7k req/s, round 10 30.4k / 29.6k / 37.0k), so the forks' 17.8%
# spread was mostly the round's, and the ratio within a round varied 5.4% at 8 windows. The model: window j of
# server s's fork in round r is mu_s * R_r * F_sr * W_srj, R_r the round's effect shared by both servers, F_sr
# the fork's own and W_srj the window's, each of mean 1 (log-normal, or "bimodal" forks). The rules pair the
# rounds (stats.rounds); the truth of the ratio of means is mu_a / mu_b. Mixes: this machine's (round 0.15,
# fork 0.03, window 0.10); no round effect at all (pairing only costs degrees of freedom); rounds dominating;
# one server's forks 3x noisier than the other's (the Cox correction's case); skewed rounds; bimodal forks.

PAIRED_TRIALS = 3000
#: (rounds, windows a fork). From 6: cells.rounds pairs only where the signed rank can reach alpha (pairs.reach),
#: as a paired t on 3 rounds called 7.6% of this machine's real A/A comparisons significant; fewer are judged apart.
ROUND_DESIGNS = ((6, 1), (6, 8), (7, 4), (8, 8), (12, 4), (20, 1), (30, 2))
#: (name, round sd, fork sd of a, fork sd of b or "bimodal", window sd)
ROUND_MIXES = (("this machine", 0.15, 0.03, 0.03, 0.10), ("no round effect", 0.0, 0.10, 0.10, 0.10),
               ("rounds dominate", 0.30, 0.05, 0.05, 0.05), ("a 3x noisier", 0.15, 0.15, 0.05, 0.05),
               ("skewed rounds", 0.50, 0.05, 0.05, 0.10), ("bimodal forks", 0.15, "bimodal", "bimodal", 0.10))


def draw_rounds(rng, trials: int, rounds: int, windows: int, mix: tuple, scale: float = 1.0):
    """Fork means (trials, rounds) of a and of b, paired by round, and a's raw (trials, rounds, windows)."""
    _, round_sd, fork_a, fork_b, window_sd = mix
    shared = np.exp(round_sd * rng.standard_normal((trials, rounds, 1)) - round_sd ** 2 / 2)

    def side(fork_sd, mu):
        if fork_sd == "bimodal":
            own = np.where(rng.random((trials, rounds, 1)) < 0.5, 1.0, 2.0) / 1.5
        else:
            own = np.exp(fork_sd * rng.standard_normal((trials, rounds, 1)) - fork_sd ** 2 / 2)
        return mu * 1e4 * shared * own * np.exp(window_sd * rng.standard_normal((trials, rounds, windows))
                                                - window_sd ** 2 / 2)
    a, b = side(fork_a, scale), side(fork_b, 1.0)
    return a.mean(axis=-1), b.mean(axis=-1), a


def calibrate_rounds(mix: tuple, rounds: int, windows: int) -> dict:
    rng = np.random.default_rng([SEED, 7, ROUND_MIXES.index(mix), rounds, windows])
    row = {"mix": mix[0], "rounds": rounds, "windows": windows, "test": pairs.test_name(rounds, ALPHA)}
    for scale, column in ((1.0, "cov_1"), (1.3, "cov_1.3")):
        a, b, _ = draw_rounds(rng, PAIRED_TRIALS, rounds, windows, mix, scale)
        low, high = pairs.ratio_interval(a, b, ALPHA)
        row[column], row["given"] = covered(low, high, scale)
        if scale == 1.0:
            p = pairs.p_value(a, b, ALPHA)
            row["false_pos"] = float(np.mean(intervals.significant(p, low, high, ALPHA)))
            apart_low, apart_high = intervals.ratio_interval(a, b, ALPHA)
            # the median width paired over the width judged apart, on the same data
            row["width_vs_apart"] = float(np.median((high - low) / (apart_high - apart_low)))
    return row


@pytest.fixture(scope="module")
def paired() -> pd.DataFrame:
    frame = pd.DataFrame([calibrate_rounds(mix, k, m) for mix in ROUND_MIXES for k, m in ROUND_DESIGNS])
    print(f"\nrounds, {PAIRED_TRIALS} trials per row: fork means paired by round")
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return frame


def test_paired_ratio_intervals_cover_at_every_design(paired):
    for _, row in paired.iterrows():
        floor = COVERAGE_FLOOR - margin(COVERAGE_FLOOR, row["given"])
        assert row["cov_1"] >= floor and row["cov_1.3"] >= floor, row


def test_paired_verdicts_hold_their_level_at_every_design(paired):
    for _, row in paired.iterrows():
        assert row["false_pos"] <= ALPHA + margin(ALPHA, PAIRED_TRIALS), row


def test_pairing_narrows_the_interval_where_rounds_move_together(paired):
    # What pairing is for: on this machine's mix the paired interval is a fraction of the one judged apart;
    # with no round effect it costs only the degrees of freedom it gives up (wider at 6 than at 20).
    mine = paired[paired.mix == "this machine"].set_index(["rounds", "windows"])["width_vs_apart"]
    assert mine.loc[(8, 8)] < 0.5 and mine.loc[(20, 1)] < 0.6, mine
    none = paired[paired.mix == "no round effect"].set_index(["rounds", "windows"])["width_vs_apart"]
    assert 1.0 < none.loc[(20, 1)] < 1.1 and none.loc[(6, 1)] > none.loc[(20, 1)], none


def test_the_signed_rank_p_is_exact():
    # Every sign flip up to 14 pairs: the same p as scipy's exact Wilcoxon where it has no ties or zeros, and
    # a zero difference (Pratt) moves no sum: [0, 1, 2, 3, 4, 5, 6] has 2 of 64 flips at least as far.
    rng = np.random.default_rng([SEED, 8])
    d = rng.normal(0.4, 1.0, (50, 9))
    ours = pairs.p_value(np.exp(d), np.ones_like(d), ALPHA)
    theirs = [scipy_stats.wilcoxon(x, method="exact").pvalue for x in d]
    assert ours == pytest.approx(theirs, rel=1e-9)
    zero = np.exp(np.array([[0.0, 1, 2, 3, 4, 5, 6]]))
    assert pairs.p_value(zero, np.ones_like(zero), ALPHA)[0] == pytest.approx(2 / 64)
    # beyond 14 pairs, 10,000 random flips: within four of their standard errors of the exact p
    d = rng.normal(0.3, 1.0, (20, 20))
    ours = pairs.p_value(np.exp(d), np.ones_like(d), ALPHA)
    theirs = np.array([scipy_stats.wilcoxon(x, method="exact").pvalue for x in d])
    assert np.all(np.abs(ours - theirs) <= 4 * np.sqrt(theirs * (1 - theirs) / 10_000) + 1e-4), (ours, theirs)


def test_fewer_rounds_than_the_signed_rank_needs_are_judged_apart():
    forks = pd.DataFrame({"suite": "s", "repeat": range(1, 6), "rps": [110.0, 120, 100, 105, 115]})
    base = pd.DataFrame({"suite": "s", "repeat": range(1, 6), "rps": [100.0, 108, 92, 96, 104]})
    assert cells.rounds(forks, base, "rps")[2] is False and pairs.reach(0.05) == 6
    six = [pd.concat([side, side.iloc[:1].assign(repeat=6)]) for side in (forks, base)]
    assert cells.rounds(*six, "rps")[2] is True and cells.rounds(*six, "rps", alpha=0.01)[2] is False
    twice = pd.concat([forks, forks.assign(repeat=6)])  # two forks of one side in round 6: not rounds
    assert cells.rounds(twice, six[1], "rps")[2] is False


def test_the_frame_rules_pair_forks_by_round():
    # stats.verdicts and stats.summary over a compare()'s windows (suite, repeat, fork, iteration) pair each
    # server's fork with the baseline's of the same round, as the kernels above; a round whose baseline fork
    # failed is left out (7 rounds, 6 pairs); forks of two suites (not run in rounds together) are judged apart.
    rng = np.random.default_rng([SEED, 9])
    rounds, windows = 7, 3
    mix = ROUND_MIXES[0]
    means_a, means_b, _ = draw_rounds(rng, 1, rounds, windows, mix, 1.1)
    rows = [{"server": server, "rps": v, "status": "ok", "scenario": "hello", "repeat": r + 1, "suite": "s1",
             "window": j + 1, "fork": f"{server}-{r}", "id": f"{server}-{r}-{j}"}
            for server, means in (("a", means_a[0]), ("b", means_b[0])) for r in range(rounds)
            for j, v in enumerate([means[r]] * windows)]
    runs = pd.DataFrame(rows)
    runs.loc[(runs.server == "b") & (runs.repeat == 2), "status"] = "failed"
    kept = np.arange(rounds) != 1
    low, high = pairs.ratio_interval(means_a[:, kept], means_b[:, kept], ALPHA)
    p = pairs.p_value(means_a[:, kept], means_b[:, kept], ALPHA)
    verdict = verdicts.verdicts(runs, baseline="b").iloc[0]
    assert verdict["change_low"] + 1 == pytest.approx(low[0]) and verdict["p_value"] == pytest.approx(p[0])
    assert verdict["test"] == "Wilcoxon signed-rank"
    assert verdict["significant"] or "not distinguishable at 6 rounds (Wilcoxon" in verdict["verdict"], verdict
    summary = stats.summary(runs, metrics=("rps",), baseline="b").set_index("server")
    assert summary.loc["a", "ratio_low"] == pytest.approx(low[0]) and summary.loc["a", "ratio_method"] == "cox paired"
    apart = runs.assign(suite=np.where(runs.server == "a", "s1", "s2"))
    verdict = verdicts.verdicts(apart, baseline="b").iloc[0]
    low, high = intervals.ratio_interval(means_a, means_b[:, kept], ALPHA)
    assert verdict["change_low"] + 1 == pytest.approx(low[0]) and verdict["test"] == "Mann-Whitney"
    assert "not distinguishable at 6 repeats" in verdict["verdict"] or verdict["significant"]
