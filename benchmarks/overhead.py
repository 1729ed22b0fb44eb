"""How much throughput does benchlab's harness cost? Plain wrk against benchlab.run, side by side.

Both sides start the same jar on the same core with taskset, warm it up with wrk for the same time, and
measure with the same wrk command on the same load core; benchlab adds its verify request, its Lua
reporter, the psutil sampling and its storage. The pairs run interleaved (A B A B ...), and the script
prints the throughput ratio benchlab/plain. Goal: 0.98 or more.

    python3 benchmarks/overhead.py [--server spring-tomcat] [--pairs 3] [--duration 10] [--warmup 5]
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import benchlab
from benchlab import backends, cores, process, servers


def plain(server: str, *, connections: int, threads: int, duration: int, warmup: int, server_cpus, load_cpus) -> float:
    """The run a person does by hand: java -jar under taskset, wrk twice, read Requests/sec."""
    jar = servers.get(server).jar
    port = backends.free_port()
    with tempfile.TemporaryFile() as log:
        java = process.start(["java", "-jar", jar, f"--server.port={port}", "--server.address=127.0.0.1"],
                             cpus=server_cpus, stdout=log, stderr=log)
        try:
            url = f"http://127.0.0.1:{port}/hello"
            while True:
                try:
                    urllib.request.urlopen(url, timeout=1).read()
                    break
                except OSError:
                    time.sleep(0.01)
            wrk = ["wrk", f"-t{threads}", f"-c{connections}", "--latency"]
            if warmup:
                subprocess.run(process.pinned([*wrk, f"-d{warmup}s", url], load_cpus), capture_output=True, check=True)
            out = subprocess.run(process.pinned([*wrk, f"-d{duration}s", url], load_cpus), capture_output=True,
                                 text=True, check=True).stdout
        finally:
            process.stop(java)
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="spring-tomcat")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--connections", type=int, default=64)
    args = parser.parse_args()

    benchlab.build()
    server_cpus, load_cpus = cores.default_split()
    threads = len(load_cpus)
    results = Path(tempfile.mkdtemp(prefix="benchlab-overhead-"))
    ratios, plain_rps, harness_rps = [], [], []
    print(f"{args.server}: {args.pairs} pairs, {args.duration}s measure after {args.warmup}s warm-up, "
          f"c={args.connections} t={threads}, server cores {cores.format_cpus(server_cpus)}, "
          f"load cores {cores.format_cpus(load_cpus)}")
    print(f"{'pair':>4}  {'plain wrk rps':>14}  {'benchlab rps':>13}  {'ratio':>6}")
    for pair in range(1, args.pairs + 1):
        a = plain(args.server, connections=args.connections, threads=threads, duration=args.duration,
                  warmup=args.warmup, server_cpus=server_cpus, load_cpus=load_cpus)
        b = benchlab.run(args.server, "hello", connections=args.connections, threads=threads,
                         duration=f"{args.duration}s", warmup=f"{args.warmup}s", results_dir=results).metrics["rps"]
        plain_rps.append(a)
        harness_rps.append(b)
        ratios.append(b / a)
        print(f"{pair:>4}  {a:>14,.1f}  {b:>13,.1f}  {b / a:>6.3f}")
    print(f"mean ratio benchlab/plain: {statistics.mean(harness_rps) / statistics.mean(plain_rps):.3f} "
          f"(median of pair ratios {statistics.median(ratios):.3f}; goal >= 0.98)")


if __name__ == "__main__":
    main()
