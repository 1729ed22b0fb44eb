"""The benchlab command. A BenchlabError prints as one line (no traceback) and exits 2."""

from __future__ import annotations

import argparse
import sys

from .errors import BenchlabError


def _ms(seconds) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.2f} ms"


def _mib(value) -> str:
    return "-" if value is None else f"{value / 2**20:.0f} MiB"


def _pct(value) -> str:
    return "-" if value is None else f"{value:.0f}%"


def format_run(run) -> str:
    """A readable summary of one run: rps, percentiles, errors, CPU and RSS, startup."""
    p, m = run.params, run.metrics
    server = run.metadata.get("server", {})
    version = f"{server.get('server') or ''} {server.get('server_version') or ''}".strip()
    lines = [
        f"{p['server']} ({version or 'version unknown'}) / {p['scenario']} / {p['driver']} "
        f"{p['load']}: c={p['connections']} t={p['threads']}"
        + (f" rate={p['rate']:.0f}/s" if p.get("rate") else "")
        + (f" users={p['users']} loops={p['loops']}" if p.get("users") else "")
        + f" duration={p['duration']:g}s warmup={p['warmup']:g}s backend={p['backend']}",
        f"  requests/s  {m['rps']:,.1f}   ({m['requests']:,} requests in {m['elapsed_s']:.2f} s"
        + (f", {m['bytes_per_request']:.0f} B each)" if m.get("bytes_per_request") else ")"),
    ]
    if m.get("target_rps"):
        lines.append(f"  target      {m['target_rps']:,.1f}/s  (achieved {m['rps'] / m['target_rps']:.1%})")
    lines.append("  latency     " + "  ".join(
        f"{name} {_ms(m.get(key))}" for name, key in
        (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p99.9", "p999"), ("max", "lat_max"))))
    from .schema import ERROR_KINDS

    errors = {k: m.get(f"errors_{k}") for k in ERROR_KINDS}
    lines.append("  errors      " + (", ".join(f"{k} {v}" for k, v in errors.items() if v) or "none"))
    lines.append(f"  server      cpu {_pct(m.get('server_cpu_mean'))} mean, rss {_mib(m.get('server_rss_max'))} max, "
                 f"startup {m['startup_ms']:.0f} ms" if m.get("startup_ms") is not None else
                 f"  server      cpu {_pct(m.get('server_cpu_mean'))} mean, rss {_mib(m.get('server_rss_max'))} max")
    cores = p.get("load_cores") or 1
    lines.append(f"  load tool   cpu {_pct(m.get('load_cpu_mean'))} mean of {cores * 100}% on cores "
                 f"{','.join(map(str, p['load_cpus']))}")
    lines.append(f"  stored      {run.id}")
    return "\n".join(lines)


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _ints(text: str) -> list[int]:
    from .errors import UsageError

    try:
        return [int(part) for part in _csv(text)]
    except ValueError:
        raise UsageError(f"expected whole numbers separated by commas, not {text!r}") from None


def _floats(text: str) -> list[float]:
    from .errors import UsageError

    try:
        return [float(part) for part in _csv(text)]
    except ValueError:
        raise UsageError(f"expected numbers separated by commas, not {text!r}") from None


def _load_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", default=None, help="hello, json, reflect, sleep, sleep:<ms>, echo")
    parser.add_argument("--threads", type=int, default=None, help="load threads (default: one per load core)")
    parser.add_argument("--duration", default="30s", help="measured time, e.g. 30s, 2m (default 30s)")
    parser.add_argument("--warmup", default="10s", help="unrecorded warm-up before it (default 10s)")
    parser.add_argument("--timeout", default="10s", help="per-request timeout (default 10s)")
    parser.add_argument("--load", default="duration", choices=["duration", "count", "rate"])
    parser.add_argument("--users", type=int, default=None, help="count model: parallel users")
    parser.add_argument("--loops", type=int, default=None, help="count model: requests per user")
    parser.add_argument("--plan", default=None, help="jmeter: a .jmx plan of your own")
    parser.add_argument("--driver", default=None, help="wrk, h2load, jmeter, vegeta (default: by load model)")
    parser.add_argument("--backend", default="local", choices=["local", "docker"])
    parser.add_argument("--server-cpus", default=None, help="cores for the server, e.g. 0 or 0-3")
    parser.add_argument("--load-cpus", default=None, help="cores for the load generator, e.g. 1 or 4-7")
    parser.add_argument("--jvm-opt", action="append", default=[], dest="jvm_opts",
                        help="a JVM option for the server (repeatable), e.g. --jvm-opt=-Xmx512m")
    parser.add_argument("--java", default=None, help="the java binary (default: java on PATH)")
    parser.add_argument("--memory", default=None, help="docker: the container memory limit, e.g. 1g")
    parser.add_argument("--docker-host", default=None, help="docker: the engine for the server (DOCKER_HOST url)")
    parser.add_argument("--load-docker-host", default=None, help="docker: the engine for wrk's container")
    parser.add_argument("--load-in-container", action="store_true", help="docker: run wrk in its own container")
    parser.add_argument("--base-image", default=None, help="docker: a registry base image, e.g. eclipse-temurin:17-jre")
    parser.add_argument("--allow-remote", action="store_true", help="allow load to a non-loopback address")
    parser.add_argument("--results-dir", default=None, help="where results go (default data/results)")


def _common(args) -> dict:
    options = dict(scenario=args.scenario, threads=args.threads, duration=args.duration, warmup=args.warmup,
                   timeout=args.timeout, load=args.load, users=args.users, loops=args.loops, plan=args.plan,
                   driver=args.driver, backend=args.backend, server_cpus=args.server_cpus,
                   load_cpus=args.load_cpus, jvm_opts=args.jvm_opts, java=args.java, memory=args.memory,
                   allow_remote=args.allow_remote, results_dir=args.results_dir)
    for name in ("docker_host", "load_docker_host", "base_image"):
        if getattr(args, name):
            options[name] = getattr(args, name)
    if args.load_in_container:
        options["load_in_container"] = True
    return options


def cmd_build(args) -> int:
    from .servers import build

    outcome = build(force=args.force, quiet=not args.verbose)
    if outcome["built"]:
        print(f"built {len(outcome['jars'])} jars in {outcome['seconds']:.1f} s")
    else:
        print("jars are up to date (servers/ unchanged); use --force to rebuild")
    for name, jar in outcome["jars"].items():
        print(f"  {name:16} {jar}")
    return 0


def cmd_run(args) -> int:
    from .api import run

    options = _common(args)
    result = run(args.server, options.pop("scenario"), connections=args.connections, rate=args.rate, **options)
    print(format_run(result))
    return 0


def print_suite(suite, metrics=("rps", "p50", "p99")) -> None:
    """The summary, the verdicts and the flags of a suite, for a terminal."""
    import pandas as pd

    from .stats import CELL

    with pd.option_context("display.width", 200, "display.max_columns", 40, "display.max_colwidth", 120):
        summary = suite.summary(metrics)
        keep = [c for c in CELL if c in summary and summary[c].nunique(dropna=True) > 1]
        shown = summary[[*keep, "server", "metric", "n", "mean", "ci_low", "ci_high", "cv", "ratio", "flags"]].copy()
        latency = shown["metric"] != "rps"
        for column in ("mean", "ci_low", "ci_high"):
            shown[column] = shown[column].astype(float)
            shown.loc[latency, column] *= 1000.0
        shown.loc[latency, "metric"] = shown.loc[latency, "metric"] + " (ms)"
        print(f"{suite!r}  baseline: {suite.baseline}" + (f"  stored in {suite.path}" if suite.path else ""))
        print()
        print(shown.to_string(index=False, float_format=lambda v: f"{v:,.3f}" if abs(v) < 10 else f"{v:,.1f}"))
        print()
        print("per-run requests/s:")
        print(suite.table("rps").drop(columns=["ci_low", "ci_high"]).to_string(float_format=lambda v: f"{v:,.1f}"))
        print()
        for verdict in suite.verdicts("rps")["verdict"]:
            print("  " + verdict)
        for verdict in suite.verdicts("p99")["verdict"]:
            print("  " + verdict)
        flags = suite.flags()
        if len(flags):
            print()
            print("flags:")
            for _, flag in flags.iterrows():
                where = flag["id"] if flag["level"] == "run" else f"{flag['server']} (all repeats)"
                print(f"  [{flag['flag']}] {where}: {flag['explanation']}")


def cmd_compare(args) -> int:
    from .api import compare

    options = _common(args)
    del options["scenario"]  # compare takes --scenarios, a list
    users, loops = options.pop("users"), options.pop("loops")
    suite = compare(_csv(args.servers), scenarios=_csv(args.scenarios),
                    connections=_ints(args.connections), repeats=args.repeats, order=args.order, seed=args.seed,
                    restart=args.restart, baseline=args.baseline,
                    users=_ints(args.users_list) if args.users_list else users,
                    loops=_ints(args.loops_list) if args.loops_list else loops,
                    rates=_floats(args.rates) if args.rates else None, **options)
    print_suite(suite)
    return 0


def cmd_show(args) -> int:
    from .results import load

    print_suite(load(*args.paths, baseline=args.baseline))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="benchlab", description="Compare web servers under load.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("build", help="build the three Spring Boot jars (skipped when unchanged)")
    p.add_argument("--force", action="store_true")
    p.add_argument("--verbose", action="store_true")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("run", help="measure one server once")
    p.add_argument("--server", default="spring-tomcat")
    p.add_argument("--connections", type=int, default=200)
    p.add_argument("--rate", type=float, default=None, help="rate model: requests per second")
    _load_options(p)
    p.set_defaults(func=cmd_run)

    from .backends.docker.images import image_command

    image_command(sub)
    p = sub.add_parser("compare", help="compare servers: repeated, interleaved runs and statistics")
    p.add_argument("--servers", default="spring-tomcat,spring-jetty,spring-undertow")
    p.add_argument("--scenarios", default="hello")
    p.add_argument("--connections", default="200", help="one or more, comma separated")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--order", default="interleaved", choices=["interleaved", "shuffled"])
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--restart", default="each-run", choices=["each-run", "never"])
    p.add_argument("--baseline", default=None)
    p.add_argument("--users-list", default=None, help="count model: users per cell, e.g. 100,1000")
    p.add_argument("--loops-list", default=None, help="count model: loops per cell, e.g. 1000,100")
    p.add_argument("--rates", default=None, help="rate model: requests/s per cell, e.g. 500,1000,2000")
    _load_options(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("show", help="print the summary, verdicts and flags of stored results")
    p.add_argument("paths", nargs="+", help="results directories")
    p.add_argument("--baseline", default=None)
    p.set_defaults(func=cmd_show)

    from .doctor import cmd_doctor

    p = sub.add_parser("doctor", help="list the load tools and runtimes: installed, version, how to install")
    p.set_defaults(func=cmd_doctor)

    from .report import add_commands as report_commands  # benchlab report, benchlab batch

    report_commands(sub)
    for extend in _EXTENSIONS:
        extend(sub)
    return parser


#: Other modules add their subcommands here (compare, show, report, batch, image, doctor).
_EXTENSIONS: list = []


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except BenchlabError as exc:
        message = str(exc)
        first, _, rest = message.partition("\n")
        print(f"benchlab: error: {first}", file=sys.stderr)
        if rest:
            print(rest, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("benchlab: interrupted; every server it started is stopped", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
