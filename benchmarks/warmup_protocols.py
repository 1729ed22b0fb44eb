"""Warm-up protocols: how soon is a JVM warm under each ``warming=``, and is it then as fast as after a long warm-up?

Each round starts, per server, one fork of every protocol (``warmup="auto"`` with ``warming=`` each of
``--warmings``) and, unless ``--long 0``, one fork warmed by ``--long`` seconds of the run's own load (a fixed
warm-up: one wrk invocation at full load, the reference steady state). The forks of a round are alive together
(:mod:`benchlab.running.rounds`): started and warmed in turn (the order alternating by round), the ones that waited
resumed, then ``--windows`` windows of each taken in turn, so a protocol's fork and its long partner are measured
over the same minutes. Per protocol and server it prints:

- the warm-up's median wall time and what a fork cost before its first window (start, verify, warm-up, resume),
  against the goal of at most 30 s a fork;
- the steady state against the long warm-up's: the rounds' ratios of fork means (rps and p99), geometric mean
  and 95% t interval on the log ratios; a protocol is *eligible* only if the rps interval lies within
  [0.98, 1.02] for every server.

Fork-to-fork differences of one JVM (the JIT's decisions, code layout) are 2-5% here, so eligibility needs many
rounds; the script says "not decided" when the interval is too wide to say either way.

``--later S`` asks the rule's question inside one fork, free of those differences: is a fork, when ``warmup="auto"``
calls it warm, already what it will be? Each round measures, per server (the order alternating by round), one fork
warmed by ``auto`` (``--warmings``' first): ``--windows`` windows as soon as the rule calls it warm, then the run's
own load at full rate until ``S`` s after its warm-up began, then ``--windows`` windows more. The forks' ratios
(first windows' mean over the later ones', rps and p99), with a 95% t interval per server and over all forks, are
eligible in [0.98, 1.02]; the compile time the JIT added while held says whether it had more to do.

    python3 benchmarks/warmup_protocols.py [--servers spring-tomcat,spring-jetty,spring-undertow]
        [--warmings jit-first] [--rounds 8] [--first 1] [--windows 4] [--duration 5s] [--connections 16] [--long 180]
        [--results DIR]
    python3 benchmarks/warmup_protocols.py --later 180 [--servers ...] [--rounds 4] [--windows 4] [--results DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import time
from pathlib import Path

from figures import ratio_interval

from benchlab.running import drivers, rounds, warmup
from benchlab.running.fork import Fork
from benchlab.running.options import RunOptions
from benchlab.running.spec import prepare

GOAL_S = 30.0
BAND = (0.98, 1.02)


def arms(warmings: list[str], long: float) -> list[tuple[str, dict]]:
    """(arm, run options) of one server's forks in a round: each protocol, then the long warm-up."""
    chosen = [(w, {"warmup": "auto", "warming": w}) for w in warmings]
    return chosen + ([("long", {"warmup": f"{long:g}s"})] if long > 0 else [])


def one_round(server: str, args, base: Path, r: int) -> list[dict]:
    plan = arms(args.warmings.split(","), args.long)
    plan = plan if r % 2 == 0 else plan[::-1]
    forks = []
    for arm, options in plan:
        spec = prepare(server, "hello", RunOptions.of(connections=args.connections, duration=args.duration,
                                                      retakes=2, **options))
        name = f"{server}-{arm}-r{r}"
        windows = [(base / name / f"w{k}", f"{name}-w{k}") for k in range(1, args.windows + 1)]
        forks.append(Fork(spec, windows, repeat=r + 1, echo=lambda line: print("    " + line, flush=True)))
    rounds.measure(forks)
    return [summary(server, arm, fork, r) for (arm, _), fork in zip(plan, forks)]


def later(server: str, args, base: Path, r: int) -> dict:
    """One fork of ``--later``: its windows as soon as it is called warm, held at full load, its windows again."""
    spec = prepare(server, "hello", RunOptions.of(connections=args.connections, duration=args.duration, retakes=2,
                                                  warmup="auto", warming=args.warmings.split(",")[0]))
    name = f"{server}-later-r{r}"
    windows = [(base / name / f"w{k}", f"{name}-w{k}") for k in range(1, 2 * args.windows + 1)]
    fork, held = Fork(spec, windows, repeat=r + 1, echo=lambda line: print("    " + line, flush=True)), {}

    def hold() -> None:
        seconds = args.later - (time.monotonic() - fork.warm_began)
        before = fork.jvm.read()["compile_s"] if fork.jvm is not None else None
        if seconds > 0:
            drivers.execute(drivers.warmer(spec.load), fork.instance.url, spec.scenario,
                            warmup._warming_load(spec.load, seconds), cpus=spec.load_cpus, workdir=windows[0][0],
                            phase="warmup", runner=fork.runner)
        held.update(held_s=max(seconds, 0.0), compiled_s=None if before is None else
                    fork.jvm.read()["compile_s"] - before)

    with rounds.together([fork]):  # its cores held, started and warmed, stopped however it ends
        for _ in range(args.windows):
            fork.step(fork.window)
        if fork.step(hold):
            while fork.alive() and fork.step(fork.window):
                pass
    row = summary(server, "later", fork, r)
    kept = [(k, run) for k, run in enumerate(fork.records) if run.status == "ok"]
    if "error" in row or len(fork.records) < 2 * args.windows:
        return {**row, "error": row.get("error") or "the fork ended early"}
    for part, chosen in (("first", [run for k, run in kept if k < args.windows]),
                         ("later", [run for k, run in kept if k >= args.windows])):
        row[f"rps_{part}"] = statistics.fmean(run.metrics["rps"] for run in chosen) if chosen else None
        row[f"p99_{part}"] = statistics.fmean(run.metrics["p99"] for run in chosen) if chosen else None
    return {**row, **held}


