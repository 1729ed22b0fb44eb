"""Warm-up shortcuts: how much sooner is a JVM warm, and is it as fast once warm?

Two shortcuts, each against the same server without it:

- ``widened``: the JIT's compiler threads prime on the run's cores (benchlab's default for a local JVM, see
  :func:`benchlab.running.warmup._prime`) against ``pinned``: the JVM pinned to its one core from its start,
  compiler included (``-XX:ActiveProcessorCount=1`` in its options turns the wide start off);
- with ``--aot``: ``X+aot@java25`` (Java 25's AOT cache with method profiles, trained with real requests)
  against ``X@java25``.

Each round starts one fork of every arm of a server and keeps them running together: each is warmed by
``warmup="auto"`` in turn (its time, its priming and when its JIT went quiet are kept), the ones that waited are
resumed, then ``--windows`` windows are taken in turn (A B, B A, ...), so an arm's fork mean and its partner's
come from the same minutes. The steady throughput of the shortcut over its partner is the mean of the rounds'
log ratios of fork means, with a 90% t interval: "equivalent" when it lies within 0.95-1.05 (two one-sided
tests at 5%), "different" when it lies outside, else "not decided". Goal for a shortcut benchlab takes by
default: equivalent.

    python3 benchmarks/shortcuts.py [--servers spring-undertow] [--rounds 6] [--windows 12] [--duration 5s]
                                    [--connections 200] [--aot]
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import time
from pathlib import Path

from figures import ratio_interval

from benchlab.running import rounds
from benchlab.running.measure import Fork
from benchlab.running.spec import prepare

MARGIN = 0.05


def arms(server: str, aot: bool) -> list[tuple[str, str, dict]]:
    """(arm, the arm it is compared with, prepare() options), the baseline first."""
    if aot:
        return [("java25", "", {"server": f"{server}@java25"}), ("+aot", "java25", {"server": f"{server}+aot@java25"})]
    return [("pinned", "", {"server": server, "jvm_opts": ["-XX:ActiveProcessorCount=1"]}),
            ("widened", "pinned", {"server": server})]


def one_round(server: str, args, base: Path, r: int) -> dict[str, dict]:
    """One fork of every arm, alive together: warmed in turn (order alternating by round), then windows in turn."""
    chosen = arms(server, args.aot)
    chosen = chosen if r % 2 == 0 else chosen[::-1]
    forks = []
    for arm, _, options in chosen:
        spec = prepare(scenario="hello", connections=args.connections, duration=args.duration, warmup="auto",
                       **options)
        folder = base / f"{server}-{arm}-r{r}"
        windows = [(folder / f"w{k}", f"{server}-{arm}-r{r}-w{k}") for k in range(1, args.windows + 1)]
        forks.append((arm, Fork(spec, windows, repeat=r + 1, back_to_back=False)))
    outcomes = rounds.run([fork for _, fork in forks])
    out = {}
    for (arm, fork), outcome in zip(forks, outcomes):
        if outcome.error is not None:
            print(f"    {arm}: failed: {str(outcome.error).splitlines()[0]}")
            continue
        warmed = fork.warmed
        out[arm] = {"warmup_s": warmed["seconds"], "primed_s": warmed.get("primed_s"),
                    "quiet_s": warmed.get("jit_quiet_s"), "warm": warmed.get("steady"),
                    "rps": statistics.fmean(r.metrics["rps"] for r in outcome.records)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", default="spring-undertow")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--windows", type=int, default=12)
    parser.add_argument("--duration", default="5s")
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--aot", action="store_true", help="+aot@java25 against @java25 instead of widened/pinned")
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="benchlab-shortcuts-"))
    began = time.monotonic()
    print(f"{args.rounds} rounds a server, each one fork an arm kept running together, {args.windows} windows of "
          f"{args.duration} each in turn, c={args.connections}, hello; server on core 0, wrk on core 1; nothing "
          f"else running; runs in {base}", flush=True)
    for server in args.servers.split(","):
        results: list[dict[str, dict]] = []
        for r in range(args.rounds):
            got = one_round(server, args, base, r)
            results.append(got)
            print(f"  {server} round {r + 1}: " + "; ".join(
                f"{arm} warm after {v['warmup_s']:.0f} s (primed {v['primed_s'] or 0:.0f} s, JIT quiet at "
                f"{v['quiet_s'] if v['quiet_s'] is not None else math.nan:.0f} s) {v['rps']:,.0f} req/s"
                for arm, v in got.items()), flush=True)
        report(server, args.aot, results)
    print(f"({(time.monotonic() - began) / 60:.0f} min in all)")


def report(server: str, aot: bool, results: list[dict[str, dict]]) -> None:
    for arm, partner, _ in arms(server, aot)[1:]:
        both = [r for r in results if arm in r and partner in r]
        took = {a: statistics.median(r[a]["warmup_s"] for r in both) for a in (arm, partner)}
        quiet = {a: [r[a]["quiet_s"] for r in both if r[a]["quiet_s"] is not None] for a in (arm, partner)}
        median = {a: statistics.median(q) if q else math.nan for a, q in quiet.items()}
        print(f"{server} {arm} against {partner}: warm after {took[arm]:.0f} s against {took[partner]:.0f} s "
              f"(median of {len(both)}), JIT quiet at {median[arm]:.0f} s against {median[partner]:.0f} s")
        ratios = [r[arm]["rps"] / r[partner]["rps"] for r in both]
        centre, low, high = ratio_interval(ratios, confidence=0.90)
        said = ("equivalent" if 1 - MARGIN <= low and high <= 1 + MARGIN else
                "different" if high < 1 - MARGIN or low > 1 + MARGIN else "not decided: more rounds needed")
        print(f"  steady throughput {arm} / {partner}: {centre:.3f} [{low:.3f}, {high:.3f}] (90% interval over "
              f"{len(ratios)} rounds; equivalence margin {1 - MARGIN:.2f}-{1 + MARGIN:.2f}): {said}")


if __name__ == "__main__":
    main()
