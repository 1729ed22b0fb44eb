"""How long does a compare take beyond its load? Server startup with and without CDS, then wall against load.

First, a built-in server's startup on one pinned core, from its Class Data Sharing archive and from the
plain jar, measured side by side in pairs whose order alternates (so a machine that slows down or speeds
up during the measurement weighs on both alike), the ratio taken pair by pair. Goal: startup with CDS at
most 0.5x without.

Then a whole compare: wall time against pure load time (warm-up + measure). The difference is what
starting, verifying, stopping and storing cost per run. Goal: at most 1.25x.

With ``--verdict``: the wall time a verdict costs. The three servlet servers are compared with ``--repeats``
forks each of ``--windows`` windows (warm-up auto), once, their windows ordered as ``--interleave`` says
(``windows``, the default: each round's forks kept running and their windows taken in turn; ``forks``: each
fork's windows back to back). From those same forks, side by side, two designs: one window per fork (each
fork's first window: what ``windows=1`` measures), and the windows a fork that ``windows="auto"`` chooses
from them (:func:`benchlab.analysis.precision.design`, Kalibera and Jones). For each, the rounds needed until
every rps ratio to the baseline is within +/-5%, judged as ``compare()`` judges forks that ran in rounds: a t
interval on the rounds' log ratios (:mod:`benchlab.analysis.pairs`), from their variance over the rounds. So
the wall time, each fork costing its start and warm-up plus its windows as measured. The ratio of the two
times has a 95% interval from a bootstrap over rounds. Goal: at most 0.5. The same forks judged apart (each
server's forks apart from the others', as ``compare()`` judged before it paired rounds) are printed after it.

    python3 benchmarks/turnaround.py [--pairs 6] [--core 0] [--repeats 2] [--duration 20] [--warmup 10]
    python3 benchmarks/turnaround.py --startup-only
    python3 benchmarks/turnaround.py --verdict [--repeats 3] [--windows 6] [--duration 5] [--interleave windows]
                                     [--results DIR]
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import benchlab
from benchlab.analysis import pairs, precision, spread
from benchlab.running import backends, jars, process, servers


def startup_seconds(server: servers.Server, *, cds: bool, core: int, log: Path) -> float:
    """From the start of the JVM on ``core`` until its readiness path answers, as the local backend counts it."""
    port = backends.free_port()
    argv = server.argv(port, cds=cds)
    assert jars.launch_mode(argv) == ("cds" if cds else "jar"), argv
    with open(log, "ab") as out:
        began = time.monotonic()
        jvm = process.start(argv, cpus=(core,), stdout=out, stderr=out)
        try:
            backends.wait_ready(f"http://127.0.0.1:{port}{server.ready_path}", timeout=300,
                                alive=lambda: jvm.poll() is None)
            return time.monotonic() - began
        finally:
            process.stop(jvm)


def paired_ratio(values: list[float], baseline: list[float], alpha: float = 0.05) -> tuple[float, float, float]:
    """The geometric mean of values[i] / baseline[i] with a Student t interval on the log ratios.

    Paired, because each pair ran back to back: on a shared machine whose load drifts by 2x within minutes,
    an unpaired interval (stats.ratio_ci) would carry that drift and come out several times wider.
    """
    from scipy.stats import t

    logs = [math.log(a / b) for a, b in zip(values, baseline)]
    centre = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(centre), math.nan, math.nan
    half = t.ppf(1 - alpha / 2, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(centre), math.exp(centre - half), math.exp(centre + half)


def startup(name: str, pairs: int, core: int) -> None:
    server = servers.get(name)
    began = time.monotonic()
    prepared = jars.prepare_cds(server)  # made once, unpinned, before anything is measured
    if prepared.archive is None:
        raise SystemExit(f"no CDS archive to measure: {prepared.warning}")
    print(f"{name}: CDS archive ready in {time.monotonic() - began:.1f} s ({Path(prepared.archive).parent.name})")
    log = Path(tempfile.mkdtemp(prefix="benchlab-startup-")) / "server.log"
    times: dict[bool, list[float]] = {True: [], False: []}
    for pair in range(pairs):
        for cds in ((True, False) if pair % 2 == 0 else (False, True)):
            times[cds].append(startup_seconds(server, cds=cds, core=core, log=log))
    with_cds, without = times[True], times[False]
    ratio, low, high = paired_ratio(with_cds, without)
    print(f"startup on core {core}, {pairs} alternating pairs: median {statistics.median(with_cds):.2f} s with CDS, "
          f"{statistics.median(without):.2f} s without")
    print("  with CDS: " + " ".join(f"{t:.2f}" for t in with_cds))
    print("  without:  " + " ".join(f"{t:.2f}" for t in without))
    print(f"with / without (geometric mean of the per-pair ratios, 95% interval): {ratio:.3f} "
          f"[{low:.3f}, {high:.3f}]   "
          f"goal: startup with CDS <= 0.5 x without")


def turnaround(args) -> None:
    names = args.servers.split(",")
    began = time.monotonic()
    suite = benchlab.compare(names, ["hello"], [args.connections], repeats=args.repeats,
                             duration=f"{args.duration}s", warmup=f"{args.warmup}s", progress=False,
                             results_dir=tempfile.mkdtemp(prefix="benchlab-turnaround-"))
    wall = time.monotonic() - began
    runs = len(suite.runs)
    load = runs * (args.duration + args.warmup)
    startup_s = suite.runs["startup_ms"].mean() / 1000.0
    print(f"{runs} runs of {args.warmup}s warm-up + {args.duration}s measure: load {load:.0f} s, wall {wall:.0f} s")
    print(f"mean server startup {startup_s:.1f} s; other overhead {(wall - load) / runs - startup_s:.1f} s per run")
    print(f"wall / load: {wall / load:.3f} (goal <= 1.25)")


PRECISION = 0.05


_KS = np.arange(2, 100_001)
_T: dict[int, np.ndarray] = {}


def fewest(variance: float, *, sides: int, half: float = PRECISION) -> int:
    """The fewest k whose t half-width on the logs, sqrt(variance / k) on sides x (k - 1) degrees of freedom,
    is within ``half``: k forks a server judged apart (2 sides), or k rounds judged pair by pair (1)."""
    if sides not in _T:
        from scipy.stats import t

        _T[sides] = t.ppf(0.975, sides * (_KS - 1))
    enough = _T[sides] * np.sqrt(variance / _KS) <= math.log1p(half)
    return int(_KS[np.argmax(enough)]) if enough.any() else int(_KS[-1])


def forks_needed(variances: dict, baseline: str) -> int:
    """The fewest forks a server with every ratio within +/-5%: the worst server's log variance plus the
    baseline's, each server's forks apart from the others'."""
    return fewest(max(variances[s] + variances[baseline] for s in variances if s != baseline), sides=2)


