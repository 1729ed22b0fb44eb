"""What profiling costs: a server's throughput with async-profiler running against without, in the same forks.

Each fork of each server is started and warmed (``warmup="auto"``), then measures ``--pairs`` pairs of windows, one
under the profiler (as ``compare(profile=True)`` takes its profiled window: async-profiler's cpu event every 1 ms,
started at the load's start and stopped at its end) and one without, the order within a pair alternating (P U, U
P, ...) and reversed from one fork to the next. A fork's ratio is its profiled windows' mean over its plain ones'
(rps; p99 the other way up); the forks' ratios give the geometric mean and a 95% t interval on their logs. The goal
is the issue's: within 2% (the interval inside [0.98, 1.02]); where it is not, the profiled window stays apart from
every statistic, as it is.

    python3 benchmarks/profile_cost.py [--servers spring-tomcat,spring-jetty,spring-undertow] [--forks 3]
        [--pairs 3] [--duration 5s] [--connections 64] [--results DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from figures import ratio_interval

from benchlab.running.fork import Fork, whole
from benchlab.running.options import RunOptions
from benchlab.running.profiler import Profiler
from benchlab.running.spec import prepare

GOAL = (0.98, 1.02)


class Alternating(Fork):
    """A fork whose windows alternate, profiled and plain, starting with a profiled one when ``first``."""

    first = True

    def profiler(self, number, run_dir):
        if (number % 2 == 1) == self.first:
            return Profiler(int(self.instance.metadata["pid"]), run_dir)
        return None


def one_fork(server: str, args, base: Path, k: int) -> dict:
    spec = prepare(server, "hello", RunOptions.of(connections=args.connections, duration=args.duration))
    name = f"{server}-f{k}"
    windows = [(base / name / f"w{i}", f"{name}-w{i}") for i in range(1, 2 * args.pairs + 1)]
    fork = Alternating(spec, windows, repeat=k + 1, echo=lambda line: print("    " + line, flush=True))
    fork.first = k % 2 == 0
    whole(fork)
    if fork.error is not None:
        return {"server": server, "fork": k, "error": str(fork.error).splitlines()[0]}
    kept = [r for r in fork.records if r.status == "ok"]
    profiled = [r for r in kept if r.metrics.get("profiled")]
    plain = [r for r in kept if not r.metrics.get("profiled")]
    return {"server": server, "fork": k, "warmup_s": fork.warmed["seconds"],
            "rps_profiled": statistics.fmean(r.metrics["rps"] for r in profiled),
            "rps_plain": statistics.fmean(r.metrics["rps"] for r in plain),
            "p99_profiled": statistics.fmean(r.metrics["p99"] for r in profiled),
            "p99_plain": statistics.fmean(r.metrics["p99"] for r in plain),
            "jit_profiled": statistics.fmean(r.metrics.get("jit_share") or 0.0 for r in profiled),
            "jit_plain": statistics.fmean(r.metrics.get("jit_share") or 0.0 for r in plain),
            "samples": statistics.fmean(r.metrics["profile_samples"] for r in profiled),
            "retaken": len(fork.retaken)}


def report(rows: list[dict]) -> None:
    print()
    print(f"{'server':<18} {'forks':>5} {'rps profiled/plain [95% CI]':>30} {'p99 profiled/plain [95% CI]':>30}  "
          f"goal rps in [{GOAL[0]}, {GOAL[1]}]")
    for server in dict.fromkeys(r["server"] for r in rows):
        mine = [r for r in rows if r["server"] == server and "error" not in r]
        if not mine:
            print(f"{server:<18} every fork failed")
            continue
        rps = ratio_interval([r["rps_profiled"] / r["rps_plain"] for r in mine])
        p99 = ratio_interval([r["p99_profiled"] / r["p99_plain"] for r in mine])
        met = ("met" if GOAL[0] <= rps[1] and rps[2] <= GOAL[1] else
               "missed" if rps[2] < GOAL[0] or rps[1] > GOAL[1] else "not decided")
        print(f"{server:<18} {len(mine):>5} {rps[0]:>9.3f} [{rps[1]:.3f}, {rps[2]:.3f}]{'':>6} "
              f"{p99[0]:>9.3f} [{p99[1]:.3f}, {p99[2]:.3f}]{'':>6}  {met}")
        print(f"{'':<18} per fork: " + ", ".join(f"{r['rps_plain'] / 1e3:.1f}k/{r['rps_profiled'] / 1e3:.1f}k"
                                                 for r in mine)
              + f"; samples a window {statistics.fmean(r['samples'] for r in mine):.0f}; JIT share "
              f"{statistics.fmean(r['jit_plain'] for r in mine):.1%} plain, "
              f"{statistics.fmean(r['jit_profiled'] for r in mine):.1%} profiled")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="spring-tomcat,spring-jetty,spring-undertow")
    parser.add_argument("--forks", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--duration", default="5s")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--results", default=None, help="keep the runs and rows.json here (default: a temp dir)")
    parser.add_argument("--again", action="store_true", help="print the report of --results/rows.json again")
    args = parser.parse_args()
    base = Path(args.results or tempfile.mkdtemp(prefix="benchlab-profile-cost-"))
    if args.again:
        report(json.loads((base / "rows.json").read_text()))
        return
    began, rows = time.monotonic(), []
    servers = args.servers.split(",")
    for k in range(args.forks):
        for server in servers if k % 2 == 0 else servers[::-1]:
            print(f"fork {k + 1} of {server}", flush=True)
            rows.append(one_fork(server, args, base, k))
            (base / "rows.json").write_text(json.dumps(rows, indent=1))
    report(rows)
    print(f"\n{time.monotonic() - began:.0f} s; runs in {base}; nothing else ran on the machine unless said")


if __name__ == "__main__":
    main()
