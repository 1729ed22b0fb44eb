"""A/A on this machine: one server under two names, interleaved, judged by benchlab's own verdict rule.

``spring-tomcat`` and ``spring-tomcat+threads200`` are the same server: Tomcat's pool is 200 threads by
default and the variant sets it to 200 (each run checks through /info that the pool is what was asked).
So every verdict that calls a difference significant is a false positive.

Twenty independent A/A comparisons of 3 forks a side would take 120 forks, about five hours here (a JVM
warmed by ``warmup="auto"`` on one core costs two to three minutes). So this runs ``--forks`` forks a name,
``--windows`` windows each, and judges:

1. the two names against each other, as ``compare()`` does (one comparison);
2. many random splits of all the forks into two sides of k (3, the default repeats, and half of them):
   under A/A any labelling is as good as the names, so the share of splits the rule calls significant is its
   false-positive rate on this machine's real fork-to-fork and window-to-window noise. The splits share
   forks, so they are not independent: the rate's 95% interval is a bootstrap over forks (the forks drawn
   with replacement, the splits drawn again), which carries that dependence, not a binomial one;
3. the same splits with every window taken as an independent repeat (JMH's pooling of iterations), to show
   what the fork as the unit buys;
4. the minimum detectable effect: the smallest change, one side's fork means times 1 + d, that the rule
   calls significant in 80% of the splits (rps, and p99 with 1 + d as the slowdown);
5. the same by round, as ``compare()`` judges forks that ran in rounds (benchlab.analysis.pairs, from 6 rounds):
   each split a random k of the rounds, each round's two forks in a random order, with a bootstrap over rounds
   for the interval; and with the names in their places in the round, for a fork's place (no interval: see
   :func:`round_rate`). Random splits of forks would pair forks of different rounds, which the rule never does.

6. with ``--history DIR ...`` (folders of this machine's stored comparisons, the A/A's own left out), the same
   round splits at 2, 3 and 5 rounds judged as ``compare()`` judges them with borrowing on
   (:mod:`benchlab.analysis.borrow`: the fork variance squeezed toward the history's prior, a moderated t; where
   nothing is borrowed, Welch's t on the forks apart, as without it), the share of splits that borrowed, and the
   smallest change found in 80% of the splits at the rounds a 10-minute budget buys here.

Goal: false positives at most 0.05 for rps and for p99, with their intervals.

    python3 benchmarks/aa.py [--forks 6] [--windows 4] [--duration 5s] [--interleave windows] [--results DIR]
                             [--splits 2000] [--retakes 2] [--history DIR ...]

Only the windows compare() itself would use enter the figures (benchlab.analysis.validity): a window flagged
for a disturbance is measured again in its fork (``--retakes``) and left out, as is any still flagged.
"""

from __future__ import annotations

import argparse
import functools
import math
import tempfile
import time

import numpy as np

import benchlab
from benchlab.analysis import borrow, cells, history, intervals, pairs, stats, validity
from benchlab.store.results import frame as runs_frame

NAMES = ("spring-tomcat", "spring-tomcat+threads200")
ALPHA = 0.05
GOAL = 0.05
POWER = 0.8


def split_rate(values: np.ndarray, k: int, splits: int, rng, *, scale: float = 1.0) -> float:
    """The share of ``splits`` random disjoint pairs of sides (k forks each) of ``values`` (forks x windows;
    a fork's windows averaged) that the verdict rule calls significant, side A multiplied by ``scale``."""
    means = np.nanmean(values, axis=1)
    order = np.argsort(rng.random((splits, len(means))), axis=1)
    a, b = means[order[:, :k]] * scale, means[order[:, k:2 * k]]
    low, high = intervals.ratio_interval(a, b, ALPHA)
    return float(np.mean(intervals.significant(intervals.p_value(a, b, ALPHA), low, high, ALPHA)))


def pooled_rate(values: np.ndarray, k: int, splits: int, rng) -> float:
    """As :func:`split_rate`, with every window of the chosen forks taken as an independent repeat."""
    order = np.argsort(rng.random((splits, len(values))), axis=1)
    a = values[order[:, :k]].reshape(splits, -1)
    b = values[order[:, k:2 * k]].reshape(splits, -1)
    low, high = intervals.ratio_interval(a, b, ALPHA)
    return float(np.mean(intervals.significant(intervals.p_value(a, b, ALPHA), low, high, ALPHA)))