def log_variances(windows: dict, m: int, picks: dict | None = None) -> dict:
    """Per server, the variance of the logs of fork means over each fork's first ``m`` windows."""
    out = {}
    for server, forks in windows.items():
        chosen = forks if picks is None else [forks[i] for i in picks[server]]
        means = [math.log(statistics.fmean(f[:m])) for f in chosen]
        out[server] = statistics.variance(means) if len(set(means)) > 1 else 0.0
    return out


def model_from(b2: float, w2: float, fork_s: float, window_s: float, m: int) -> tuple[float, float, int, float]:
    """The model's ratio at ``m`` windows, its best over 1..200 windows and where, and its floor (windows
    free: between**2 / (between**2 + within**2))."""
    if b2 + w2 == 0:
        return 1.0, 1.0, 1, 1.0
    ratios = [precision.saving(b2, w2, fork_s, window_s, k) for k in range(1, 201)]
    best = min(range(200), key=ratios.__getitem__)
    return precision.saving(b2, w2, fork_s, window_s, m), ratios[best], best + 1, b2 / (b2 + w2)


def block_variance(rounds: dict, baseline: str, m: int, keys: list) -> float:
    """The worst server's variance over rounds of the log of its fork's mean of m windows over the baseline's fork
    of the same round. Each fork's windows are cut into disjoint blocks of m (one window a fork: each window
    alone) and the variances averaged over the blocks: a window's place in its fork does not matter here
    (:func:`positions`), and every block is a fork of m windows."""
    base, worst = rounds[baseline], 0.0
    for server, forks in rounds.items():
        if server == baseline:
            continue
        blocks = min(min(len(forks[k]), len(base[k])) for k in keys) // m
        worst = max(worst, statistics.fmean(
            statistics.variance([math.log(statistics.fmean(forks[k][j * m:(j + 1) * m])
                                          / statistics.fmean(base[k][j * m:(j + 1) * m])) for k in keys])
            for j in range(blocks)))
    return worst


def rounds_needed(rounds: dict, baseline: str, m: int, picks: list | None = None) -> int:
    """The fewest rounds with every ratio within +/-5%, judged pair by pair as compare() judges forks that ran in
    rounds (benchlab.analysis.pairs: a t interval on the rounds' log ratios), from :func:`block_variance`."""
    keys = sorted(rounds[baseline]) if picks is None else picks
    return fewest(block_variance(rounds, baseline, m, keys), sides=1)


