"""Is warmup="auto" warm, and what do the warm-up shortcuts buy? Forks kept running together, windows in turn.

A warm JVM's throughput drifts slowly here (consecutive 5 s windows correlate at 0.64-0.73; six of them vary
as a block by 11-12%), so two measurements of one fork minutes apart, each a few windows back to back,
differ by that drift whatever the warm-up did (the last version of this script: auto / 300 s of 0.82-1.15,
intervals 0.06-12). So every fork here is measured in windows taken in turn with the other forks of its round,
all kept running (:mod:`benchlab.running.rounds`), which spreads each measurement over minutes.

Without ``--shortcut``: each round starts one fork of every server, warms each with ``auto`` (priming, then the
run's own load: :mod:`benchlab.running.warmup`), measures ``--windows`` windows of each in turn ("auto"), then
gives each fork slices of its own load in turn until it has had ``--long`` seconds of load, and measures
``--windows`` windows again ("long"). Both come from one JVM, so auto / long says only whether auto stopped
too early. The JVM's compile time is read after every slice, so the time its JIT went quiet for good
(:func:`benchlab.running.warmup.quiet_since`) is known from the whole curve, and an auto call made before it
is a *false steady call*. Goal: auto / long >= 0.97 (its 95% interval over the forks), and no false steady
call in any round.

With ``--shortcut``: each round starts, per server, one fork of the shortcut and one of its partner, warmed by
``auto`` in turn, and measures ``--windows`` windows of each in turn:

- ``widestart``: the JVM started on the run's cores and pinned to its own once it answers (benchlab's default
  for a local built-in server: it answers in 3 s instead of 5) against ``pinned``, on its one core from its
  start (``-XX:ActiveProcessorCount=1`` in its options turns the wide start off). A shortcut that sped up
  priming itself, the compiler threads on the load core until the JIT was quiet, changed the steady
  throughput (Undertow 0.955 [0.928, 0.984], Tomcat 1.054 [1.015, 1.095]) and is not in benchlab;
- ``aot``: ``X+aot@java25`` (Java 25's AOT cache with method profiles, trained with real requests) against
  ``X@java25``.

It says how much sooner each shortcut is warm and its JIT quiet, and whether steady throughput is the same:
the rounds' log ratios of fork means, a 90% t interval, "equivalent" within 0.95-1.05 (two one-sided tests
at 5%), "different" outside it, else "not decided".

    python3 benchmarks/warmup.py [--servers spring-tomcat,spring-jetty,spring-undertow] [--rounds 3]
                                 [--windows 8] [--duration 5s] [--connections 200] [--long 300]
                                 [--shortcut widestart|aot] [--curves FILE]
    python3 benchmarks/warmup.py --again FILE [--shares 0.05,0.1]     # judge stored curves again
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

from benchlab.running import rounds, warmup
from benchlab.running.fork import Fork
from benchlab.running.options import RunOptions
from benchlab.running.spec import prepare

MARGIN = 0.05


def arms(server: str, shortcut: str | None) -> list[tuple[str, dict]]:
    """The forks of one server in a round: (arm, prepare() options); with a shortcut, its partner first."""
    if shortcut == "aot":
        return [("java25", {"server": f"{server}@java25"}), ("aot", {"server": f"{server}+aot@java25"})]
    if shortcut == "widestart":
        return [("pinned", {"server": server, "jvm_opts": ("-XX:ActiveProcessorCount=1",)}),
                ("widestart", {"server": server})]
    return [("auto", {"server": server})]


def _windows(folder: Path, name: str, count: int) -> list[tuple[Path, str]]:
    return [(folder / f"w{k}", f"{name}-w{k}") for k in range(1, count + 1)]


def _age(forks: list[Fork], long: float) -> dict[int, list[dict]]:
    """Slices of each fork's own load in turn, until each has had ``long`` seconds of load since its start;
    each fork's slices, with its counters after each, on its warm-up's clock."""
    loaded = {id(f): f.warmed["seconds"] + f.warmed.get("resumed_s", 0.0)
              + sum(r.metrics.get("elapsed_s") or 0.0 for r in f.records) for f in forks}
    aged: dict[int, list[dict]] = {id(f): [] for f in forks}
    while any(loaded[id(f)] < long for f in forks):
        for fork in forks:
            if loaded[id(fork)] >= long:
                continue
            load = warmup._warming_load(fork.spec.load, warmup.SLICE)
            done = warmup._slice(fork.instance.url, fork.spec.scenario, load, "long", began=fork.warm_began,
                                 cpus=fork.spec.load_cpus, workdir=fork.windows[0][0], perfdata=fork.jvm)
            aged[id(fork)].append(done)
            loaded[id(fork)] += warmup.SLICE
    return aged


def one_round(server_list: list[str], args, base: Path, r: int) -> list[dict]:
    """One round: the forks of every server (and arm) alive together; see the module's docstring."""
    plan = [(server, arm, options) for server in server_list for arm, options in arms(server, args.shortcut)]
    plan = plan if r % 2 == 0 else plan[::-1]
    measured = args.windows * (1 if args.shortcut else 2)
    forks = []
    for server, arm, options in plan:
        given = dict(options)
        spec = prepare(given.pop("server"), "hello", RunOptions.of(connections=args.connections,
                                                                   duration=args.duration, warmup="auto", **given))
        name = f"{server}-{arm}-r{r}"
        forks.append(Fork(spec, _windows(base / name, name, measured), repeat=r + 1))
    with rounds.together(forks):
        rounds.take(forks, args.windows)
        aged = {} if args.shortcut else _age([f for f in forks if f.error is None], args.long)
        rounds.take(forks)
        return [_summary(server, arm, fork, args, aged.get(id(fork), []), r)
                for (server, arm, _), fork in zip(plan, forks)]


