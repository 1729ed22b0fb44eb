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


def _warmup(asked, metrics) -> str:
    took = metrics.get("warmup_s")
    if asked != "auto":
        return f"{asked:g}s"
    return f"auto ({took:.0f} s{', not steady' if metrics.get('warm') is False else ''})" if took else "auto"


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
        + f" duration={p['duration']:g}s warmup={_warmup(p['warmup'], m)} backend={p['backend']}",
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


def _numbers(kind: type, text: str) -> list:
    from .errors import UsageError

    try:
        return [kind(part) for part in _csv(text)]
    except ValueError:
        what = "whole numbers" if kind is int else "numbers"
        raise UsageError(f"expected {what} separated by commas, not {text!r}") from None


_LISTS = {"texts": _csv, "ints": lambda text: _numbers(int, text), "floats": lambda text: _numbers(float, text)}
def count(text: str):
    return text if text == "auto" else int(text)


_SCALARS = {"text": str, "int": int, "float": float, "count": count}


def _add_options(parser: argparse.ArgumentParser, where: str) -> None:
    """The command's flags, generated from :data:`benchlab.spec.OPTIONS`: the function's defaults apply."""
    import inspect

    from . import api
    from .spec import options

    defaults = inspect.signature(getattr(api, where)).parameters
    for option in options(where):
        default = defaults[option.name].default
        shown = ",".join(map(str, default)) if isinstance(default, (tuple, list)) else default
        extra: dict = {"default": argparse.SUPPRESS,
                       "help": option.help + ("" if shown in (None, False, "", ()) else f" (default: {shown})")}
        if option.choices:
            extra["choices"] = option.choices
        if option.kind == "bool":
            parser.add_argument(option.flag, action=argparse.BooleanOptionalAction, **extra)
        elif option.kind == "repeat":
            parser.add_argument(option.flag, action="append", metavar="VALUE", **extra)
        else:
            metavar = None if option.choices else option.kind.upper().rstrip("S") + ("[,...]" if option.kind in _LISTS else "")
            parser.add_argument(option.flag, type=_SCALARS.get(option.kind, str), metavar=metavar, **extra)


def _given(args, where: str) -> dict:
    """The options given on the command line, as the Python function takes them."""
    from .spec import options

    kinds = {o.name: o.kind for o in options(where)}
    given = {k: v for k, v in vars(args).items() if k in kinds}
    return {k: _LISTS[kinds[k]](v) if kinds[k] in _LISTS else v for k, v in given.items()}


def cmd_build(args) -> int:
    from .jars import build

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

    print(format_run(run(**_given(args, "run"))))
    return 0


def print_suite(suite, metrics=("rps", "p50", "p99")) -> None:
    """The summary, the verdicts and the flags of a suite, for a terminal."""
    import pandas as pd

    from .cells import varying

    with pd.option_context("display.width", 200, "display.max_columns", 40, "display.max_colwidth", 120):
        summary = suite.summary(metrics)
        keep = varying(summary)
        shown = summary[[*keep, "server", "metric", "n", "mean", "ci_low", "ci_high", "cv", "ratio", "flags"]].copy()
        latency = shown["metric"] != "rps"
        for column in ("mean", "ci_low", "ci_high"):
            shown[column] = shown[column].astype(float)
            shown.loc[latency, column] *= 1000.0
        shown.loc[latency, "metric"] = shown.loc[latency, "metric"] + " (ms)"
        print(f"{suite!r}  baseline: {suite.baseline}" + (f"  stored in {suite.path}" if suite.path else ""))
        reached = getattr(suite, "precision", None)
        if reached:
            print(f"repeats=auto: {reached['repeats']} rounds; widest rps interval +/-{reached['widest']:.1%} "
                  + ("(asked +/-{:.0%}: reached)".format(reached["asked"]) if reached["reached"] else
                     "(asked +/-{:.0%}: NOT reached at max_repeats; the ratios are less precise)".format(reached["asked"])))
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

    suite = compare(**_given(args, "compare"))
    print_suite(suite)
    failed = int((suite.runs["status"] != "ok").sum()) if len(suite.runs) else 0
    if failed:
        print(f"benchlab: {failed} of {len(suite.runs)} runs failed (see the flags); a second call with the same "
              "options runs only those again", file=sys.stderr)
    return 1 if failed else 0


def cmd_show(args) -> int:
    from .results import load

    print_suite(load(*args.paths, baseline=args.baseline))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="benchlab", description="Compare web servers under load.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("build", help="build the three Spring Boot jars (skipped when unchanged)")
    p.add_argument("--force", action="store_true")
    p.add_argument("--verbose", action="store_true")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("run", help="measure one server once")
    _add_options(p, "run")
    p.set_defaults(func=cmd_run)

    from .backends.docker.images import image_command

    image_command(sub)
    p = sub.add_parser("compare", help="compare servers: repeated, interleaved runs and statistics")
    _add_options(p, "compare")
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


class Parser(argparse.ArgumentParser):
    """argparse, with a mistake printed as one line that says where the help is, and exit 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, so every server and container it started is stopped."""


def _terminate(signum, frame):
    raise Terminated()


#: The exit codes: 0 all went well, 1 some run failed, 2 a usage mistake, 130 Ctrl-C, 143 SIGTERM.
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 130, 143


def exit_code(error: BaseException) -> int:
    """The exit code of an error: 2 for what the user must fix (usage, a missing tool, unreadable results),
    1 for a run that failed (a server, a response, a load tool or a build)."""
    from .errors import ResultsError, ToolMissing, UsageError

    if isinstance(error, Terminated):
        return EXIT_TERMINATED
    if isinstance(error, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    return EXIT_USAGE if isinstance(error, (UsageError, ToolMissing, ResultsError)) else EXIT_FAILED


def main(argv: list[str] | None = None) -> int:
    import signal

    parser = build_parser()
    args = parser.parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return args.func(args)
    except BenchlabError as exc:
        first, _, rest = str(exc).partition("\n")
        print(f"benchlab: error: {first}", file=sys.stderr)
        if rest:
            print(rest, file=sys.stderr)
        return exit_code(exc)
    except KeyboardInterrupt as exc:
        print("benchlab: interrupted; every server it started is stopped, and a second call with the same "
              "options resumes", file=sys.stderr)
        return exit_code(exc)
    finally:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
