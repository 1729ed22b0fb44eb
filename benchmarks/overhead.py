"""What do benchlab's harness and the JVM's counters cost? Side by side against one warm server.

A freshly warmed JVM per side measures fork-to-fork noise, not a cost (forks of one server lie up to 2x
apart here): the last version of this script, with a 30 s-warmed JVM per side, gave 1.030 [0.836, 1.270]
over 6 pairs, which decides nothing. So one JVM is started once, warmed with ``warmup="auto"`` and then
for ``--settle`` more seconds, and kept for every measurement. Each round measures it three ways, in an
order that rotates from round to round:

- ``plain``: the wrk command a person runs by hand, nothing sampled;
- ``harness``: benchlab's measurement (its wrk with the Lua reporter, the monitor sampling CPU, RSS and
  bytes of both sides every 250 ms), without the JVM's counters;
- ``counters``: the same, with the monitor also reading the JVM's hsperfdata every 250 ms.

It prints the ratios harness / plain (goal >= 0.98) and counters / harness (goal: no cost, its interval
around 1 and within 0.98-1.02), each with its 95% interval over the rounds.

    python3 benchmarks/overhead.py [--server spring-tomcat] [--rounds 8] [--duration 10] [--settle 60]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
import time
from pathlib import Path

from figures import line

from benchlab.running import backends, drivers, jars, process, warmup
from benchlab.running.monitor import Monitor
from benchlab.running.spec import prepare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="spring-tomcat")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--settle", type=int, default=60, help="seconds of load after auto says warm")
    parser.add_argument("--connections", type=int, default=64)
    args = parser.parse_args()

    spec = prepare(args.server, "hello", connections=args.connections, duration=f"{args.duration}s")
    jars.ensure_built(spec.server, java=spec.server_java, cds=spec.cds)
    driver = drivers.get(spec.driver, spec.load.model)
    workdir = Path(tempfile.mkdtemp(prefix="benchlab-overhead-"))
    instance = backends.get("local").start(spec.server, spec.launch("overhead", workdir / "server.log"))
    jvm = instance.counters()
    url = instance.url + spec.scenario.path
    threads = spec.load.threads

    def plain() -> float:
        argv = process.pinned(["wrk", f"-t{threads}", f"-c{args.connections}", f"-d{args.duration}s", "--latency", url],
                              spec.load_cpus)
        out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=args.duration + 60).stdout
        return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))

    def harness(counters) -> float:
        with Monitor(spec.sample_interval) as monitor:
            monitor.watch("server", instance.probe)
            monitor.watch_counters(counters)
            metrics, _ = drivers.execute(driver, instance.url, spec.scenario, spec.load, cpus=spec.load_cpus,
                                         workdir=workdir, phase="measure", monitor=monitor)
        if counters is not None:
            assert len(monitor.counters) >= args.duration * 2, "the counters were read"
        return metrics["rps"]

    sides = {"plain": plain, "harness": lambda: harness(None), "counters": lambda: harness(jvm)}
    try:
        began = time.monotonic()
        warmed = warmup.warm_up(instance.url, spec.scenario, spec.load, cpus=spec.load_cpus, workdir=workdir,
                                perfdata=jvm)
        drivers.execute(drivers.tool("wrk"), instance.url, spec.scenario, warmup._warming_load(spec.load, args.settle),
                        cpus=spec.load_cpus, workdir=workdir, phase="warmup")
        print(f"{args.server}: one JVM, warm after {warmed['seconds']:.0f} s ({warmed['class']}, warm: "
              f"{warmed['steady']}) and {args.settle} s more; {args.rounds} rounds of plain / harness / counters, "
              f"{args.duration} s each, c={args.connections}, server cores {spec.server_cpus}, load cores "
              f"{spec.load_cpus}; nothing else running", flush=True)
        names = list(sides)
        figures: dict[str, list[float]] = {name: [] for name in names}
        for r in range(args.rounds):
            order = names[r % 3:] + names[:r % 3]
            for name in order:
                figures[name].append(sides[name]())
            print(f"  round {r + 1}: " + ", ".join(f"{n} {figures[n][-1]:,.0f}" for n in order) + " req/s", flush=True)
        print(f"(the JVM ran {time.monotonic() - began:.0f} s in all)")
    finally:
        if jvm is not None:
            jvm.close()
        instance.stop()
    print(line("harness / plain rps", [h / p for h, p in zip(figures["harness"], figures["plain"])], 0.98))
    counters = [c / h for c, h in zip(figures["counters"], figures["harness"])]
    print(line("counters / harness rps", counters, 0.98))
    print(line("counters / harness rps", counters, 1.02, at_least=False))
    print("(goals: the harness costs at most 2%; the counters cost nothing: their ratio within 0.98-1.02)")


if __name__ == "__main__":
    main()
