"""What do benchlab's harness and the JVM's counters cost? Side by side against one warm server.

A freshly warmed JVM per side measures fork-to-fork noise, not a cost (forks of one server lie up to 2x
apart here): a version of this script with a 30 s-warmed JVM per side gave 1.030 [0.836, 1.270] over 6 pairs,
and the next, one warm JVM and three sides of 10 s in 6 rounds, 0.951 [0.784, 1.153]: a warm JVM's windows
drift slowly (10 s windows ranged 15.8k-25.0k req/s), so sides measured a minute apart differ by that drift.
So one JVM is started once, warmed with ``warmup="auto"`` and then for ``--settle`` more seconds, and kept
for every measurement; each round measures it every way, in an order that rotates from round to round, in
short windows, so the two sides of a ratio are seconds apart and share the drift; and there are many rounds.

- ``plain``: the wrk command a person runs by hand, nothing sampled;
- ``harness``: benchlab's measurement (its wrk with the Lua reporter, the monitor sampling CPU, RSS and
  bytes of both sides every 250 ms), without the JVM's counters;
- ``counters``: the same, with the monitor also reading the JVM's counters every 250 ms (hsperfdata, and the
  compiler threads' CPU from ``/proc``), as every run does;
- ``counters x100``: the same with a second reader every 2.5 ms, a hundred times the dose: a cost too small
  to see at 1x shows at 100x, and a hundredth of it is what 1x costs.

It prints the ratios with their 95% intervals over the rounds (each round's sides are adjacent windows):
harness / plain (goal >= 0.98), counters / harness (goal: within 0.98-1.02), counters x100 / harness and
the cost of 1x it implies; and what a read of the counters costs the reading process, timed directly.

    python3 benchmarks/overhead.py [--server spring-tomcat] [--rounds 40] [--duration 5] [--settle 60]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from figures import line, ratio_interval

from benchlab.running import backends, drivers, jars, process, warmup
from benchlab.running.monitor import Monitor
from benchlab.running.options import RunOptions
from benchlab.running.spec import prepare

DOSE = 100


class Dose:
    """A second reader of the counters, every ``interval`` seconds, while the window runs."""

    def __init__(self, jvm, interval: float):
        self.jvm, self.interval, self.reads = jvm, interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.jvm.sample()
            self.reads += 1

    def __enter__(self) -> Dose:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def per_read(jvm, reads: int = 2000) -> float:
    """Seconds of this process's CPU one read of the counters takes (hsperfdata and the compiler threads)."""
    began = time.process_time()
    for _ in range(reads):
        jvm.sample()
    return (time.process_time() - began) / reads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="spring-tomcat")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--settle", type=int, default=60, help="seconds of load after auto says warm")
    parser.add_argument("--connections", type=int, default=64)
    args = parser.parse_args()

    spec = prepare(args.server, "hello", RunOptions(connections=args.connections, duration=f"{args.duration}s"))
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

    def harness(counters, dose: float | None = None) -> float:
        with Monitor(spec.sample_interval) as monitor:
            monitor.watch("server", instance.probe)
            monitor.watch_counters(counters)
            if dose:
                with Dose(counters, dose):
                    metrics, _ = drivers.execute(driver, instance.url, spec.scenario, spec.load, cpus=spec.load_cpus,
                                                 workdir=workdir, phase="measure", monitor=monitor)
            else:
                metrics, _ = drivers.execute(driver, instance.url, spec.scenario, spec.load, cpus=spec.load_cpus,
                                             workdir=workdir, phase="measure", monitor=monitor)
        if counters is not None:
            assert len(monitor.counters) >= args.duration * 2, "the counters were read"
        return metrics["rps"]

    sides = {"plain": plain, "harness": lambda: harness(None), "counters": lambda: harness(jvm),
             f"counters x{DOSE}": lambda: harness(jvm, spec.sample_interval / DOSE)}
    try:
        warmed = warmup.warm_up(instance.url, spec.scenario, spec.load, cpus=spec.load_cpus, workdir=workdir,
                                perfdata=jvm)
        drivers.execute(drivers.tool("wrk"), instance.url, spec.scenario, warmup._warming_load(spec.load, args.settle),
                        cpus=spec.load_cpus, workdir=workdir, phase="warmup")
        print(f"{args.server}: one JVM, warm after {warmed['seconds']:.0f} s ({warmed['class']}, warm: "
              f"{warmed['steady']}) and {args.settle} s more; {args.rounds} rounds of {', '.join(sides)}, "
              f"{args.duration} s each, in rotating order, c={args.connections}, server cores {spec.server_cpus}, "
              f"load cores {spec.load_cpus}; nothing else running", flush=True)
        began = time.monotonic()
        names = list(sides)
        figures: dict[str, list[float]] = {name: [] for name in names}
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                figures[name].append(sides[name]())
            print(f"  round {r + 1}: " + ", ".join(f"{n} {figures[n][-1]:,.0f}" for n in order) + " req/s", flush=True)
        print(f"(the rounds took {time.monotonic() - began:.0f} s)")
        read_s = per_read(jvm)
        threads_now = len(list(Path(f"/proc/{instance.metadata['pid']}/task").iterdir()))
    finally:
        if jvm is not None:
            jvm.close()
        instance.stop()
    ratio = lambda a, b: [x / y for x, y in zip(figures[a], figures[b])]  # noqa: E731
    print(line("harness / plain rps", ratio("harness", "plain"), 0.98))
    counters = ratio("counters", "harness")
    print(line("counters / harness rps", counters, 0.98))
    print(line("counters / harness rps", counters, 1.02, at_least=False))
    dosed = ratio(f"counters x{DOSE}", "harness")
    centre, low, high = ratio_interval(dosed)
    print(line(f"counters x{DOSE} / harness rps", dosed, 0.98))
    print(f"so 1x costs at most {max(0.0, 1 - low) / DOSE:.3%} of the throughput (a hundredth of the x{DOSE} "
          f"interval's lower end; its centre {(1 - centre) / DOSE:+.3%})")
    reads = 1 / spec.sample_interval
    print(f"a read of the counters costs the reading process {read_s * 1e6:.0f} us of CPU (a JVM of {threads_now} "
          f"threads); at {reads:.0f} reads/s that is {read_s * reads:.3%} of one core (benchlab's process is not "
          "pinned), and the JVM does no work for it")
    print("(goals: the harness costs at most 2%; the counters cost nothing: their ratio within 0.98-1.02)")


if __name__ == "__main__":
    main()
