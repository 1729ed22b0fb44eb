"""How much throughput does benchlab's harness cost? Plain wrk against benchlab.run, side by side.

Both sides start the same jar on the same core with taskset, warm it up with wrk for the same time, and
measure with the same wrk command on the same load core; benchlab adds its verify request, its Lua
reporter, the psutil sampling and its storage. The order alternates within pairs (A B, B A, ...), so a
drift of the machine does not favour either side, and the script prints the throughput ratio
benchlab/plain with its 95% interval and whether the goal, 0.98 or more, is met, missed or not decided.

    python3 benchmarks/overhead.py [--server spring-tomcat] [--pairs 6] [--duration 10] [--warmup 30]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import benchlab
from benchlab import backends, cores, process, servers
from figures import line


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
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--connections", type=int, default=64)
    args = parser.parse_args()

    benchlab.build()
    server_cpus, load_cpus = cores.default_split()
    threads = len(load_cpus)
    results = Path(tempfile.mkdtemp(prefix="benchlab-overhead-"))
    ratios = []
    print(f"{args.server}: {args.pairs} pairs, {args.duration}s measure after {args.warmup}s warm-up, "
          f"c={args.connections} t={threads}, server cores {cores.format_cpus(server_cpus)}, "
          f"load cores {cores.format_cpus(load_cpus)}")
    print(f"{'pair':>4}  {'plain wrk rps':>14}  {'benchlab rps':>13}  {'ratio':>6}")
    for pair in range(1, args.pairs + 1):
        def by_hand():
            return plain(args.server, connections=args.connections, threads=threads, duration=args.duration,
                         warmup=args.warmup, server_cpus=server_cpus, load_cpus=load_cpus)

        def by_benchlab():
            return benchlab.run(args.server, "hello", connections=args.connections, threads=threads,
                                duration=f"{args.duration}s", warmup=f"{args.warmup}s", results_dir=results).metrics["rps"]

        if pair % 2:
            a, b = by_hand(), by_benchlab()
        else:
            b, a = by_benchlab(), by_hand()
        ratios.append(b / a)
        print(f"{pair:>4}  {a:>14,.1f}  {b:>13,.1f}  {b / a:>6.3f}  ({'plain' if pair % 2 else 'benchlab'} first)")
    print(line("benchlab/plain rps", ratios, 0.98))

if __name__ == "__main__":
    main()