def round_rate(rounds: np.ndarray, k: int, splits: int, rng, *, scale: float = 1.0, places: bool = False) -> float:
    """The share of ``splits`` random choices of k of ``rounds`` (rounds x 2 fork means, the two names) that the
    paired rule calls significant, side A multiplied by ``scale``. Each round's two forks in a random order (under
    A/A either name is either fork): every round's log ratio is then symmetric, the sign flips' own assumption,
    so this measures the rule on the real shape and spread of the rounds' log ratios, and a bootstrap over rounds
    stays an A/A. ``places``: the names in their places in the round (the first always started first), which
    would show a fork's place if it mattered; a bootstrap of it would not be an A/A (a resample's rounds need
    not centre on 0), so it has no interval."""
    a, b = _sides(rounds, k, splits, rng, scale=scale, places=places)
    low, high = pairs.ratio_interval(a, b, ALPHA)
    return float(np.mean(intervals.significant(pairs.p_value(a, b, ALPHA), low, high, ALPHA)))


def _sides(rounds: np.ndarray, k: int, splits: int, rng, *, scale: float = 1.0, places: bool = False):
    """(a, b), splits x k fork means: k random rounds a split, each round's two forks in a random order (unless
    ``places``), side A multiplied by ``scale``."""
    chosen = rounds[np.argsort(rng.random((splits, len(rounds))), axis=1)[:, :k]]
    flip = np.zeros((splits, k), dtype=bool) if places else rng.random((splits, k)) < 0.5
    return np.where(flip, chosen[..., 1], chosen[..., 0]) * scale, np.where(flip, chosen[..., 0], chosen[..., 1])


def borrowed_rate(rounds: np.ndarray, k: int, splits: int, rng, *, prior, scale: float = 1.0,
                  lent: list | None = None) -> float:
    """As :func:`round_rate` (each round's forks in a random order), each split judged as ``compare()`` judges k
    rounds with borrowing on: the moderated t with ``prior`` (d0, s0^2, the history's degrees of freedom) where
    :func:`benchlab.analysis.borrow.judge` borrows, else Welch's t on the forks apart, as ``compare()`` judges
    fewer than :func:`benchlab.analysis.pairs.reach` rounds without it. ``lent`` gets the share that borrowed."""
    a, b = _sides(rounds, k, splits, rng, scale=scale)
    out = borrow.judge(np.log(np.stack([a, b], axis=-2)), 0, 1, prior, paired=True, alpha=ALPHA)
    used = out["borrowed"] & np.isfinite(out["low"]) & np.isfinite(out["high"])
    moderated = intervals.significant(out["p"], out["low"], out["high"], ALPHA)
    low, high = intervals.ratio_interval(a, b, ALPHA)
    welch = intervals.significant(intervals.p_value(a, b, ALPHA), low, high, ALPHA)
    if lent is not None:
        lent.append(float(np.mean(used)))
    return float(np.mean(np.where(used, moderated, welch)))


def priors(paths: list[str], records) -> dict:
    """Per metric, the history's prior of a fork variance by round (:class:`benchlab.analysis.history.History`) for
    the machine of the A/A's ``records``, its own sitting left out, at the A/A's load point where the history holds
    3 variances there (as compare() judges); None where it holds fewer than 3 anywhere."""
    named = {history.machine(r) for r in records} - {None}
    found = history.History(history.folders(paths), machine=named.pop() if named else None,
                            exclude={history.sitting(r) for r in records})
    point = cells.load_point(runs_frame(records))
    return {metric: found.prior(metric, True, point) for metric in ("rps", "p99")}


def round_seconds(frame) -> float:
    """What a round of two forks took, the median over the rounds: what its forks cost before their first windows
    (``fork_s``: started, warmed and resumed in turn) and the span of its windows. Read from the runs, so a resumed
    sitting says it as well as one measured now."""
    import pandas as pd

    runs = frame.assign(_start=pd.to_datetime(frame["started_at"]), _end=pd.to_datetime(frame["finished_at"]))
    spans = [(group["_end"].max() - group["_start"].min()).total_seconds()
             + float(group.loc[group["window"] == 1, "fork_s"].sum()) for _, group in runs.groupby("repeat")]
    return float(np.median(spans))


