"""Is warmup="auto" warm? Per server: when the JIT went quiet, auto's time and throughput, and throughput
after a 300 s warm-up of the same JVM.

Each round starts every server once (in an order that alternates between rounds), warms it with the
``auto`` rule (priming at a light load, then the run's own load: :mod:`benchlab.running.warmup`),
measures, then keeps warming the same JVM in 5 s slices until 300 s and measures again. Both
measurements come from one JVM, so their ratio (auto / 300 s) carries no fork-to-fork noise: it says only
whether auto stopped too early. The JVM's compile time is read after every slice the whole time, so the
time its JIT went quiet for good (``benchlab.running.warmup.quiet_since``) is known from the whole 300 s curve,
and an auto call made before it is a *false steady call*. With ``--aot`` each server runs on Java 25 twice,
without and with its AOT cache (``X@java25`` and ``X+aot@java25``, the cache trained with real requests
before the first round), and the script says how much sooner the JIT went quiet with the cache and
whether steady throughput (after the long warm-up) is the same: the ratio's 90% interval within
0.95-1.05 is "equivalent" (two one-sided tests at 5%).

Goal: auto / 300 s >= 0.97 (its 95% interval over the rounds), with no false steady call in any round.

    python3 benchmarks/warmup.py [--servers spring-tomcat,spring-jetty,spring-undertow] [--rounds 3]
                                 [--duration 10s] [--connections 200] [--long 300] [--curves FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import time
from pathlib import Path

from figures import line, ratio_interval

import benchlab
from benchlab.running import backends, drivers, warmup
from benchlab.running.spec import prepare


def one_fork(server: str, *, duration: str, connections: int, long: float, workdir: Path, windows: int = 1) -> dict:
    """Warm one fresh JVM with auto, measure ``windows`` windows; warm it on to ``long`` seconds, measure again."""
    spec = prepare(server, "hello", connections=connections, duration=duration, warmup="auto")
    driver = drivers.get(spec.driver, spec.load.model)
    benchlab.running.jars.ensure_built(spec.server, java=spec.server_java, cds=spec.cds)
    backend = backends.get("local")
    workdir.mkdir(parents=True, exist_ok=True)
    instance = backend.start(spec.server, spec.launch(f"warmup-{server}", workdir / "server.log"))
    jvm = instance.counters()
    try:
        began = time.monotonic()
        auto = warmup.warm_up(instance.url, spec.scenario, spec.load, cpus=spec.load_cpus, workdir=workdir,
                              perfdata=jvm)
        def measured() -> float:
            """The mean rps of ``windows`` windows back to back, each a point of the curve."""
            got = []
            for _ in range(windows):
                got.append(drivers.execute(driver, instance.url, spec.scenario, spec.load, cpus=spec.load_cpus,
                                           workdir=workdir, phase="measure")[0]["rps"])
                curve.append({"t": round(time.monotonic() - began, 3), "rps": got[-1], "phase": "measure",
                              **warmup._counters(jvm)})
            return sum(got) / len(got)

        curve = list(auto["slices"])
        auto_rps = measured()
        slice_load = warmup._warming_load(spec.load, warmup.SLICE)
        while time.monotonic() - began < long:
            metrics = drivers.execute(drivers.tool("wrk"), instance.url, spec.scenario, slice_load,
                                      cpus=spec.load_cpus, workdir=workdir, phase="warmup")[0]
            curve.append({"t": round(time.monotonic() - began, 3), "rps": metrics.get("rps"),
                          **warmup._counters(jvm)})
        long_rps = measured()
    finally:
        if jvm is not None:
            jvm.close()
        instance.stop()
    quiet = warmup.quiet_since(curve) if jvm else None
    return {"server": server, "auto_s": auto["seconds"], "auto_warm": auto["steady"], "class": auto["class"],
            "primed_s": auto.get("primed_s"),
            "rule": auto["rule"], "auto_rps": auto_rps, "long_rps": long_rps, "quiet_s": quiet,
            "false_steady": bool(auto["steady"]) and (quiet is None or quiet > auto["seconds"] + 1e-6),
            "curve": curve}


def aot_lines(servers: list[str], forks: list[dict]) -> None:
    """Per server: the JIT-quiet time and auto's time with the AOT cache against without, and whether
    steady throughput is equivalent (90% interval of the per-round ratio within 0.95-1.05)."""
    print()
    for plain, aot in zip(servers[::2], servers[1::2]):
        mine = {name: [f for f in forks if f["server"] == name] for name in (plain, aot)}
        quiet = {n: [f["quiet_s"] for f in mine[n] if f["quiet_s"] is not None] for n in mine}
        took = {n: [f["auto_s"] for f in mine[n]] for n in mine}
        sooner = (statistics.median(quiet[plain]) - statistics.median(quiet[aot])) if quiet[plain] and quiet[aot] \
            else math.nan
        print(f"{aot}: JIT quiet at {statistics.median(quiet[aot]) if quiet[aot] else math.nan:.0f} s against "
              f"{statistics.median(quiet[plain]) if quiet[plain] else math.nan:.0f} s without the cache "
              f"({sooner:+.0f} s sooner); auto took {statistics.median(took[aot]):.0f} s against "
              f"{statistics.median(took[plain]):.0f} s")
        ratios = [a["long_rps"] / p["long_rps"] for p, a in zip(mine[plain], mine[aot])]
        centre, low, high = ratio_interval(ratios, confidence=0.90)
        said = ("equivalent" if 0.95 <= low and high <= 1.05 else
                "different" if high < 0.95 or low > 1.05 else "not decided: more rounds needed")
        print(f"  steady throughput with / without the cache: {centre:.3f} [{low:.3f}, {high:.3f}] (90% interval "
              f"over {len(ratios)} rounds; equivalence margin 0.95-1.05): {said}")


def replay(fork: dict, share: float) -> dict | None:
    """Where ``auto`` would have called this fork warm had its compiler counted as quiet at ``share``: the rule
    run again over the fork's own slices at the run's load (its priming left as it was), and what the curve
    shows after that call: the throughput of the next 30 s over that of the last 30 s before the long
    warm-up ended, and the compile time's share of the 30 s after the call."""
    curve = fork["curve"]
    primes = [i for i, s in enumerate(curve) if s.get("phase") == "prime"]
    origin = curve[primes[-1]] if primes else {"t": 0.0, "compile_s": curve[0].get("compile_s")}
    loaded = [s for s in curve[primes[-1] + 1 if primes else 0:] if s.get("rps")]  # the run's own load from here
    own = [s for s in loaded if s.get("phase") != "measure"]  # the 5 s slices the rule judges
    called = next((i for i in range(1, len(own) + 1)
                   if warmup.judge(own[:i], origin=origin, share=share)["warm"]), None)
    if called is None:
        return None
    at = own[called - 1]["t"]
    after = [s for s in loaded if at < s["t"] <= at + 30.0]
    last = [s for s in own if s["t"] > own[-1]["t"] - 30.0]
    if not after or not last:
        return None
    later = [s for s in curve if s["t"] <= at + 30.0 and s.get("compile_s") is not None]
    return {"t": at, "ratio": statistics.fmean(s["rps"] for s in after) / statistics.fmean(s["rps"] for s in last),
            "compile_share": (later[-1]["compile_s"] - own[called - 1]["compile_s"]) / max(later[-1]["t"] - at, 1e-9)}


