"""What the three servlet servers cost at one common paced rate: CPU per request and memory, with intervals and
verdicts, and the minutes it took.

A comparison as a user would run it (:func:`benchlab.compare` with ``load="rate"``): every server offered the same
rate by vegeta on the load's core, ``--repeats`` forks a server interleaved in rounds, ``--windows`` windows a fork,
each fork warmed by ``warmup="auto"``. Printed: the cost summary (CPU per request in µs, resident memory steady and
peak in MiB, p99 at that rate), each verdict against the baseline, the windows left out and why, and the wall time.

The rate must be one every server carries and the load tool can offer: on this machine vegeta on one core keeps
10,000 req/s and falls apart at 20,000 (it sent 1,022), while the servers carry 25,000-35,000 in a closed loop, so
here the load tool, not the slowest server, sets the ceiling of a common rate. ``--rate auto`` (the default) lets
benchlab find it (``rates="auto"``, docs/cost.md): 60% of the slowest server's closed-loop rate, lowered to what the
load tool keeps; the line "rate:" says what it found and which of the two set it.

    python3 benchmarks/cost.py [--servers spring-tomcat,spring-jetty,spring-undertow] [--rate auto|5000]
                               [--repeats 3] [--windows 2] [--duration 5s] [--results DIR]
    python3 benchmarks/cost.py --slo p99<5ms --scenario reflect [--start 1000] [--repeats 2]   # capacity instead
"""

from __future__ import annotations

import argparse
import tempfile
import time

import benchlab
from benchlab.analysis import cost, validity
from benchlab.present import formatting


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="spring-tomcat,spring-jetty,spring-undertow")
    parser.add_argument("--rate", default="auto", help="requests per second, or auto (default)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--windows", type=int, default=2)
    parser.add_argument("--duration", default="5s")
    parser.add_argument("--results", default=None, help="where the runs are stored (default: a new temporary folder)")
    parser.add_argument("--slo", default=None, help="also search each fork's capacity under this limit, e.g. p99<1ms")
    parser.add_argument("--start", type=float, default=1000, help="the capacity search's first rate")
    parser.add_argument("--scenario", default="hello", help="the capacity search's scenario (reflect: a server "
                        "that saturates below what vegeta on one core can send)")
    args = parser.parse_args()
    if args.slo:
        capacity(args)
        return
    began = time.monotonic()
    rates = "auto" if args.rate == "auto" else [float(args.rate)]
    suite = benchlab.compare(args.servers.split(","), ["hello"], load="rate", rates=rates,
                             repeats=args.repeats, windows=args.windows, interleave="windows", duration=args.duration,
                             results_dir=args.results or tempfile.mkdtemp(prefix="benchlab-cost-"), progress=False)
    minutes = (time.monotonic() - began) / 60
    judged = cost.judged(suite.runs)
    rate = suite.runs["target_rps"].dropna().iloc[0]
    print(f"\n{len(suite.runs)} windows of {args.servers} at {rate:,.0f} req/s, {args.repeats} forks a server, "
          f"{args.windows} windows a fork, {args.duration} each; {minutes:.1f} min of wall time, the common rate's "
          "pilot included")
    print(f"rate: {cost.offered(suite.records) or 'given'}")
    with_p99 = (*judged, "p99")
    print(formatting.summary(suite.summary(metrics=with_p99)).to_string())
    print()
    for metric in with_p99:
        for line in suite.verdicts(metric)["verdict"]:
            print("  " + line)
    _, left = validity.usable(suite.runs)
    for why in left.values():
        print("  " + validity.said(why))



def capacity(args) -> None:
    """Each server's capacity under ``--slo``, ``--repeats`` forks a server, one search a fork, with its verdicts."""
    began = time.monotonic()
    suite = benchlab.compare(args.servers.split(","), [args.scenario], load="rate", rates=[args.start], slo=args.slo,
                             repeats=args.repeats, windows=1, duration=args.duration, progress=False,
                             results_dir=tempfile.mkdtemp(prefix="benchlab-capacity-") if not args.results else
                             f"{args.results}-capacity")
    minutes = (time.monotonic() - began) / 60
    print(f"\ncapacity under {args.slo} on {args.scenario} from {args.start:g} req/s, {args.repeats} forks a server; "
          f"{minutes:.1f} min")
    print(formatting.summary(suite.summary(metrics=("capacity_rps",))).to_string())
    for line in suite.verdicts("capacity_rps")["verdict"]:
        print("  " + line)
    runs = suite.runs[suite.runs["status"] == "ok"]
    for _, run in runs.iterrows():
        print(f"  {run['id']}: {run['capacity_rps']} req/s, stopped by {run['capacity_by']}, {run['search_steps']} "
              f"steps in {run['search_s']:.0f} s; cpu_per_request {run['cpu_per_request'] * 1e6:.1f} µs")


if __name__ == "__main__":
    main()
