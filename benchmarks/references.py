"""The machine's ceiling: each reference server's throughput beside the Spring servers', and a native warm-up's cost.

One comparison (``benchlab.compare``: every server once a round, rounds interleaved A B C A B C, each fork a fresh
server warmed by ``--warmup``) of the Spring servers and the native references, nginx and go-nethttp, at
``--connections`` on one server core, wrk on the other. It prints:

- each server's requests/s with its 95% interval, and its share of the fastest reference's in the same cell with
  the share's interval (:mod:`benchlab.analysis.ceiling`), and the flags that limit what a figure means (a
  reference that saturates wrk is ``generator_bound``: its share is then a floor);
- the warm-up each native fork paid under ``warmup="auto"`` (:mod:`benchlab.running.warmup`, rule
  ``native-flat``), its mean with a 95% interval, against the goal: below the 30 s the throughput rule's steady
  segment cost at least (30-56 s measured before it, issue 38).

    python3 benchmarks/references.py [--servers spring-tomcat,spring-jetty,spring-undertow,nginx,go-nethttp]
                                     [--repeats 5] [--duration 10s] [--warmup auto] [--connections 64]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import benchlab  # noqa: E402
from benchlab.schema import REFERENCES  # noqa: E402

#: The warm-up a native server paid under the throughput rule (its 30 s steady segment): the goal is below it.
BEFORE = (30.0, 56.0)
GOAL_S = 30.0


def mean_interval(values: list[float]) -> tuple[float, float, float]:
    """(mean, low, high): a Student t interval at 95%."""
    from scipy import stats

    centre = statistics.mean(values)
    if len(values) < 2:
        return centre, math.nan, math.nan
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return centre, centre - half, centre + half


def share_text(server: str, row) -> str:
    """The share of the ceiling; a reference without one was left out by its flags (nginx saturating wrk)."""
    if isinstance(row.get("reference"), str):
        return f"{row['share']:.1%} [{row['share_low']:.1%}, {row['share_high']:.1%}] of {row['reference']}"
    return "- (left out: see its flags)" if server in REFERENCES else "-"


def throughput(suite) -> None:
    summary = suite.summary(["rps"]).set_index("server")
    flags = suite.flags()
    print(f"{'server':18} {'requests/s [95% CI]':32} {'share of the fastest reference [95% CI]':44} flags")
    for server, row in summary.iterrows():
        rps = f"{row['mean']:,.0f} [{row['ci_low']:,.0f}, {row['ci_high']:,.0f}]"
        mine = sorted(set(flags[flags["server"] == server]["flag"])) if len(flags) else []
        print(f"{server:18} {rps:32} {share_text(server, row):44} {', '.join(mine) or '-'}")
    print()
    for text in suite.ceiling()["text"]:
        print("  " + text)


def warmups(suite) -> None:
    natives = [r for r in suite.records if r.status == "ok" and r.params["server"] in REFERENCES
               and (r.params.get("window") or 1) == 1 and r.params.get("warmup") == "auto"]
    if not natives:
        print("\nno native fork warmed with warmup=auto: give --warmup auto for the warm-up figure")
        return
    print("\nnative warm-up under warmup=auto:")
    for server in REFERENCES:
        forks = [r for r in natives if r.params["server"] == server]
        if not forks:
            continue
        took = [r.metrics["warmup_s"] for r in forks]
        rules = sorted({r.metadata["warmup"]["rule"] for r in forks})
        centre, low, high = mean_interval(took)
        verdict = ("met" if high < GOAL_S else "missed" if low >= GOAL_S else "not decided: more forks needed"
                   ) if not math.isnan(high) else "not decided (one fork)"
        print(f"  {server:12} {centre:5.1f} s [{low:.1f}, {high:.1f}] over {len(took)} forks "
              f"({', '.join(f'{t:.0f}' for t in took)} s; rule {', '.join(rules)}); before: {BEFORE[0]:.0f}-"
              f"{BEFORE[1]:.0f} s; goal < {GOAL_S:.0f} s: {verdict}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="spring-tomcat,spring-jetty,spring-undertow,nginx,go-nethttp")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--duration", default="10s")
    parser.add_argument("--warmup", default="auto")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--results", default=None, help="where the runs go (default: a new temporary folder)")
    args = parser.parse_args()

    benchlab.build()
    results = Path(args.results or tempfile.mkdtemp(prefix="benchlab-references-"))
    servers = args.servers.split(",")
    suite = benchlab.compare(servers, connections=[args.connections], repeats=args.repeats, duration=args.duration,
                             warmup=args.warmup, server_cpus="0", load_cpus="1", results_dir=results, progress=False)
    print(f"\n{len(servers)} servers, /hello at {args.connections} connections, {args.repeats} interleaved rounds of "
          f"{args.duration} after warmup {args.warmup}; server on core 0, wrk on core 1; runs in {results}\n")
    throughput(suite)
    warmups(suite)
    failed = int((suite.runs["status"] == "failed").sum())
    retaken = int((suite.runs["status"] == "retaken").sum())
    if retaken:
        print(f"\n{retaken} windows retaken (disturbed, measured again, in no statistic): see benchlab show {results}")
    if failed:
        print(f"\n{failed} runs failed: see benchlab show {results}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