def replays(forks: list[dict], shares: list[float]) -> None:
    """For each candidate quiet share: per server, when auto would call the forks warm, their throughput then
    against the end of the long warm-up, and how much they compiled in the 30 s after the call."""
    print()
    print("the rule replayed over the stored curves at other quiet shares (throughput from 5 s slices):")
    for share in shares:
        for server in dict.fromkeys(f["server"] for f in forks):
            got = [replay(f, share) for f in forks if f["server"] == server]
            calls = [g for g in got if g is not None]
            if not calls:
                print(f"  share {share:.2f} {server:24} never called warm")
                continue
            centre, low, high = ratio_interval([g["ratio"] for g in calls])
            times = ", ".join(f"{g['t']:.0f}" for g in calls)
            print(f"  share {share:.2f} {server:24} called at {times} s; next 30 s "
                  f"/ last 30 s {centre:.3f} [{low:.3f}, {high:.3f}]; compile share after the call "
                  f"{max(g['compile_share'] for g in calls):.2f} at most; {len(got) - len(calls)} never called")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="spring-tomcat,spring-jetty,spring-undertow")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", default="10s")
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--long", type=float, default=300.0, help="the long warm-up, seconds")
    parser.add_argument("--windows", type=int, default=1, help="windows measured at each point (their mean)")
    parser.add_argument("--aot", action="store_true", help="also run each server with +aot (Java 25's AOT cache)")
    parser.add_argument("--curves", help="write every fork's curve (rps, compile time per slice) to this JSON file")
    parser.add_argument("--again", metavar="CURVES", help="run nothing: judge the forks of a --curves file again "
                                                           "(the JIT-quiet time and false calls by today's rule)")
    parser.add_argument("--shares", help="with --again: replay the rule at these quiet shares, e.g. 0.05,0.1,0.25")
    args = parser.parse_args()
    if args.again:
        forks = json.loads(Path(args.again).read_text())
        for fork in forks:
            fork["quiet_s"] = warmup.quiet_since(fork["curve"])
            fork["false_steady"] = bool(fork["auto_warm"]) and (fork["quiet_s"] is None
                                                                or fork["quiet_s"] > fork["auto_s"] + 1e-6)
        servers = list(dict.fromkeys(f["server"] for f in forks))
        print(f"{len(forks)} forks of {Path(args.again).name}, judged again")
        report(servers, forks, long=args.long, aot=args.aot)
        if args.shares:
            replays(forks, [float(x) for x in args.shares.split(",")])
        return

    servers = args.servers.split(",")
    if args.aot:
        servers = [name for server in servers for name in (f"{server}@java25", f"{server}+aot@java25")]
    results = Path(tempfile.mkdtemp(prefix="benchlab-warmup-"))
    print(f"{len(servers)} servers, {args.rounds} round(s): auto, then the same JVM warmed to {args.long:.0f} s; "
          f"measure {args.duration}, c={args.connections}, hello; server on core 0, wrk on core 1", flush=True)
    forks: list[dict] = []
    for r in range(args.rounds):
        order = servers if r % 2 == 0 else servers[::-1]
        for server in order:
            fork = one_fork(server, duration=args.duration, connections=args.connections, long=args.long,
                            workdir=results / f"{server}-{r}", windows=args.windows)
            forks.append(fork)
            if args.curves:  # after every fork: a long benchmark that stops keeps what it measured
                Path(args.curves).write_text(json.dumps(forks, indent=1))
            primed = f"primed {fork['primed_s']:.0f} s, " if fork["primed_s"] is not None else ""
            print(f"  round {r + 1} {server:24} auto {fork['auto_s']:5.0f} s ({primed}{fork['class']}, "
                  f"warm: {fork['auto_warm']}) {fork['auto_rps']:>9,.0f} req/s | JIT quiet at "
                  f"{fork['quiet_s'] if fork['quiet_s'] is not None else float('nan'):5.0f} s | after "
                  f"{args.long:.0f} s {fork['long_rps']:>9,.0f} req/s"
                  + ("  FALSE STEADY CALL" if fork["false_steady"] else ""), flush=True)
    report(servers, forks, long=args.long, aot=args.aot)


