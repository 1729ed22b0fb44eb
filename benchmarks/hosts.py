"""Wall time of a comparison on two hosts over the same comparison on one: compare(hosts=[a, b]) against hosts=[a].

Each pair runs the same design (servers, cells, repeats) once on host a alone and once on hosts a and b, in
alternating order (one two, two one, ...) so a drift of the machine hits both alike, each into a fresh results
folder. The figure is the geometric mean of the pairs' two/one wall-time ratios with a 95% t interval (on their
logs). The goal, about 0.5, is for separate machines. Here host b is a second docker engine on this machine
(`.ci/dockerd.sh start benchlab-remote`, started and stopped by this script if it was not running): both engines
share this machine's cores, so the ratio says what the queue and two rounds at once cost on shared cores, not
what a second machine buys; it is printed beside the figure.

    export DOCKER_HOST=$(bash .ci/dockerd.sh start)
    flock /tmp/benchlab-heavy.lock python3 benchmarks/hosts.py [--pairs 3] [--repeats 4] [--duration 5s]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import benchlab  # noqa: E402
from benchlab.running import servers  # noqa: E402
from benchlab.running.backends.docker import engine, images, native_images  # noqa: E402


def dockerd(action: str, name: str) -> str:
    done = subprocess.run(["bash", str(ROOT / ".ci" / "dockerd.sh"), action, name], capture_output=True, text=True,
                          timeout=600, check=True)
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def given_images(first: str, second: str, names: list[str]) -> None:
    """Every server's image (and its base) on the second engine, copied from the first where it lacks one."""
    a, b = engine.connect(first), engine.connect(second)
    for name in names:
        native_images.build(a, name)  # built only if its inputs changed
        if native_images.lacking(b, name):
            server = servers.get(name)
            tags = [images.base_tag(), images.server_tag_on(a, server)] if server.jvm else [
                native_images.build(a, name).tag]
            images.copy(a, b, tags)


def interval(ratios: list[float]) -> tuple[float, float, float]:
    """The geometric mean of ``ratios`` and its 95% t interval, taken on their logs (no interval from one)."""
    from scipy.stats import t

    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return math.exp(mean), math.nan, math.nan
    half = t.ppf(0.975, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="spring-jetty,spring-undertow")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--duration", default="5s")
    parser.add_argument("--warmup", default="5s")
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args()

    names = args.servers.split(",")
    first = os.environ.get("DOCKER_HOST") or dockerd("start", "benchlab")
    running = Path("/run/benchlab-docker/benchlab-remote.pid").exists()
    second = dockerd("start", "benchlab-remote")
    design = dict(scenarios=["hello"], connections=[args.connections], repeats=args.repeats, duration=args.duration,
                  warmup=args.warmup, progress=False)
    walls: list[dict[int, float]] = []
    try:
        given_images(first, second, names)
        for pair in range(1, args.pairs + 1):
            wall: dict[int, float] = {}
            for count in (1, 2) if pair % 2 else (2, 1):
                with tempfile.TemporaryDirectory(prefix="benchlab-hosts-") as results:
                    began = time.monotonic()
                    benchlab.compare(names, hosts=[first, second][:count], results_dir=results, **design)
                    wall[count] = time.monotonic() - began
                print(f"pair {pair}  {count} host{'s' if count > 1 else ' '}  {wall[count]:6.1f} s", flush=True)
            walls.append(wall)
    finally:
        if not running:
            dockerd("stop", "benchlab-remote")

    ratio, low, high = interval([w[2] / w[1] for w in walls])
    cores = os.cpu_count()
    print(f"\n{', '.join(names)} /hello, {args.connections} connections, {args.repeats} rounds of {args.duration} "
          f"after {args.warmup} warm-up; {args.pairs} pairs in alternating order")
    print(f"  one host  {statistics.median(w[1] for w in walls):6.1f} s   two hosts "
          f"{statistics.median(w[2] for w in walls):6.1f} s (medians)")
    print(f"  two/one wall time {ratio:.2f} [{low:.2f}, {high:.2f}] (95%)   goal: about 0.50 for separate machines")
    print(f"  here both engines share this machine's {cores} cores: the ratio is what two rounds at once cost on "
          "shared cores, not what a second machine buys")
    return 0


if __name__ == "__main__":
    sys.exit(main())
