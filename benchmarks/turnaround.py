"""How long does a compare take beyond its load? Wall time against pure load time (warm-up + measure).

The difference is what starting, verifying, stopping and storing cost per run. Goal: at most 1.25x.

    python3 benchmarks/turnaround.py [--repeats 2] [--duration 20] [--warmup 10]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import benchlab


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="spring-tomcat,spring-jetty,spring-undertow")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--duration", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--connections", type=int, default=64)
    args = parser.parse_args()

    benchlab.build()
    servers = args.servers.split(",")
    began = time.monotonic()
    suite = benchlab.compare(servers, ["hello"], [args.connections], repeats=args.repeats,
                             duration=f"{args.duration}s", warmup=f"{args.warmup}s", progress=False,
                             results_dir=tempfile.mkdtemp(prefix="benchlab-turnaround-"))
    wall = time.monotonic() - began
    runs = len(suite.runs)
    load = runs * (args.duration + args.warmup)
    startup = suite.runs["startup_ms"].mean() / 1000.0
    print(f"{runs} runs of {args.warmup}s warm-up + {args.duration}s measure: load {load:.0f} s, wall {wall:.0f} s")
    print(f"mean server startup {startup:.1f} s; other overhead {(wall - load) / runs - startup:.1f} s per run")
    print(f"wall / load: {wall / load:.3f} (goal <= 1.25)")


if __name__ == "__main__":
    main()