def report(servers: list[str], forks: list[dict], *, long: float, aot: bool) -> None:
    for fork in forks:
        quiet = fork["quiet_s"] if fork["quiet_s"] is not None else float("nan")
        print(f"  {fork['server']:24} auto {fork['auto_s']:5.0f} s (warm: {fork['auto_warm']}, {fork['class']}) "
              f"{fork['auto_rps']:>9,.0f} req/s | JIT quiet at {quiet:5.0f} s | after {long:.0f} s "
              f"{fork['long_rps']:>9,.0f} req/s" + ("  FALSE STEADY CALL" if fork["false_steady"] else ""))
    print()
    print(f"{'server':24} {'JIT quiet':>9} {'auto took':>9} {'auto rps':>9} {f'{long:.0f} s rps':>9}  "
          f"false steady calls, not warm at the limit")
    for server in servers:
        mine = [f for f in forks if f["server"] == server]
        quiet = [f["quiet_s"] for f in mine if f["quiet_s"] is not None]
        print(f"{server:24} {statistics.median(quiet) if quiet else math.nan:>8.0f}s "
              f"{statistics.median(f['auto_s'] for f in mine):>8.0f}s "
              f"{statistics.mean(f['auto_rps'] for f in mine):>9,.0f} "
              f"{statistics.mean(f['long_rps'] for f in mine):>9,.0f}"
              f"  {sum(f['false_steady'] for f in mine)} of {len(mine)}, {sum(not f['auto_warm'] for f in mine)}")
    print()
    for server in servers:
        mine = [f for f in forks if f["server"] == server]
        print(line(f"{server} auto / {long:.0f} s rps", [f["auto_rps"] / f["long_rps"] for f in mine], 0.97))
    if aot:
        aot_lines(servers, forks)
    false = sum(f["false_steady"] for f in forks)
    print(f"false steady calls: {false} of {len(forks)} forks (goal: none)")
    print("(goal: auto / long >= 0.97 by its interval, and no false steady call in any round)")


if __name__ == "__main__":
    main()
