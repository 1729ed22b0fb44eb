"""Does benchlab see what disturbs a window, and how often does it cry wolf? Clean windows and disturbed ones, here.

``clean``: one fork of each server, warmed by ``warmup="auto"``, then ``--windows`` windows of each taken in turn
(``interleave="windows"``), with ``retakes=0`` so that every window is kept and judged. A clean window that carries
``interference``, ``steal`` or ``dip`` is a false flag: the rate is printed with its Clopper-Pearson 95% interval,
beside the goal (at most 5%). From the same stored windows the rate is recomputed at other limits, from the windows'
own per-second series (:func:`benchlab.analysis.series.per_second`), so the limits in
:mod:`benchlab.analysis.series` and :mod:`benchlab.analysis.disturbance` are chosen from this machine's clean
windows, not by argument. Say what else was running: nothing should be.

``disturbed``: forks of ``--server``, each measuring a clean window, then a window into which a busy loop is started
apart from benchlab's own process tree (``setsid -f taskset -c CORE``, as a user's IDE or a neighbour's job would
be) on the server's core (``--where server``) or the load's (``--where load``) for half of it, with ``retakes=1``;
or a busy loop started just before the window and ended 4 s later (``--where before``): benchlab should wait for
quiet. It prints, per fork, whether the disturbed window was flagged (with its flag's line) and retaken, and the kept
figure against the clean window's.

    python3 benchmarks/disturbance.py clean [--servers spring-undertow,go-nethttp] [--windows 24] [--duration 5s]
    python3 benchmarks/disturbance.py disturbed [--server spring-undertow] [--where server] [--forks 3]
    python3 benchmarks/disturbance.py again DIR        # recompute the clean rates of stored windows at other limits
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from scipy.stats import beta

import benchlab
from benchlab.analysis import changepoints, series, steady
from benchlab.analysis.disturbance import DIP_LIMIT, DIP_S, INTERFERENCE_S, STEAL_S

GOAL = 0.05


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """The exact binomial interval of k of n."""
    low = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return low, high


def busy(core: int, seconds: float) -> None:
    """A busy loop on ``core`` for ``seconds``, apart from this process's tree: setsid -f forks it away."""
    subprocess.run(["setsid", "-f", "taskset", "-c", str(core), "timeout", f"{seconds:g}", "sh", "-c",
                    "while :; do :; done"], check=True)


def figures(run) -> dict:
    """What a window's own series says, for any limits: the per-second other shares, steal, and its dip."""
    params = run.params
    frame = series.of_run(run)
    if frame is None or frame.empty:
        return {}
    server_cores = len(params.get("server_cpus") or []) or 1
    load_cores = len([c for c in params.get("load_cpus") or [] if c not in (params.get("server_cpus") or [])]) or 1
    return {"other_server": (frame["other_server"] / server_cores).fillna(0).to_numpy(),
            "other_load": (frame["other_load"] / load_cores).fillna(0).to_numpy(),
            "steal": (frame["steal"] / (server_cores + load_cores)).fillna(0).to_numpy(),
            "dip": run.metrics.get("dip"), "dip_s": run.metrics.get("dip_s")}


def flagged(f: dict, other: float, seconds: float, dip: float) -> bool:
    if not f:
        return False
    over = max(int((f["other_server"] > other).sum()), int((f["other_load"] > other).sum()))
    stolen = int((f["steal"] > series.STEAL_LIMIT).sum())
    dipped = f["dip"] is not None and f["dip"] < -dip and (f["dip_s"] or 0) >= DIP_S
    return over >= seconds or stolen >= STEAL_S or dipped