def by_round(rounds: dict, baseline: str, fork_s: float, window_s: float, windows: int, chosen: int, rng) -> None:
    """The time to a verdict as compare() judges it: a round's forks ran side by side, so what the machine did to
    that round it did to all of its servers, and a ratio taken round by round leaves it out. Each number of
    windows a fork against one window a fork, with a bootstrap over rounds; the design's choice is the goal's."""
    keys = sorted(set.intersection(*(set(r) for r in rounds.values())))

    def hours(m, picks=keys):
        return rounds_needed(rounds, baseline, m, picks) * len(rounds) * (fork_s + m * window_s) / 3600

    one = hours(1)
    print(f"judged by round, as compare() judges (each ratio paired with the baseline's fork of the same round; "
          f"{len(keys)} rounds):")
    print(f"  1 window a fork: {rounds_needed(rounds, baseline, 1, keys)} rounds, {one:.1f} h")
    for m in sorted({*range(2, windows + 1, 2), chosen, windows}):
        draws = []
        for _ in range(1000):
            picks = rng.choice(keys, len(keys)).tolist()
            draws.append(hours(m, picks) / hours(1, picks))
        low, high = np.quantile(draws, [0.025, 0.975])
        print(f"  {m} windows a fork: {rounds_needed(rounds, baseline, m, keys)} rounds, {hours(m):.1f} h; over one "
              f"window a fork {hours(m) / one:.3f} [95% {low:.3f}, {high:.3f}]")
        if m == chosen:
            verdict = "met" if high <= 0.5 else ("missed" if low > 0.5 else "not decided")
            mine = (hours(m) / one, low, high, verdict)
    print(f"chosen design ({chosen} windows) / one window a fork, both judged by round: {mine[0]:.3f} "
          f"[95% {mine[1]:.3f}, {mine[2]:.3f}]   goal <= 0.5: {mine[3]}")


def model_by_round(rounds: dict, fork_s: float, window_s: float, m: int, rng) -> None:
    """Kalibera and Jones' model with the forks' spread beyond their round (spread.interaction) as the
    between-fork noise: what judging by round leaves. A bootstrap over rounds for its interval."""
    keys = sorted(set.intersection(*(set(r) for r in rounds.values())))

    def model(picks):
        w2 = spread.noise([[rounds[s][k] for k in picks] for s in rounds])[1]
        b2, _ = spread.interaction({s: {i: [math.log(v) for v in rounds[s][k]] for i, k in enumerate(picks)}
                                       for s in rounds}, w2)
        return (b2, w2, *model_from(b2, w2, fork_s, window_s, m))

    b2, w2, at_m, best, best_m, floor = model(keys)
    draws = [model(rng.choice(keys, len(keys)).tolist()) for _ in range(300)]
    (lo_m, hi_m), (lo_b, hi_b) = (np.quantile([d[i] for d in draws], [0.025, 0.975]) for i in (2, 3))
    print(f"Kalibera and Jones' model judged by round, from forks {math.sqrt(b2):.1%} apart beyond their round and a "
          f"fork's windows {math.sqrt(w2):.1%}: {m} windows a fork {at_m:.3f} [95% {lo_m:.3f}, {hi_m:.3f}]; the "
          f"best, {best_m} windows: {best:.3f} [{lo_b:.3f}, {hi_b:.3f}]; windows that cost nothing: {floor:.3f}")


def positions(windows: dict) -> list[tuple[float, float]]:
    """By a window's place in its fork (1st, 2nd, ...): the mean and the root mean square of its log distance
    from its fork's mean, over every fork of every server. The model takes a fork's windows as alike; a first
    window further out than the rest is what one window a fork pays beyond the model."""
    forks = [[math.log(v) for v in fork] for each in windows.values() for fork in each]
    gaps = [[v - statistics.fmean(fork) for v in fork] for fork in forks]
    places = zip(*gaps)  # as far as the shortest fork goes
    return [(statistics.fmean(g), math.sqrt(statistics.fmean(x * x for x in g))) for g in places]