def report_later(rows: list[dict]) -> None:
    print()
    good = [row for row in rows if "error" not in row and row.get("rps_first") and row.get("rps_later")]
    for server in [*dict.fromkeys(row["server"] for row in good), None]:
        mine = [row for row in good if server is None or row["server"] == server]
        if server is not None:
            print(f"{server}: warm-up median {statistics.median(r['warmup_s'] for r in mine):.0f} s (range "
                  f"{min(r['warmup_s'] for r in mine):.0f}-{max(r['warmup_s'] for r in mine):.0f}), a fork costs "
                  f"{statistics.median(r['fork_s'] for r in mine):.0f} s before its first window (goal <= "
                  f"{GOAL_S:.0f} s); {sum(bool(r['warm']) for r in mine)} of {len(mine)} called warm; the JIT "
                  f"added {max(r['compiled_s'] or 0 for r in mine):.2f} s at most while held")
        label = "all servers " if server is None else ""
        for metric in ("rps", "p99"):
            ratios = [r[f"{metric}_first"] / r[f"{metric}_later"] for r in mine]
            if len(ratios) < 2:
                print(f"  {label}{metric} first/later: {len(ratios)} fork(s), no interval")
                continue
            centre, low, high = ratio_interval(ratios)
            said = ""
            if metric == "rps":
                said = (" within the band" if BAND[0] <= low and high <= BAND[1] else " outside the band"
                        if high < BAND[0] or low > BAND[1] else " not decided: wider than the band")
            print(f"  {label}{metric} first/later: "
                  f"{centre:.3f} [{low:.3f}, {high:.3f}] (95% over {len(ratios)} forks){said}")


def summary(server: str, arm: str, fork: Fork, r: int) -> dict:
    if fork.error is not None or not fork.records:
        return {"server": server, "arm": arm, "round": r, "error": str(fork.error).splitlines()[0]}
    warmed = fork.warmed
    kept = [run for run in fork.records if run.status == "ok"]
    return {"server": server, "arm": arm, "round": r, "warmup_s": warmed["seconds"],
            "resumed_s": warmed.get("resumed_s", 0.0), "fork_s": fork.records[0].metrics.get("fork_s"),
            "warm": warmed.get("steady"), "quiet_s": warmed.get("jit_quiet_s"), "primed_s": warmed.get("primed_s"),
            "favoured": warmed.get("favoured_threads"), "refused": warmed.get("refused"),
            "paused_s": warmed.get("paused_s"), "windows": len(kept),
            "rps": statistics.fmean(run.metrics["rps"] for run in kept) if kept else None,
            "p99": statistics.fmean(run.metrics["p99"] for run in kept) if kept else None}


