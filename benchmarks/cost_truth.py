"""Does benchlab's CPU per request agree with the kernel's count read by hand? The harness's own cost, measured.

One warm fork of a server, offered one paced rate (vegeta), in windows of two kinds taken in turn, the order
alternating pair by pair:

- ``benchlab``: a window as a comparison measures it (:meth:`benchlab.running.fork.Fork.window`), its monitor
  sampling, its ``cpu_per_request`` (the server's process tree's CPU seconds over the load, per answer);
- ``by hand``: nothing of benchlab's running but this script and the warm server: ``/proc/<pid>/stat``'s utime +
  stime of the JVM read before and after a plain ``vegeta attack | vegeta report`` at the same rate on the load's
  core, over the requests vegeta reports.

Two ratios, each with its 95% interval over the pairs. benchlab / the kernel's count read by hand around the same
window says whether benchlab measures the cost right: one window, two readings. benchlab / a plain vegeta window taken
in turn says whether measuring adds to the cost (its monitor reads the server's /proc files four times a second, work
done in benchlab's process and kept off the server's core); it carries the windows' own spread (+/-8% here at 4,000
req/s), so it needs many pairs to be narrow. Goal for both: within [0.98, 1.02].

    python3 benchmarks/cost_truth.py [--server spring-undertow] [--rate 4000] [--pairs 8] [--duration 10s]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from figures import ratio_interval

from benchlab.running import drivers
from benchlab.running.fork import Fork
from benchlab.running.options import RunOptions
from benchlab.running.spec import prepare

TICK = os.sysconf("SC_CLK_TCK")


def stat_seconds(pid: int) -> float:
    """utime + stime of ``pid`` (every thread of it), from /proc/<pid>/stat, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # fields 14 and 15 of proc(5), counted after the name


def by_hand(fork: Fork, rate: float, seconds: float, workdir: Path) -> float:
    """CPU seconds per answer around a plain vegeta run, read by hand."""
    pid = fork.instance.metadata["pid"]
    targets = workdir / "targets.txt"
    targets.write_text(f"GET {fork.instance.url}{fork.spec.scenario.path}\n")
    cores = ",".join(map(str, fork.spec.load_cpus))
    vegeta = drivers.tool("vegeta").executable()
    before = stat_seconds(pid)
    attack = subprocess.run(["taskset", "-c", cores, vegeta, "attack", f"-rate={rate:g}", f"-duration={seconds:g}s",
                             f"-targets={targets}"], capture_output=True, check=True)
    after = stat_seconds(pid)
    report = json.loads(subprocess.run([vegeta, "report", "-type=json"], input=attack.stdout, capture_output=True,
                                       check=True).stdout)
    answered = round(report["requests"] * report["success"])
    return (after - before) / answered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="spring-undertow")
    parser.add_argument("--rate", type=float, default=4000)
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--duration", default="10s")
    args = parser.parse_args()
    began = time.monotonic()
    spec = prepare(args.server, "hello", RunOptions.of(load="rate", rate=args.rate, duration=args.duration,
                                                       retakes=0))
    base = Path(tempfile.mkdtemp(prefix="benchlab-cost-truth-"))
    windows = [(base / f"w{k}", f"cost-truth-w{k}") for k in range(1, args.pairs + 1)]
    ratios, same, rows = [], [], []
    with Fork(spec, windows, echo=lambda line: print("    " + line, flush=True)) as fork:
        fork.start()
        fork.warm()
        print(f"{args.server} warm after {fork.warmed['seconds']:.0f} s; {args.pairs} pairs of {args.duration} at "
              f"{args.rate:g} req/s", flush=True)
        for k in range(args.pairs):
            done = {}
            for kind in (("benchlab", "by hand") if k % 2 == 0 else ("by hand", "benchlab")):
                if kind == "benchlab":
                    pid = fork.instance.metadata["pid"]
                    before = stat_seconds(pid)
                    run = fork.window()
                    m = run.metrics
                    done[kind] = m["cpu_per_request"]
                    answered = m["requests"] - sum(m.get(f"errors_{e}") or 0 for e in ("connect", "read", "write",
                                                                                         "timeout"))
                    done["same window"] = (stat_seconds(pid) - before) / answered
                else:
                    done[kind] = by_hand(fork, args.rate, spec.load.duration, base)
            ratios.append(done["benchlab"] / done["by hand"])
            same.append(done["benchlab"] / done["same window"])
            rows.append(done)
            print(f"  pair {k + 1}: benchlab {done['benchlab'] * 1e6:.2f} µs (read by hand around it "
                  f"{done['same window'] * 1e6:.2f}), by hand alone {done['by hand'] * 1e6:.2f} µs a request: "
                  f"{ratios[-1]:.3f}", flush=True)
    print()
    for what, found in (("read by hand around the same window", same), ("a plain vegeta window, in turn", ratios)):
        centre, low, high = ratio_interval(found)
        inside = ("met" if 0.98 <= low and high <= 1.02 else "missed" if high < 0.98 or low > 1.02 else
                  "not decided: more pairs needed")
        print(f"benchlab / {what}, CPU per request of {args.server} at {args.rate:g} req/s: {centre:.3f} "
              f"[{low:.3f}, {high:.3f}] (95% interval over {len(found)} pairs); goal within [0.98, 1.02]: {inside}")
    print(f"medians: benchlab {statistics.median(r['benchlab'] for r in rows) * 1e6:.2f} µs, by hand "
          f"{statistics.median(r['by hand'] for r in rows) * 1e6:.2f} µs; {(time.monotonic() - began) / 60:.1f} min")


if __name__ == "__main__":
    main()
