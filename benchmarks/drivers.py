"""Each load driver's throughput as a ratio to wrk's, against the same server, interleaved, with its own CPU.

One Spring Boot server (core 0 by default) serves every run; the load tools take turns on the other core,
round after round (wrk, h2load, JMeter, vegeta, then again), so a drift of the machine hits them alike.
Each round's ratio is the driver's requests/s over wrk's in that round; the table shows the median.

- h2load, JMeter and wrk-count (wrk's own count mode, benchlab's Lua counter: ``driver="wrk"`` with
  ``load="count"``) are closed loops of a fixed count: they send as many requests as wrk answered in its
  round. Rounds alternate their order (forward, then backward), and each driver's ratio to wrk is
  printed with its 95% interval over the rounds.
- vegeta (an open loop) is offered a fifth of wrk's rate of that round (--open-share). vegeta costs about
  20% of a core per 1,000 requests/s, so from one load core it cannot offer much more than 3,000/s: asked
  for half or 90% of wrk's rate it falls behind, its workers and connections pile up and the run collapses
  (measured: 0-36% of the rate reached, p99 of 6-27 s; the run's note and load CPU say so). Its "reached"
  column is achieved over offered.

A driver whose own CPU is near 100% of its core is what limits the figure, not the server. "cpu/1k" is the
driver's own CPU per 1,000 requests/s (percent of one core): how costly each tool is, whatever its rate.

    flock /tmp/benchlab-heavy.lock python3 benchmarks/drivers.py [--rounds 4] [--seconds 5] [--connections 50]
        [--drivers wrk,wrk-count,h2load] [--server spring-tomcat]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import ratio_interval  # noqa: E402

import benchlab  # noqa: E402
from benchlab.running import backends, servers  # noqa: E402
from benchlab.running.backends.local import LocalBackend  # noqa: E402

DRIVERS = ("wrk", "wrk-count", "h2load", "jmeter", "vegeta")
MODELS = {"wrk": "duration", "wrk-count": "count", "h2load": "count", "jmeter": "count", "vegeta": "rate"}


def one(driver: str, server, *, seconds: float, connections: int, wrk_rps: float, results: Path,
        open_share: float = 0.2):
    common = dict(results_dir=results, warmup="0s", server_cpus="0", load_cpus="1")
    if driver == "wrk":
        return benchlab.run(server, connections=connections, threads=1, duration=f"{seconds}s", **common)
    if driver in ("wrk-count", "h2load", "jmeter"):
        loops = max(1, round(wrk_rps * seconds / connections))
        return benchlab.run(server, load="count", users=connections, loops=loops, driver=driver.split("-")[0],
                            **common)
    return benchlab.run(server, load="rate", rate=round(wrk_rps * open_share), duration=f"{seconds}s", **common)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="spring-jetty")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds of unrecorded wrk first")
    parser.add_argument("--open-share", type=float, default=0.2, help="vegeta's rate as a share of wrk's")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--drivers", default=",".join(DRIVERS), help="a comma list; wrk always runs first")
    args = parser.parse_args()
    chosen = ["wrk", *[d for d in args.drivers.split(",") if d and d != "wrk"]]
    unknown = sorted(set(chosen) - set(DRIVERS))
    if unknown:
        parser.error(f"unknown driver {', '.join(unknown)}: choose from {', '.join(DRIVERS)}")

    benchlab.build()
    results = Path(tempfile.mkdtemp(prefix="benchlab-drivers-"))
    launch = backends.Launch(run_id="drivers-bench", port=backends.free_port(), cpus=(0,),
                             log_path=results / "server.log")
    instance = LocalBackend().start(servers.get(args.server), launch)
    rows: dict[str, list] = {d: [] for d in chosen}
    try:
        target = benchlab.Server.from_url(instance.url + "/hello", name=args.server)
        # An unrecorded wrk run first, so the JIT has settled before the first round.
        one("wrk", target, seconds=args.warmup, connections=args.connections, wrk_rps=0, results=results)
        for round_ in range(1, args.rounds + 1):
            wrk_rps = None
            others = chosen[1:] if round_ % 2 else chosen[:0:-1]  # forward, then backward: drift hits all alike
            for driver in ["wrk", *others]:
                run = one(driver, target, seconds=args.seconds, connections=args.connections,
                          wrk_rps=wrk_rps or 0, results=results, open_share=args.open_share)
                m = run.metrics
                if driver == "wrk":
                    wrk_rps = m["rps"]
                reached = m["rps"] / m["target_rps"] if m.get("target_rps") else None
                rows[driver].append((m["rps"], m["rps"] / wrk_rps, m.get("load_cpu_mean"), m["p99"], reached))
                print(f"round {round_} {driver:9} {m['rps']:10,.0f} req/s  ratio {m['rps'] / wrk_rps:5.2f}  "
                      f"load cpu {m.get('load_cpu_mean') or 0:5.0f}%  p99 {m['p99'] * 1000:8.2f} ms"
                      + (f"  reached {reached:.0%} of {m['target_rps']:,.0f}/s" if reached else ""), flush=True)
    finally:
        instance.stop()

    print(f"\n{args.server}, /hello, {args.connections} connections, {args.seconds:g} s a run, "
          f"{args.rounds} interleaved rounds; server on core 0, load on core 1")
    print(f"{'driver':10} {'model':9} {'req/s':>10} {'ratio to wrk':>13} {'own cpu':>8} {'cpu/1k':>7} {'p99':>11} "
          f"{'reached':>8}  ratio to wrk, 95% interval")
    for driver, samples in rows.items():
        model = MODELS[driver]
        centre, low, high = ratio_interval([s[1] for s in samples])
        cpus = [s[2] for s in samples if s[2] is not None]
        print(f"{driver:10} {model:9} {statistics.median(s[0] for s in samples):10,.0f} "
              f"{statistics.median(s[1] for s in samples):13.2f} "
              f"{(statistics.median(cpus) if cpus else float('nan')):7.0f}% "
              f"{statistics.median(s[2] / (s[0] / 1000) for s in samples if s[2] is not None and s[0]):6.1f}% "
              f"{statistics.median(s[3] for s in samples) * 1000:8.2f} ms "
              + (f"{statistics.median(s[4] for s in samples):8.0%}" if samples[0][4] is not None else f"{'-':>8}")
              + ("" if driver == "wrk" else f"  {centre:.3f} [{low:.3f}, {high:.3f}]"))
    print(f"(results under {results})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