def verdict_time(args) -> None:
    names = args.servers.split(",")
    results = args.results or tempfile.mkdtemp(prefix="benchlab-verdict-")
    began = time.monotonic()
    suite = benchlab.compare(names, ["hello"], [args.connections], repeats=args.repeats, windows=args.windows,
                             interleave=args.interleave, duration=f"{args.duration}s", warmup="auto", progress=False,
                             results_dir=results)
    print(f"{suite!r}: {args.repeats} forks a server x {args.windows} windows of {args.duration} s, interleave "
          f"{args.interleave}, warm-up auto, c={args.connections}; {(time.monotonic() - began) / 60:.0f} min here; "
          f"stored in {results}")
    print("nothing else ran on the machine meanwhile (server on core 0, wrk on core 1)")
    ok = [r for r in suite.records if r.status == "ok"]
    rounds: dict[str, dict[int, list[float]]] = {}  # server -> round (its repeat) -> its fork's windows' rps
    for fork in dict.fromkeys(r.params["fork"] for r in ok):
        mine = sorted((r for r in ok if r.params["fork"] == fork), key=lambda r: r.params["window"])
        rounds.setdefault(mine[0].params["server"], {})[mine[0].params["repeat"]] = [r.metrics["rps"] for r in mine]
    windows = {server: list(forks.values()) for server, forks in rounds.items()}
    fork_s, window_s = precision.costs(ok)
    chosen = precision.design(ok, interleave=args.interleave, paired=args.repeats >= pairs.reach(0.05))
    m = min(chosen["windows"], args.windows)  # the design cannot use windows that were not measured
    print(f"measured: a fork costs {fork_s:.0f} s before its first window, a window {window_s:.1f} s")
    print(f"windows=auto would choose: {chosen['why']}"
          + (f"; {m} measured, so {m} are used" if m < chosen["windows"] else ""))

    rng = np.random.default_rng(20261201)
    by_round(rounds, names[0], fork_s, window_s, args.windows, m, rng)
    model_by_round(rounds, fork_s, window_s, m, rng)
    print()

    # compare() judged each server's forks apart from the others' before it paired rounds: the same forks so
    # judged, for the record, with the model of that judgement (forks' whole spread as the between noise).
    def times(picks=None) -> tuple[float, float, int, int]:
        k1 = forks_needed(log_variances(windows, 1, picks), names[0])
        km = forks_needed(log_variances(windows, m, picks), names[0])
        return (k1 * len(names) * (fork_s + window_s), km * len(names) * (fork_s + m * window_s), k1, km)

    one, auto, k1, km = times()
    ratios = []
    for _ in range(500):
        picks = {s: rng.integers(0, len(f), len(f)).tolist() for s, f in windows.items()}
        a, b, _, _ = times(picks)
        ratios.append(b / a)
    low, high = np.quantile(ratios, [0.025, 0.975])
    print(f"judged apart (each server's forks apart from the others', as compare() judged before it paired rounds), "
          f"to +/-{PRECISION:.0%}: one window a fork needs {k1} forks a server, {one / 3600:.1f} h; {m} windows a "
          f"fork need {km} forks, {auto / 3600:.1f} h; {auto / one:.3f} [95% {low:.3f}, {high:.3f}]")
    b2, w2 = spread.noise(windows.values())
    at_m, best, best_m, floor = model_from(b2, w2, fork_s, window_s, m)
    draws = []
    for _ in range(1000):
        picks = {s: rng.integers(0, len(f), len(f)).tolist() for s, f in windows.items()}
        draws.append(model_from(*spread.noise([f[i] for i in picks[s]] for s, f in windows.items()),
                                fork_s, window_s, m))
    (lo_m, hi_m), (lo_b, hi_b), (lo_f, hi_f) = (np.quantile([d[i] for d in draws], [0.025, 0.975]) for i in (0, 1, 3))
    print(f"  Kalibera and Jones' model judged apart, from forks {math.sqrt(b2):.1%} apart and a fork's windows "
          f"{math.sqrt(w2):.1%} ({sum(len(f) for f in windows.values())} forks): {m} windows a fork {at_m:.3f} "
          f"[95% {lo_m:.3f}, {hi_m:.3f}]; the best, {best_m} windows: {best:.3f} [{lo_b:.3f}, {hi_b:.3f}]; "
          f"windows that cost nothing: {floor:.3f} [{lo_f:.3f}, {hi_f:.3f}]")
    print("a window's log distance from its fork's mean, by its place in the fork (mean, rms): "
          + "; ".join(f"{i + 1}: {mean:+.1%} {rms:.1%}" for i, (mean, rms) in enumerate(positions(windows))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="spring-tomcat,spring-jetty,spring-undertow")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--duration", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--startup-server", default="spring-tomcat", help="the server whose startup is timed")
    parser.add_argument("--pairs", type=int, default=6, help="startup pairs (with CDS, without), order alternating")
    parser.add_argument("--core", type=int, default=0, help="the one core each timed start is pinned to")
    parser.add_argument("--startup-only", action="store_true", help="time the starts, skip the compare")
    parser.add_argument("--verdict", action="store_true", help="the wall time to a +/-5%% verdict, two designs")
    parser.add_argument("--windows", type=int, default=6, help="--verdict: windows measured a fork")
    parser.add_argument("--results", help="--verdict: a results folder (resumed if it holds some runs)")
    parser.add_argument("--interleave", default="windows", choices=("windows", "forks"),
                        help="--verdict: the order of the windows (compare's interleave)")
    args = parser.parse_args()

    benchlab.build()
    if args.verdict:
        return verdict_time(args)
    startup(args.startup_server, args.pairs, args.core)
    if not args.startup_only:
        turnaround(args)


if __name__ == "__main__":
    main()