def _summary(server: str, arm: str, fork, args, aged: list[dict], r: int) -> dict:
    if fork.error is not None:
        return {"server": server, "arm": arm, "round": r, "error": str(fork.error).splitlines()[0]}
    warmed, records = fork.warmed, fork.records
    auto = [r.metrics["rps"] for r in records[:args.windows]]
    long = [r.metrics["rps"] for r in records[args.windows:]]
    curve = [*warmed.get("slices", []), *aged]
    fork_summary = {"server": server, "arm": arm, "round": r, "auto_s": warmed["seconds"],
                    "primed_s": warmed.get("primed_s"), "auto_warm": warmed["steady"], "class": warmed.get("class"),
                    "rule_quiet_s": warmed.get("jit_quiet_s"), "auto_rps": statistics.fmean(auto),
                    "long_rps": statistics.fmean(long) if long else None, "curve": curve}
    return judged(fork_summary)


def judged(fork: dict) -> dict:
    """The fork with the time its JIT went quiet for good, by compile time (``quiet_s``, HotSpot's wall time
    of compilations) and by the compiler threads' CPU (``quiet_cpu_s``), and whether auto's call came before
    each (a false steady call). In a round the forks share the server's core, so an idle fork's compilations
    take longer in wall time while they cost the core no more: the CPU is the JIT's cost to a measurement."""
    out = dict(fork)
    for key, quiet, false in (("compile_s", "quiet_s", "false_steady"), ("jit_cpu_s", "quiet_cpu_s", "false_cpu")):
        out[quiet] = warmup.quiet_since(fork["curve"], key=key)
        counted = any(s.get(key) is not None for s in fork["curve"])
        out[false] = bool(fork["auto_warm"]) and counted and (out[quiet] is None or out[quiet] > fork["auto_s"] + 1e-6)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="spring-tomcat,spring-jetty,spring-undertow")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--windows", type=int, default=8, help="windows of each fork at each point, taken in turn")
    parser.add_argument("--duration", default="5s")
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--long", type=float, default=300.0, help="seconds of load before the second measurement")
    parser.add_argument("--shortcut", choices=("widestart", "aot"), help="a shortcut against its partner instead")
    parser.add_argument("--curves", help="write every fork's curve (rps, compile time per slice) to this JSON file")
    parser.add_argument("--again", metavar="CURVES", help="run nothing: judge the forks of a --curves file again "
                                                           "(the JIT-quiet time and false calls by today's rule)")
    parser.add_argument("--shares", help="with --again: replay the rule at these quiet shares, e.g. 0.05,0.1,0.25")
    args = parser.parse_args()
    if args.again:
        forks = [judged(fork) for fork in json.loads(Path(args.again).read_text())]
        print(f"{len(forks)} forks of {Path(args.again).name}, judged again")
        report(forks, long=args.long)
        if args.shares:
            replays(forks, [float(x) for x in args.shares.split(",")])
        return

    base = Path(tempfile.mkdtemp(prefix="benchlab-warmup-"))
    servers = args.servers.split(",")
    began = time.monotonic()
    what = (f"{args.shortcut} against its partner" if args.shortcut else
            f"auto, then each fork loaded to {args.long:.0f} s and measured again")
    print(f"{args.rounds} rounds of {', '.join(servers)}: {what}; {args.windows} windows of {args.duration} a fork "
          f"at each point, taken in turn, c={args.connections}, hello; server on core 0, wrk on core 1; nothing else "
          f"running; runs in {base}", flush=True)
    forks: list[dict] = []
    for r in range(args.rounds):
        for fork in one_round(servers, args, base, r):
            forks.append(fork)
            print("  " + said(fork, r, args), flush=True)
        if args.curves:  # after every round: a long benchmark that stops keeps what it measured
            Path(args.curves).write_text(json.dumps(forks, indent=1))
    if args.shortcut:
        shortcut_report(forks, args.shortcut)
    else:
        report(forks, long=args.long)
    print(f"({(time.monotonic() - began) / 60:.0f} min in all)")


