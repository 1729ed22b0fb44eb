"""Tomcat, Jetty, Undertow and WebFlux over h2c and HTTP/1.1: requests/s and p99 with intervals and verdicts.

Two comparisons, each as a user would run it (:func:`benchlab.compare`), the servers' forks interleaved in rounds,
each fork warmed by ``warmup="auto"`` over its own protocol and pinned to the server's core, h2load or wrk on the
load's:

1. ``protocol`` as a factor, ``http1`` (wrk) against ``h2c`` (h2load, one stream a connection), at the same
   connections: every server's protocols in the same rounds, so each server's h2c/http1 ratio is paired by round;
2. ``h2c`` with ``--streams`` (10) requests in flight on each connection (h2load ``-m``), in rounds of its own.

Printed: each setup's summary (rps and p99 with intervals), the verdicts against the baseline (Tomcat) in each, each
server's h2c/http1 ratio, the servers' stream limits as they advertised them, the windows left out and why, and
the wall time. wrk and h2load are different tools: a server's h2c/http1 ratio is the protocol's and the tool's
together, while the verdicts between servers inside one setup share one tool.

    python3 benchmarks/http2.py [--servers spring-tomcat,spring-jetty,spring-undertow,spring-webflux]
                                [--connections 16] [--streams 10] [--repeats 3] [--windows 2] [--duration 5s]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

import benchlab
from benchlab.analysis import validity
from benchlab.present import formatting


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="spring-tomcat,spring-jetty,spring-undertow,spring-webflux")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--streams", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--windows", type=int, default=2)
    parser.add_argument("--duration", default="5s")
    parser.add_argument("--results", default=None, help="where the runs are stored (default: a new temporary folder)")
    parser.add_argument("--again", action="store_true", help="print what is stored in --results, running nothing")
    args = parser.parse_args()
    if args.again:
        protocols, streams = (benchlab.load(f"{args.results}/{part}") for part in ("protocols", "streams"))
        report(args, protocols, streams)
        return
    root = args.results or tempfile.mkdtemp(prefix="benchlab-http2-")
    servers = args.servers.split(",")
    shared = {"connections": [args.connections], "repeats": args.repeats, "windows": args.windows,
              "interleave": "windows", "duration": args.duration, "progress": False}
    began = time.monotonic()
    protocols = benchlab.compare(servers, ["hello"], factors={"protocol": ["http1", "h2c"]},
                                 results_dir=f"{root}/protocols", **shared)
    middle = time.monotonic()
    streams = benchlab.compare(servers, ["hello"], protocol="h2c", streams=args.streams,
                               results_dir=f"{root}/streams", **shared)
    ended = time.monotonic()
    print(f"\n{', '.join(servers)}: {args.repeats} forks a server and setup, {args.windows} windows of "
          f"{args.duration} a fork, {args.connections} connections; http1 and h2c {(middle - began) / 60:.1f} min, "
          f"h2c with {args.streams} streams {(ended - middle) / 60:.1f} min (results in {root})")
    report(args, protocols, streams)


def report(args, protocols, streams) -> None:
    """Each setup's summary and verdicts (each verdict named by its protocol), the paired ratios, the limits."""
    for title, suite in (("HTTP/1.1 (wrk) and h2c, 1 stream (h2load)", protocols),
                         (f"h2c, {args.streams} streams a connection (h2load -m {args.streams})", streams)):
        print(f"\n== {title}")
        summary = suite.summary(metrics=("rps", "p99"))
        print(formatting.summary(summary).to_string())
        for metric in ("rps", "p99"):
            verdicts = suite.verdicts(metric)
            for _, row in verdicts.iterrows():
                print(f"  [{row.get('protocol', 'http1')}] {row['verdict']}")
        _, left = validity.usable(suite.runs)
        for why in left.values():
            print("  left out: " + validity.said(why))
    print("\n== each server's h2c / http1 requests/s, paired by round (the protocol's and the tool's together)")
    for server, ratio in paired_ratios(protocols.runs).items():
        print(f"  {server}: {ratio}")
    print("\n== stream limits, as each server advertised them (SETTINGS_MAX_CONCURRENT_STREAMS) and executes them")
    for record in streams.records:
        if record.status == "ok" and record.params.get("window") == 1 and record.params.get("repeat") == 1:
            wire = record.metadata.get("protocol", {})
            print(f"  {record.params['server']}: advertised {wire.get('max_concurrent_streams') or 'no limit'}, "
                  f"runs at once {wire.get('stream_limit') or 'no limit'}")


def paired_ratios(runs) -> dict[str, str]:
    """Each server's h2c/http1 ratio of fork means, paired by round, as a geometric mean with its t interval."""
    from scipy import stats

    used, _ = validity.usable(runs)
    forks = used.groupby(["server", "protocol", "repeat"])["rps"].mean().unstack("protocol").dropna()
    said = {}
    for server, rounds in forks.groupby(level="server"):
        logs = np.log(rounds["h2c"] / rounds["http1"]).to_numpy()
        if len(logs) < 2:
            said[server] = f"{len(logs)} paired round(s): no interval"
            continue
        half = stats.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / np.sqrt(len(logs))
        centre = logs.mean()
        said[server] = (f"{np.exp(centre):.3f} [{np.exp(centre - half):.3f}, {np.exp(centre + half):.3f}] over "
                        f"{len(logs)} rounds")
    return said


if __name__ == "__main__":
    main()
