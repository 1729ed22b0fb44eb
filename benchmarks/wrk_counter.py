"""What does counting answers per second cost wrk? Its Lua response() callback against no callback.

A measurement is steady when its throughput does not drift from its first half to its second; wrk can
only tell that through a Lua response() callback that counts answers per second, which runs once per
answer in wrk's threads. This starts one server, warms it, then runs wrk alternately with benchlab's
reporter alone and with the counter added (A B, B A, ...) and prints the throughput ratio with its
interval. Goal for turning it on by default: a cost under 2% (ratio 0.98 or more).

    python3 benchmarks/wrk_counter.py [--server spring-undertow] [--pairs 8] [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from pathlib import Path

from figures import line

import benchlab
from benchlab import cores
from benchlab.running import backends, process, servers
from benchlab.running.drivers import wrk as wrk_driver

COUNTER = r"""
local counts = {}
response = function(status, headers, body)
  local second = os.time()
  counts[second] = (counts[second] or 0) + 1
end
"""


def rps(script: Path, url: str, *, connections: int, seconds: int, load_cpus) -> float:
    argv = ["wrk", f"-t{len(load_cpus)}", f"-c{connections}", f"-d{seconds}s", "-s", str(script), url]
    out = process.run(argv, cpus=load_cpus, timeout=seconds + 60).stdout
    report = json.loads(re.search(r"BENCHLAB_JSON (.*)", out).group(1))
    return report["requests"] / (report["duration_us"] / 1e6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="spring-undertow")
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=60)
    args = parser.parse_args()

    benchlab.build()
    server_cpus, load_cpus = cores.default_split()
    scenario = servers.scenario("hello")
    folder = Path(tempfile.mkdtemp(prefix="benchlab-counter-"))
    plain, counted = folder / "plain.lua", folder / "counted.lua"
    plain.write_text(wrk_driver.script(scenario))
    counted.write_text(COUNTER + wrk_driver.script(scenario))
    backend = backends.get("local")
    launch = backends.Launch(run_id="counter", port=backends.free_port(), cpus=server_cpus,
                             log_path=folder / "server.log")
    instance = backend.start(servers.get(args.server), launch)
    try:
        url = instance.url + scenario.path
        rps(plain, url, connections=args.connections, seconds=args.warmup, load_cpus=load_cpus)
        ratios = []
        print(f"{args.server}, c={args.connections}, {args.seconds} s a run after {args.warmup} s warm-up")
        for pair in range(1, args.pairs + 1):
            if pair % 2:
                a = rps(plain, url, connections=args.connections, seconds=args.seconds, load_cpus=load_cpus)
                b = rps(counted, url, connections=args.connections, seconds=args.seconds, load_cpus=load_cpus)
            else:
                b = rps(counted, url, connections=args.connections, seconds=args.seconds, load_cpus=load_cpus)
                a = rps(plain, url, connections=args.connections, seconds=args.seconds, load_cpus=load_cpus)
            ratios.append(b / a)
            print(f"  pair {pair}: plain {a:,.0f} req/s, with the counter {b:,.0f} req/s, ratio {b / a:.3f}")
        print(line("with counter / plain rps", ratios, 0.98))
    finally:
        instance.stop()


if __name__ == "__main__":
    main()