def said(fork: dict, r: int, args) -> str:
    if "error" in fork:
        return f"round {r + 1} {fork['server']} {fork['arm']}: failed: {fork['error']}"
    quiet = fork["quiet_s"] if fork["quiet_s"] is not None else math.nan
    cpu = fork["quiet_cpu_s"] if fork.get("quiet_cpu_s") is not None else math.nan
    text = (f"round {r + 1} {fork['server']:16} {fork['arm']:8} warm after {fork['auto_s']:4.0f} s (primed "
            f"{fork['primed_s'] or 0:3.0f} s, {fork['class']}) {fork['auto_rps']:>8,.0f} req/s | JIT quiet at "
            f"{quiet:4.0f} s (by its CPU {cpu:4.0f} s)")
    if fork["long_rps"] is not None:
        text += f" | after {args.long:.0f} s of load {fork['long_rps']:>8,.0f} req/s"
    return text + ("  FALSE STEADY CALL" if fork["false_steady"] else "")


def report(forks: list[dict], *, long: float) -> None:
    forks = [f for f in forks if "error" not in f]
    servers = list(dict.fromkeys(f["server"] for f in forks))
    print()
    print(f"{'server':24} {'JIT quiet':>9} {'by CPU':>7} {'auto took':>9} {'auto rps':>9} {f'{long:.0f} s rps':>9}  "
          f"false steady calls (by compile time, by CPU), not warm at the limit")
    for server in servers:
        mine = [f for f in forks if f["server"] == server]
        quiet = [f["quiet_s"] for f in mine if f["quiet_s"] is not None]
        cpu = [f["quiet_cpu_s"] for f in mine if f.get("quiet_cpu_s") is not None]
        print(f"{server:24} {statistics.median(quiet) if quiet else math.nan:>8.0f}s "
              f"{statistics.median(cpu) if cpu else math.nan:>6.0f}s "
              f"{statistics.median(f['auto_s'] for f in mine):>8.0f}s "
              f"{statistics.mean(f['auto_rps'] for f in mine):>9,.0f} "
              f"{statistics.mean(f['long_rps'] for f in mine):>9,.0f}"
              f"  {sum(f['false_steady'] for f in mine)} and {sum(f.get('false_cpu', False) for f in mine)} of "
              f"{len(mine)}, {sum(not f['auto_warm'] for f in mine)}")
    print()
    for server in servers:
        mine = [f for f in forks if f["server"] == server]
        print(line(f"{server} auto / {long:.0f} s rps", [f["auto_rps"] / f["long_rps"] for f in mine], 0.97))
    print(line(f"every server, auto / {long:.0f} s rps", [f["auto_rps"] / f["long_rps"] for f in forks], 0.97))
    false, cpu = sum(f["false_steady"] for f in forks), sum(f.get("false_cpu", False) for f in forks)
    print(f"false steady calls: {false} of {len(forks)} forks by compile time, {cpu} by the compiler's CPU "
          f"(goal: none)")
    print("(goal: auto / long >= 0.97 by its interval, and no false steady call in any round)")