def report(rows: list[dict], warmings: list[str], long: float) -> None:
    print()
    eligible = {w: True for w in warmings}
    for server in dict.fromkeys(row["server"] for row in rows):
        mine = [row for row in rows if row["server"] == server and "error" not in row]
        for arm in [*warmings, *(["long"] if long > 0 else [])]:
            of = [row for row in mine if row["arm"] == arm]
            if not of:
                continue
            took = statistics.median(row["warmup_s"] for row in of)
            cost = statistics.median(row["fork_s"] for row in of)
            judged = ("a fixed warm-up: not judged" if arm == "long" else
                      f"{sum(bool(r['warm']) for r in of)} of {len(of)} called warm")
            print(f"{server} {arm}: warm-up median {took:.0f} s (range {min(r['warmup_s'] for r in of):.0f}-"
                  f"{max(r['warmup_s'] for r in of):.0f}), a fork costs {cost:.0f} s before its first window "
                  f"(goal <= {GOAL_S:.0f} s); {judged}")
        if long <= 0:
            continue
        for arm in warmings:
            pairs = [(a, b) for a in mine for b in mine if a["arm"] == arm and b["arm"] == "long"
                     and a["round"] == b["round"] and a["rps"] and b["rps"]]
            for metric in ("rps", "p99"):
                ratios = [a[metric] / b[metric] for a, b in pairs]
                if len(ratios) < 2:
                    print(f"  {arm}/long {metric}: {len(ratios)} pair(s), no interval")
                    eligible[arm] = False
                    continue
                centre, low, high = ratio_interval(ratios)
                said = ""
                if metric == "rps":
                    inside = BAND[0] <= low and high <= BAND[1]
                    eligible[arm] &= inside
                    said = (" within the band" if inside else " outside the band" if high < BAND[0] or low > BAND[1]
                            else " not decided: wider than the band")
                print(f"  {arm}/long {metric}: {centre:.3f} [{low:.3f}, {high:.3f}] (95% over {len(ratios)} "
                      f"rounds){said}")
    if long > 0:
        for arm, ok in eligible.items():
            print(f"{arm}: {'eligible' if ok else 'not shown eligible'} (rps within {BAND[0]}-{BAND[1]} of a "
                  f"{long:g} s full-load warm-up for every server)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="spring-tomcat,spring-jetty,spring-undertow")
    parser.add_argument("--warmings", default="jit-first")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--first", type=int, default=1, help="the first round's number (to add rounds to --results)")
    parser.add_argument("--windows", type=int, default=4)
    parser.add_argument("--duration", default="5s")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--long", type=float, default=180.0, help="seconds of the long warm-up (0: none)")
    parser.add_argument("--later", type=float, default=0.0,
                        help="measure each fork as soon as it is warm and again this many seconds after its "
                             "warm-up began (0: the protocols against a long warm-up instead)")
    parser.add_argument("--results", default=None, help="keep the forks' rows here (JSON lines), and the runs")
    parser.add_argument("--again", default=None, help="report the rows stored in this file; run nothing")
    args = parser.parse_args()
    warmings = args.warmings.split(",")
    if args.again:
        rows = [json.loads(line) for line in Path(args.again).read_text().splitlines() if line.strip()]
        report_later(rows) if args.later else report(rows, warmings, args.long)
        return
    base = Path(args.results or tempfile.mkdtemp(prefix="benchlab-warmings-"))
    base.mkdir(parents=True, exist_ok=True)
    began, rows = time.monotonic(), []
    if args.later:
        print(f"{args.rounds} rounds, per server one fork warmed by auto ({warmings[0]}): {args.windows} windows of "
              f"{args.duration} when called warm, held at full load to {args.later:g} s after its warm-up began, "
              f"{args.windows} more; c={args.connections}, hello; server on core 0, wrk on core 1; runs in {base}",
              flush=True)
        for r in range(args.first - 1, args.first - 1 + args.rounds):
            servers = args.servers.split(",")
            for server in servers if r % 2 == 0 else servers[::-1]:
                row = later(server, args, base, r)
                rows.append(row)
                with open(base / "rows.jsonl", "a") as out:
                    out.write(json.dumps(row) + "\n")
                print(f"  round {r + 1} {server}: " + (f"failed: {row['error']}" if "error" in row else
                      f"warm-up {row['warmup_s']:.0f} s, fork {row['fork_s']:.0f} s, first {row['rps_first']:,.0f} "
                      f"req/s, later {row['rps_later']:,.0f} (held {row['held_s']:.0f} s, the JIT added "
                      f"{row['compiled_s'] or 0:.2f} s)"), flush=True)
        report_later(rows)
        print(f"({(time.monotonic() - began) / 60:.0f} min in all)")
        return
    print(f"{args.rounds} rounds, per server one fork of each of {warmings}"
          f"{f' and one warmed {args.long:g} s at full load' if args.long > 0 else ''}, alive together, "
          f"{args.windows} windows of {args.duration} each in turn, c={args.connections}, hello; server on core 0, "
          f"wrk on core 1; runs in {base}", flush=True)
    for r in range(args.first - 1, args.first - 1 + args.rounds):
        for server in args.servers.split(","):
            got = one_round(server, args, base, r)
            rows += got
            with open(base / "rows.jsonl", "a") as out:
                out.writelines(json.dumps(row) + "\n" for row in got)
            print(f"  round {r + 1} {server}: " + "; ".join(
                f"{row['arm']} " + (f"failed: {row['error']}" if "error" in row else
                                    f"warm-up {row['warmup_s']:.0f} s (JIT quiet at "
                                    f"{row['quiet_s'] if row['quiet_s'] is not None else math.nan:.0f} s), fork "
                                    f"{row['fork_s']:.0f} s, {row['rps']:,.0f} req/s, p99 {row['p99'] * 1e3:.2f} ms")
                for row in got), flush=True)
    report(rows, warmings, args.long)
    print(f"({(time.monotonic() - began) / 60:.0f} min in all)")


if __name__ == "__main__":
    main()
