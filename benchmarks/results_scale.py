"""How long does reading and summarising 10,000 stored runs take? benchlab.load, then the statistics.

It writes N realistic runs (3 servers x 2 cells x N/6 repeats, with monitor samples, metadata, a latency
histogram and a few failed runs) into a temporary directory with ``benchlab.store.results.save``, then
times, over several rounds in alternating order (load then analyse, analyse then load), (a)
``benchlab.load(dir)`` and (b)
``suite.summary(["rps", "p50", "p99"])`` + ``suite.flags()`` + ``suite.verdicts()``, after one untimed
load and analysis (imports such as scipy's are paid once a session). Every analysis is of a suite not
analysed before, so each pays for reading the runs' histograms. It prints the median wall time of
each, their total and whether the goal, under 2 s in total, is met, and the CPU time beside it, since a
shared machine stretches wall time; ``--profile`` adds one cProfile of the slower part (top 15 by
cumulative time).

    python3 benchmarks/results_scale.py [--runs 10000] [--rounds 5] [--profile] [--no-orjson]
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from figures import line  # noqa: E402

import benchlab  # noqa: E402
from benchlab.store.histogram import Histogram  # noqa: E402
from benchlab.store.results import Run, save  # noqa: E402

GOAL_S = 2.0
SERVERS = {"spring-tomcat": 21_000.0, "spring-jetty": 36_000.0, "spring-undertow": 31_000.0}
CONNECTIONS = (64, 256)
DURATION_S = 10
SAMPLE_INTERVAL_S = 0.25


def metadata(server: str) -> dict:
    """What metadata.collect() and measure() store: machine, Java, tools, the server, the launch."""
    return {
        "cpu": {"model": "Intel(R) Xeon(R) CPU @ 2.20GHz", "logical_cpus": 2, "usable_cpus": [0, 1],
                "governor": None},
        "system": {"hostname": "bench-1", "kernel": "6.1.0-18-amd64", "os": "Linux-6.1.0-18-amd64-x86_64",
                   "memory_bytes": 25_275_904_000, "python": "3.11.2"},
        "java": {"path": "java", "version": "21.0.2", "banner": 'openjdk version "21.0.2" 2024-01-16'},
        "benchlab": {"version": "0.4.0", "commit": "c9e15da", "dirty": False},
        "driver": {"name": "wrk", "version": "wrk 4.2.0"},
        "server": {"server": server.split("-")[1], "server_version": "10.1.19", "java_version": "21.0.2"},
        "launch": {"launch": "jar"},
        "backend": {"backend": "local", "pid": 12345, "argv": ["taskset", "-c", "0", "java", "-jar", "app.jar"]},
        "verify": {"status": 200, "bytes": 13, "content_type": "text/plain;charset=UTF-8"},
        "shared_cores": False,
        "warmup": {"seconds": 30.0, "steady": True, "rps": [1000.0, 1100.0]},
        "server_alive_after_load": True,
    }


def make_run(i: int, server: str, connections: int, repeat: int, rng: np.random.Generator) -> Run:
    params = {"server": server, "scenario": "hello", "path": "/hello", "method": "GET", "driver": "wrk",
              "load": "duration", "connections": connections, "threads": 2, "users": None, "loops": None,
              "rate": None, "duration": DURATION_S, "warmup": 30, "timeout": 10, "ramp_up": None, "plan": None,
              "backend": "local", "server_cpus": [0], "load_cpus": [1], "load_cores": 1, "memory": None,
              "jvm_opts": ["-Xmx1g"], "java": "java", "cds": False, "repeat": repeat, "backend_options": {}}
    started = f"2026-11-30T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}+00:00"
    common = dict(id=f"run{i:05d}", params=params, suite="scale", key=f"{server}/{connections}",
                  started_at=started, finished_at=started, files=("server.log", "wrk.out"))
    if i % 997 == 13:  # a few runs fail: no metrics, the error
        return Run(**common, metrics={}, metadata={}, status="failed", error="ServerError: died during the load")
    rps = SERVERS[server] * (1 + 0.03 * rng.standard_normal()) * (1.1 if connections == 256 else 1.0)
    mean = connections / rps  # Little's law holds
    us = lambda seconds: round(seconds, 6)  # noqa: E731  wrk reports whole microseconds
    lat = {"lat_min": us(mean * 0.05), "lat_mean": us(mean), "lat_stdev": us(mean * 0.6),
           "lat_max": us(mean * 30 * rng.lognormal(0, 0.5)), "p50": us(mean * 0.8), "p75": us(mean * 1.2),
           "p90": us(mean * 1.8), "p99": us(mean * 4 * rng.lognormal(0, 0.3)), "p999": us(mean * 9),
           "p9999": us(mean * 20)}
    requests = int(rps * DURATION_S)
    errors = {"errors_connect": 0, "errors_read": int(rng.random() < 0.01) * 3, "errors_write": 0,
              "errors_status": 0, "errors_timeout": 0}
    load_cpu = 95.0 if i % 301 == 7 else 60 + 5 * rng.standard_normal()  # now and then a busy wrk
    samples = [(k * SAMPLE_INTERVAL_S, role, cpu + rng.standard_normal(), rss)
               for k in range(int(DURATION_S / SAMPLE_INTERVAL_S))
               for role, cpu, rss in (("server", 95.0, 3.1e8), ("load", load_cpu, 6.0e6))]
    metrics = {"target_rps": None, "requests": requests, "bytes": requests * 130, "elapsed_s": DURATION_S,
               "rps": rps, "bytes_per_request": 130.0, **lat, **errors, "note": None,
               "server_cpu_mean": 95.0, "server_cpu_max": 99.0, "server_rss_mean": 3.1e8, "server_rss_max": 3.2e8,
               "server_samples": 40, "load_cpu_mean": load_cpu, "load_cpu_max": load_cpu + 3,
               "load_rss_mean": 6.0e6, "load_rss_max": 6.1e6, "load_samples": 40, "startup_ms": 1500.0,
               "warmup_s": 30.0, "warm": True}
    return Run(**common, metrics=metrics, metadata=metadata(server), samples=tuple(samples))


def write_runs(directory: Path, count: int) -> None:
    rng = np.random.default_rng(11)
    cells = [(s, c) for c in CONNECTIONS for s in SERVERS]
    for i in range(count):  # interleaved, as compare() runs them: each repeat visits every cell
        server, connections = cells[i % len(cells)]
        run = make_run(i, server, connections, i // len(cells) + 1, rng)
        save(run, directory / run.id)
        if run.status == "ok":  # what every driver keeps now: the run's whole latency distribution
            Histogram.of(rng.lognormal(np.log(0.004), 0.8, size=2000)).save(directory / run.id)


def analyse(suite) -> None:
    suite.summary(["rps", "p50", "p99"])
    suite.flags()
    suite.verdicts()


CPU: dict[str, list[float]] = {"load": [], "analyse": []}


def timed(job, part: str) -> tuple[float, object]:
    start, cpu = time.perf_counter(), time.process_time()
    out = job()
    CPU[part].append(time.process_time() - cpu)
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of the slower part")
    parser.add_argument("--no-orjson", action="store_true", help="parse run.json with json, as without orjson")
    args = parser.parse_args()
    if args.no_orjson:
        sys.modules["orjson"] = None  # "import orjson" now raises ImportError, as where it is not installed

    try:
        import orjson  # noqa: F401
        parser_name = "orjson"
    except ImportError:
        parser_name = "json"
    print(f"benchlab from {Path(benchlab.__file__).parent}; run.json parsed by {parser_name}")
    with tempfile.TemporaryDirectory(prefix="benchlab-scale-") as tmp:
        directory = Path(tmp)
        start = time.perf_counter()
        write_runs(directory, args.runs)
        print(f"wrote {args.runs} runs in {time.perf_counter() - start:.1f} s")
        loads, analyses = [], []
        suite = benchlab.load(directory)  # untimed: analyse-first rounds need a suite, and imports happen once
        analyse(suite)
        for r in range(args.rounds):  # alternate the order, so neither part always runs on a warmer process
            if r % 2 == 0:
                seconds, suite = timed(lambda: benchlab.load(directory), "load")
                loads.append(seconds)
                analyses.append(timed(functools.partial(analyse, suite), "analyse")[0])
            else:
                # A suite reads its histograms once, at its first summary: each analysis gets a suite
                # that has never been analysed, loaded here untimed.
                unread = benchlab.load(directory)
                analyses.append(timed(functools.partial(analyse, unread), "analyse")[0])
                del unread
                seconds, suite = timed(lambda: benchlab.load(directory), "load")
                loads.append(seconds)
        load_s, analyse_s = statistics.median(loads), statistics.median(analyses)
        total = load_s + analyse_s
        print(f"{len(suite)} runs, {args.rounds} rounds (medians; every round: load {_list(loads)}, "
              f"analyse {_list(analyses)})")
        print(f"(a) benchlab.load(dir):                       {load_s:6.2f} s")
        print(f"(b) summary(rps, p50, p99) + flags + verdicts: {analyse_s:6.2f} s")
        print(f"total:                                         {total:6.2f} s")
        print(f"goal: < {GOAL_S:g} s: {'met' if total < GOAL_S else 'missed'}")
        cpu_load, cpu_analyse = statistics.median(CPU["load"]), statistics.median(CPU["analyse"])
        print(f"CPU time (medians): load {cpu_load:.2f} s + analyse {cpu_analyse:.2f} s = "
              f"{cpu_load + cpu_analyse:.2f} s; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        if args.rounds > 1:
            per_round = [(a + b) / GOAL_S for a, b in zip(loads, analyses)]
            print(line("total / goal per round", per_round, 1.0, at_least=False))
        if args.profile:
            unread = benchlab.load(directory)
            slow = (lambda: benchlab.load(directory)) if load_s > analyse_s else (lambda: analyse(unread))
            print(f"\nwhere the time goes in the slower part, {'(a) load' if load_s > analyse_s else '(b) analyse'}:")
            profile = cProfile.Profile()
            profile.runcall(slow)
            text = io.StringIO()
            pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(15)
            print(text.getvalue())


def _list(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


if __name__ == "__main__":
    main()