def shortcut_report(forks: list[dict], shortcut: str) -> None:
    forks = [f for f in forks if "error" not in f]
    partner, arm = (a for a, _ in arms("x", shortcut))
    everyone: list[float] = []
    print()
    for server in dict.fromkeys(f["server"] for f in forks):
        pairs = [(p, a) for p in forks for a in forks if p["server"] == a["server"] == server
                 and p["arm"] == partner and a["arm"] == arm and p["round"] == a["round"]]
        mine = {name: [f for f in forks if f["server"] == server and f["arm"] == name] for name in (partner, arm)}
        took = {name: statistics.median(f["auto_s"] for f in group) for name, group in mine.items()}
        quiet = {name: statistics.median([f["quiet_s"] for f in group if f["quiet_s"] is not None] or [math.nan])
                 for name, group in mine.items()}
        print(f"{server} {arm} against {partner}: warm after {took[arm]:.0f} s against {took[partner]:.0f} s "
              f"(medians of {len(mine[arm])}), JIT quiet at {quiet[arm]:.0f} s against {quiet[partner]:.0f} s")
        ratios = [a["auto_rps"] / p["auto_rps"] for p, a in pairs]
        everyone.extend(ratios)
        print("  " + equivalence(f"steady throughput {arm} / {partner}", ratios))
    print(equivalence(f"every server, steady throughput {arm} / {partner}", everyone))


def equivalence(name: str, ratios: list[float]) -> str:
    centre, low, high = ratio_interval(ratios, confidence=0.90)
    said = ("equivalent" if 1 - MARGIN <= low and high <= 1 + MARGIN else
            "different" if high < 1 - MARGIN or low > 1 + MARGIN else "not decided: more rounds needed")
    return (f"{name}: {centre:.3f} [{low:.3f}, {high:.3f}] (90% interval over {len(ratios)} rounds; equivalence "
            f"margin {1 - MARGIN:.2f}-{1 + MARGIN:.2f}): {said}")


def replay(fork: dict, share: float) -> dict | None:
    """Where ``auto`` would have called this fork warm had its compiler counted as quiet at ``share``: the rule
    run again over the fork's own slices at the run's load (its priming left as it was), and what the curve
    shows after that call: the throughput of the next 30 s over that of the last 30 s of the curve, and the
    compile time's share of the 30 s after the call."""
    curve = [s for s in fork["curve"] if s.get("t") is not None]
    primes = [i for i, s in enumerate(curve) if s.get("phase") == "prime"]
    origin = curve[primes[-1]] if primes else {"t": 0.0, "compile_s": curve[0].get("compile_s")}
    own = [s for s in curve[primes[-1] + 1 if primes else 0:] if s.get("rps")]
    called = next((i for i in range(1, len(own) + 1)
                   if warmup.judge(own[:i], origin=origin, share=share)["warm"]), None)
    if called is None:
        return None
    at = own[called - 1]["t"]
    after = [s for s in own if at < s["t"] <= at + 30.0]
    last = [s for s in own if s["t"] > own[-1]["t"] - 30.0]
    if not after or not last:
        return None
    later = [s for s in curve if s["t"] <= at + 30.0 and s.get("compile_s") is not None]
    return {"t": at, "ratio": statistics.fmean(s["rps"] for s in after) / statistics.fmean(s["rps"] for s in last),
            "compile_share": (later[-1]["compile_s"] - own[called - 1]["compile_s"]) / max(later[-1]["t"] - at, 1e-9)}


def replays(forks: list[dict], shares: list[float]) -> None:
    """For each candidate quiet share: per server, when auto would call the forks warm, their throughput then
    against the end of the curve, and how much they compiled in the 30 s after the call."""
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
            print(f"  share {share:.2f} {server:24} called at {times} s; next 30 s / last 30 s {centre:.3f} "
                  f"[{low:.3f}, {high:.3f}]; compile share after the call {max(g['compile_share'] for g in calls):.2f} "
                  f"at most; {len(got) - len(calls)} never called")


if __name__ == "__main__":
    main()