def report(records) -> None:
    windows = [r for r in records if r.status == "ok"]
    found = [figures(r) for r in windows]
    n = len(windows)
    k = sum(flagged(f, series.OTHER_LIMIT, INTERFERENCE_S, DIP_LIMIT) for f in found)
    low, high = clopper_pearson(k, n)
    print(f"clean windows: {n}; flagged interference, steal or dip: {k} = {k / max(n, 1):.3f} "
          f"[{low:.3f}, {high:.3f}] (95% Clopper-Pearson); goal: at most {GOAL:.2f}")
    tops = [max(f["other_server"].max(initial=0), f["other_load"].max(initial=0)) for f in found if f]
    dips = [f["dip"] for f in found if f and f["dip"] is not None]
    print(f"  per window, the most other processes took of a group's cores in one second: median "
          f"{np.median(tops):.3f}, 95th percentile {np.quantile(tops, 0.95):.3f}, max {max(tops):.3f}")
    if dips:
        print(f"  the deepest dip of each window: median {np.median(dips):+.3f}, 5th percentile "
              f"{np.quantile(dips, 0.05):+.3f}, min {min(dips):+.3f} (change points, penalty "
              f"{changepoints.PENALTY:g} log n)")
    drifts = [steady.drift(r.samples) for r in windows]
    drifts = [d for d in drifts if d["drift"] is not None]
    sizes = np.array([abs(d["drift"]) for d in drifts])
    moved = int(np.sum(sizes > [d["drift_limit"] for d in drifts]))
    print(f"  drifting (a warning, recomputed by today's rule from the stored samples): {moved} of {len(drifts)} "
          f"= {moved / max(len(drifts), 1):.3f}; |drift| median {np.median(sizes):.3f}, 95th percentile "
          f"{np.quantile(sizes, 0.95):.3f} (floor {steady.FLOOR:.2f})")
    print("  false-flag rate at other limits (other share / seconds / dip):")
    for other in (0.05, 0.10, 0.15, 0.20):
        for seconds in (1, 2):
            for dip in (0.05, 0.10, 0.15):
                rate = sum(flagged(f, other, seconds, dip) for f in found) / max(n, 1)
                print(f"    {other:.2f} / {seconds} s / {dip:.2f}: {rate:.3f}")


def clean(args) -> None:
    results = args.results or tempfile.mkdtemp(prefix="benchlab-clean-")
    began = time.monotonic()
    suite = benchlab.compare(args.servers.split(","), repeats=1, windows=args.windows, interleave="windows",
                             duration=args.duration, connections=[args.connections], warmup="auto", retakes=0,
                             results_dir=results, progress=False)
    print(f"{suite!r} in {(time.monotonic() - began) / 60:.1f} min, stored in {results}")
    report(suite.records)


def disturbed(args) -> None:
    from benchlab.running.fork import Fork, whole
    from benchlab.running.options import RunOptions
    from benchlab.running.spec import prepare

    spec = prepare(args.server, "hello", RunOptions(connections=args.connections, duration=args.duration,
                                                      warmup=args.warmup, retakes=1))
    seconds = float(args.duration.rstrip("s"))
    core = spec.server_cpus[0] if args.where in ("server", "before") else spec.load_cpus[0]
    base = Path(args.results or tempfile.mkdtemp(prefix="benchlab-disturbed-"))
    for k in range(args.forks):
        def phase(step: str) -> None:
            if step == "measure 2/2":
                if args.where == "before":
                    busy(core, 4.0)  # busy as the window is about to start, for 4 s: benchlab should wait
                else:
                    threading.Timer(0.5 + seconds / 4, busy, (core, seconds / 2)).start()

        name = f"{args.server}-{args.where}-f{k + 1}"
        fork = whole(Fork(spec, [(base / f"{name}-i1", f"{name}-i1"), (base / f"{name}-i2", f"{name}-i2")],
                          repeat=k + 1, on_phase=phase))
        if fork.error is not None:
            print(f"fork {k + 1}: failed: {fork.error}")
            continue
        quiet, kept = fork.records
        from benchlab.running.window import disturbed as flags_of

        said = [flags_of(r.row()) for r in fork.retaken]
        print(f"fork {k + 1}: clean window {quiet.metrics['rps']:,.0f} req/s; disturbed window "
              f"{'retaken' if fork.retaken else 'NOT retaken'}"
              + (f" ({fork.retaken[0].metrics['rps']:,.0f} req/s: {said[0][0][1][:160]})" if said and said[0] else "")
              + f"; kept {kept.metrics['rps']:,.0f} req/s ({kept.metrics['rps'] / quiet.metrics['rps'] - 1:+.1%}); "
              f"waited {kept.metrics.get('quiet_wait_s')} s for quiet")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("clean")
    c.add_argument("--servers", default="spring-undertow,go-nethttp")
    c.add_argument("--windows", type=int, default=24)
    c.add_argument("--duration", default="5s")
    c.add_argument("--connections", type=int, default=16)
    c.add_argument("--results")
    d = sub.add_parser("disturbed")
    d.add_argument("--server", default="spring-undertow")
    d.add_argument("--where", choices=("server", "load", "before"), default="server")
    d.add_argument("--forks", type=int, default=3)
    d.add_argument("--duration", default="10s")
    d.add_argument("--warmup", default="auto")
    d.add_argument("--connections", type=int, default=16)
    d.add_argument("--results")
    a = sub.add_parser("again")
    a.add_argument("results")
    args = parser.parse_args()
    if args.mode == "clean":
        clean(args)
    elif args.mode == "disturbed":
        disturbed(args)
    else:
        report(benchlab.load(args.results).records)


if __name__ == "__main__":
    main()
