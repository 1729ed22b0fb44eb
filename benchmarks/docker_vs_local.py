"""Throughput in a container over throughput as a local process: same server, same cores, interleaved.

Each pair starts the server once as a local process (taskset) and once in a container (cpuset, host
network), in alternating order (local docker, docker local, ...) so a drift of the machine hits both
alike; wrk runs locally on the other core both times. The figure is the median of the pairs'
docker/local rps ratios. Host networking should keep it near 1.0. Startup times are shown too.

    export DOCKER_HOST=$(bash .ci/dockerd.sh start)
    flock /tmp/benchlab-heavy.lock python3 benchmarks/docker_vs_local.py [--pairs 3] [--duration 10s]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import benchlab  # noqa: E402
from benchlab import images  # noqa: E402
from benchlab.running.backends.docker import connect  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", default="spring-jetty")
    parser.add_argument("--scenario", default="hello")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--duration", default="10s")
    parser.add_argument("--warmup", default="5s")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--docker-host", default=None)
    args = parser.parse_args()

    benchlab.build()
    client = connect(args.docker_host)
    image = images.build_server(client, args.server)
    results = Path(tempfile.mkdtemp(prefix="benchlab-docker-vs-local-"))
    common = dict(connections=args.connections, threads=1, duration=args.duration, warmup=args.warmup,
                  server_cpus="0", load_cpus="1", results_dir=results)
    docker = dict(backend="docker", **({"docker_host": args.docker_host} if args.docker_host else {}))

    pairs = []
    for pair in range(1, args.pairs + 1):
        order = ("local", "docker") if pair % 2 else ("docker", "local")
        runs = {}
        for backend in order:
            own = docker if backend == "docker" else {}
            runs[backend] = benchlab.run(args.server, args.scenario, **common, **own)
            m = runs[backend].metrics
            print(f"pair {pair} {backend:6} {m['rps']:10,.0f} req/s  p99 {m['p99'] * 1000:7.2f} ms  "
                  f"server cpu {m['server_cpu_mean'] or 0:4.0f}%  startup {m['startup_ms']:6.0f} ms", flush=True)
        pairs.append((runs["docker"].metrics, runs["local"].metrics))

    ratios = [d["rps"] / loc["rps"] for d, loc in pairs]
    print(f"\n{args.server} /{args.scenario}, {args.connections} connections, {args.duration} after {args.warmup} "
          f"warm-up, {args.pairs} interleaved pairs; server on core 0, local wrk on core 1; image {image.tag} "
          f"({image.size / 1e6:.0f} MB)")
    print(f"  rps     local {statistics.median(loc['rps'] for _, loc in pairs):10,.0f}   "
          f"docker {statistics.median(d['rps'] for d, _ in pairs):10,.0f}")
    print(f"  startup local {statistics.median(loc['startup_ms'] for _, loc in pairs):7.0f} ms   "
          f"docker {statistics.median(d['startup_ms'] for d, _ in pairs):7.0f} ms")
    print(f"  docker/local rps ratio per pair: {', '.join(f'{r:.3f}' for r in ratios)}")
    print(f"  docker/local rps ratio (median): {statistics.median(ratios):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
