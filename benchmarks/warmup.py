"""How warm is warm? Each server's throughput after a 15 s, 30 s and 60 s warm-up and after warmup="auto".

On one core a JVM is far from steady after 10 s. This runs every server with each warm-up, interleaved
(server A at 15 s, B at 15 s, ..., A at 30 s, ...), and prints per server the rps after each, how long
"auto" took, and auto's rps against the 60 s figure. Goal: auto within 3% of the 60 s figure.

    python3 benchmarks/warmup.py [--servers spring-tomcat,spring-jetty,spring-undertow] [--rounds 1]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import benchlab
from figures import line

WARMUPS = ("15s", "30s", "60s", "auto")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default=",".join(benchlab.servers.BUILTINS))
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--duration", default="10s")
    parser.add_argument("--connections", type=int, default=200)
    args = parser.parse_args()

    servers = args.servers.split(",")
    results = Path(tempfile.mkdtemp(prefix="benchlab-warmup-"))
    rps: dict[tuple[str, str], list[float]] = {}
    took: dict[str, list[float]] = {}
    print(f"{len(servers)} servers x warm-ups {', '.join(WARMUPS)}, {args.rounds} round(s), measure {args.duration}, "
          f"c={args.connections}")
    for _ in range(args.rounds):
        for warmup in WARMUPS:
            for server in servers:
                run = benchlab.run(server, "hello", connections=args.connections, duration=args.duration,
                                   warmup=warmup, results_dir=results)
                rps.setdefault((server, warmup), []).append(run.metrics["rps"])
                if warmup == "auto":
                    took.setdefault(server, []).append(run.metrics["warmup_s"])
                print(f"  {server:16} warm-up {warmup:>4}: {run.metrics['rps']:>9,.0f} req/s"
                      + (f" (auto took {run.metrics['warmup_s']:.0f} s, steady: {run.metrics['warm']})"
                         if warmup == "auto" else ""), flush=True)
    print()
    print(f"{'server':16} " + " ".join(f"{w:>9}" for w in WARMUPS) + "  auto took")
    for server in servers:
        print(f"{server:16} " + " ".join(f"{statistics.mean(rps[(server, w)]):>9,.0f}" for w in WARMUPS)
              + f"  {statistics.mean(took[server]):.0f} s")
    print()
    for server in servers:
        ratios = [a / b for a, b in zip(rps[(server, "auto")], rps[(server, "60s")])]
        print(line(f"{server} auto/60s rps", ratios, 0.97))
    print("(goal: auto within 3% of the 60 s figure, i.e. the ratio at 0.97 or more)")


if __name__ == "__main__":
    main()