def bootstrap(values: np.ndarray, k: int, splits: int, rng, rate=split_rate, draws: int = 200) -> tuple[float, float]:
    """The 95% interval of ``rate`` (:func:`split_rate` or :func:`round_rate`) over forks or rounds drawn with
    replacement."""
    rates = []
    for _ in range(draws):
        picked = values[rng.integers(0, len(values), len(values))]
        rates.append(rate(picked, k, splits // 4, rng))
    low, high = np.quantile(rates, [0.025, 0.975])
    return float(low), float(high)


def detectable(values: np.ndarray, k: int, splits: int, rng, rate=split_rate) -> float:
    """The smallest d in 1%..200% with the rule calling a (1 + d) change significant in POWER of the splits."""
    for d in np.concatenate([np.arange(0.01, 0.30, 0.01), np.arange(0.30, 2.01, 0.05)]):
        if rate(values, k, splits, rng, scale=1 + d) >= POWER:
            return float(d)
    return math.inf


def kept(frame) -> str:
    """What the windows came to: measured, retaken (flagged for a disturbance, measured again, left out) and
    left out for another validity flag; the statistics below use the rest, as compare() does."""
    retaken = int((frame["status"] == "retaken").sum())
    ok = cells.ok(frame)
    clean, left = validity.usable(frame)
    flags: dict[str, int] = {}
    for entry in left.values():
        for flag, count in entry["flags"].items():
            flags[flag] = flags.get(flag, 0) + count
    named = ", ".join(f"{flag} {count}" for flag, count in flags.items()) or "none"
    return (f"{len(frame)} windows measured, {retaken} retaken, {len(ok) - len(clean)} left out by their flags "
            f"({named}), {len(clean)} used")


def by_round(frame, metric: str) -> np.ndarray:
    """rounds x 2: each round's fork means of ``metric`` for the two names, the rounds where both finished."""
    forks = cells.forks(validity.usable(frame)[0])
    table = forks.pivot_table(index=["suite", "repeat"], columns="server", values=metric, aggfunc="mean")
    return table.reindex(columns=list(NAMES)).dropna().to_numpy(dtype=float)


def by_fork(frame, metric: str) -> np.ndarray:
    """forks x windows of ``metric`` (NaN where a fork has fewer windows)."""
    ok = validity.usable(frame)[0].assign(_fork=lambda f: cells.fork_keys(f))
    groups = [g.sort_values("window")[metric].to_numpy(dtype=float) for _, g in ok.groupby("_fork", sort=False)]
    width = max(len(g) for g in groups)
    return np.array([np.pad(g, (0, width - len(g)), constant_values=np.nan) for g in groups])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forks", type=int, default=6, help="forks a name (default 6)")
    parser.add_argument("--windows", type=int, default=4, help="windows a fork (default 4)")
    parser.add_argument("--duration", default="5s")
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--splits", type=int, default=2000)
    parser.add_argument("--retakes", type=int, default=2,
                        help="windows flagged for a disturbance measured again, at most (compare's retakes; default 2)")
    parser.add_argument("--results", help="a results folder: resumed if it holds some of the runs")
    parser.add_argument("--interleave", default="windows", choices=("windows", "forks"),
                        help="the order of the windows (compare's interleave; default windows)")
    parser.add_argument("--history", nargs="*", default=[],
                        help="folders of this machine's stored comparisons: judge the splits with borrowing on too")
    args = parser.parse_args()

    results = args.results or tempfile.mkdtemp(prefix="benchlab-aa-")
    began = time.monotonic()
    suite = benchlab.compare(list(NAMES), repeats=args.forks, windows=args.windows, duration=args.duration,
                             interleave=args.interleave, connections=[args.connections], warmup="auto",
                             retakes=args.retakes, results_dir=results, progress=False)
    took = time.monotonic() - began
    print(f"{suite!r}: {args.forks} forks a name x {args.windows} windows of {args.duration}, interleave "
          f"{args.interleave}, c={args.connections}, warm-up auto, retakes {args.retakes}; {took / 60:.0f} min here; "
          f"stored in {results}")
    print("nothing else ran on the machine meanwhile (server on core 0, wrk on core 1)")
    rounds = suite.runs["repeat"].nunique()
    print(f"{took / 60 / max(rounds, 1):.1f} min a round of two forks; " + kept(suite.runs) + "\n")
    for metric in ("rps", "p99"):
        print("  " + suite.verdicts(metric)["verdict"].iloc[0])
    rng = np.random.default_rng(20261201)
    print()
    lent_priors = priors(args.history, suite.records) if args.history else {}
    budget_rounds = max(2, int(600 // round_seconds(suite.runs)))
    for metric in ("rps", "p99"):
        values = by_fork(suite.runs, metric)  # the rule is two-sided on the logs: a p99 slowdown is 1 + d
        parts = stats.components(values.ravel()[~np.isnan(values.ravel())],
                                 np.repeat(np.arange(len(values)), values.shape[1])[~np.isnan(values.ravel())])
        print(f"{metric}: {len(values)} forks, {parts['windows']} windows; between forks {parts['between_cv']:.1%}, "
              f"within a fork {parts['within_cv']:.1%} (log-scale sd, stats.components)")
        for k in sorted({3, len(values) // 2}):
            rate = split_rate(values, k, args.splits, rng)
            low, high = bootstrap(values, k, args.splits, rng)
            pooled = pooled_rate(values, k, args.splits, rng)
            mde = detectable(values, k, args.splits, rng)
            verdict = "met" if high <= GOAL else ("missed" if low > GOAL else "not decided")
            print(f"  {k} forks a side, {args.splits} splits: false positives {rate:.3f} [95% {low:.3f}, {high:.3f}]"
                  f" (goal <= {GOAL}: {verdict}); windows pooled as repeats {pooled:.3f}; "
                  f"detects {mde:+.0%} in {POWER:.0%} of splits")
        paired = by_round(suite.runs, metric)
        print(f"  by round, as compare() judges forks that ran in rounds: {len(paired)} rounds")
        for k in sorted({pairs.reach(ALPHA), len(paired) // 2}):  # compare() judges fewer rounds apart
            if k > len(paired) or k < pairs.reach(ALPHA):
                continue
            rate = round_rate(paired, k, args.splits, rng)
            low, high = bootstrap(paired, k, args.splits, rng, rate=round_rate)
            mde = detectable(paired, k, args.splits, rng, rate=round_rate)
            placed = round_rate(paired, k, args.splits, rng, places=True)
            verdict = "met" if high <= GOAL else ("missed" if low > GOAL else "not decided")
            print(f"  {k} rounds ({pairs.test_name(k, ALPHA)}), {args.splits} splits: false positives {rate:.3f} "
                  f"[95% {low:.3f}, {high:.3f}] (goal <= {GOAL}: {verdict}); names in their places {placed:.3f}; "
                  f"detects {mde:+.0%} in {POWER:.0%} of splits")
        if args.history:
            _borrowing(paired, lent_priors.get(metric), metric, args.splits, budget_rounds, rng)
        print()


def _borrowing(paired: np.ndarray, prior, metric: str, splits: int, budget_rounds: int, rng) -> None:
    """The lines of item 6: the round splits judged with borrowing on."""
    if prior is None:
        print(f"  with borrowing: the history holds fewer than {borrow.MIN_VARIANCES} {metric} variances: no prior")
        return
    lent_prior = (prior.d0, prior.s02, prior.df)
    print(f"  with borrowing ({metric} prior from {prior.count} stored variances, {prior.forks} forks {prior.scope}: "
          f"d0 = {prior.d0:.3g}, s0 = {np.sqrt(prior.s02):.2%}):")
    if budget_rounds >= pairs.reach(ALPHA):  # compare() judges these by the signed rank, borrowing nothing
        print(f"    a 10-minute budget buys {budget_rounds} rounds here: judged by the signed rank, as above")
    judged = functools.partial(borrowed_rate, prior=lent_prior)
    for k in sorted({2, 3, 5, budget_rounds} & set(range(2, min(len(paired) + 1, pairs.reach(ALPHA))))):
        lent: list = []
        rate = borrowed_rate(paired, k, splits, rng, prior=lent_prior, lent=lent)
        low, high = bootstrap(paired, k, splits, rng, rate=judged)
        mde = detectable(paired, k, splits, rng, rate=judged)
        verdict = "met" if high <= GOAL else ("missed" if low > GOAL else "not decided")
        budget = " (what a 10-minute budget buys here)" if k == budget_rounds else ""
        print(f"    {k} rounds{budget}: false positives {rate:.3f} [95% {low:.3f}, {high:.3f}] (goal <= {GOAL}: "
              f"{verdict}); {lent[0]:.0%} of splits borrowed; detects {mde:+.0%} in {POWER:.0%} of splits")


if __name__ == "__main__":
    main()
