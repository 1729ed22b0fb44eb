"""The benchlab command: every subcommand and flag, parsed here and nowhere else.

The flags of run and compare are generated from :data:`benchlab.running.options.OPTIONS`. A BenchlabError prints as
one line without a traceback; the exit code says what happened (:data:`EXIT_OK` and the others below).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable

from .errors import BenchlabError


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _numbers(kind: type, text: str) -> list:
    from .errors import UsageError

    try:
        return [kind(part) for part in _csv(text)]
    except ValueError:
        what = "whole numbers" if kind is int else "numbers"
        raise UsageError(f"expected {what} separated by commas, not {text!r}") from None


_LISTS = {"texts": _csv, "ints": lambda text: _numbers(int, text),
          "floats": lambda text: text.strip() if text.strip() == "auto" else _numbers(float, text)}
def count(text: str) -> int | str:
    return text if text == "auto" else int(text)


_SCALARS: dict[str, Callable[[str], object]] = {"text": str, "int": int, "float": float, "count": count}


def _read(option):
    """How the command line reads an option's value: by its kind, an old spelling of a value read as the new."""
    from .running.options import OLD_VALUES

    kind = _SCALARS.get(option.kind, str)
    old = OLD_VALUES.get(option.name)
    return kind if old is None else (lambda text: old.get(text, kind(text)))


def _add_options(parser: argparse.ArgumentParser, where: str) -> None:
    """The command's flags, generated from :data:`benchlab.running.options.OPTIONS`, with their defaults (the
    function's own: the declaration holds both)."""
    from .running.options import options

    for option in options(where):
        default = option.default
        shown = ",".join(map(str, default)) if isinstance(default, (tuple, list)) else default
        extra: dict = {"default": argparse.SUPPRESS,
                       "help": option.help.replace("%", "%%")  # argparse formats help with %
                       + ("" if shown in (None, False, "", ()) else f" (default: {shown})")}
        if option.choices:
            extra["choices"] = option.choices
        if option.kind == "bool":
            parser.add_argument(option.flag, action=argparse.BooleanOptionalAction, **extra)
        elif option.kind == "repeat":
            parser.add_argument(option.flag, *option.aliases, action="append", metavar="VALUE", **extra)
        else:
            metavar = (None if option.choices
                       else option.kind.upper().rstrip("S") + ("[,...]" if option.kind in _LISTS else ""))
            parser.add_argument(option.flag, *option.aliases, type=_read(option), metavar=metavar, **extra)


def _given(args, where: str) -> dict:
    """The options given on the command line, as the Python function takes them."""
    from .running.options import options

    kinds = {o.name: o.kind for o in options(where)}
    given = {k: v for k, v in vars(args).items() if k in kinds}
    return {k: _LISTS[kinds[k]](v) if kinds[k] in _LISTS else v for k, v in given.items()}


def cmd_build(args) -> int:
    from .running.jars import build

    outcome = build(force=args.force, quiet=not args.verbose)
    if outcome["built"]:
        print(f"built {len(outcome['jars'])} jars in {outcome['seconds']:.1f} s")
    else:
        print("jars are up to date (servers/ unchanged); use --force to rebuild")
    for name, jar in outcome["jars"].items():
        print(f"  {name:16} {jar}")
    go = outcome["go"]
    if "skipped" in go:
        print(f"  {'go-nethttp':16} skipped: {go['skipped']}")
    else:
        state = f"built in {go['seconds']:.1f} s" if go["built"] else "up to date (servers/go unchanged)"
        print(f"  {'go-nethttp':16} {go['binary']}  {state}")
    return 0


def cmd_run(args) -> int:
    from .api import run
    from .present.terminal import format_run, printable

    print(printable(format_run(run(**_given(args, "run")))))
    return 0


def cmd_compare(args) -> int:
    from .api import compare
    from .present.terminal import print_suite

    suite = compare(**_given(args, "compare"))
    print_suite(suite)
    failed = int((suite.runs["status"] == "failed").sum()) if len(suite.runs) else 0
    if failed:
        print(f"benchlab: {failed} of {len(suite.runs)} runs failed (see the flags); a second call with the same "
              "options runs only those again", file=sys.stderr)
    return 1 if failed else 0


def cmd_show(args) -> int:
    import warnings

    from .analysis.suite import load
    from .present.terminal import print_suite

    with warnings.catch_warnings():  # the damaged files are printed with the flags, a line each
        warnings.simplefilter("ignore")
        suite = load(*args.paths, baseline=args.baseline)
        written = []
        if args.hdr is not None:  # before printing: a mistake here is the one line the command prints
            from .present.export import export_hdr

            given = {k.removeprefix("hdr_"): v for k, v in vars(args).items() if k in ("hdr_unit", "hdr_digits")}
            written = export_hdr(suite, args.hdr, **given)
        if args.profiles is not None:
            from .present.export import export_profile

            written += export_profile(suite, args.profiles)
        print_suite(suite)
    for path in written:
        print(f"wrote {path}")
    return 0


def _print_image(image) -> None:
    state = f"built in {image.seconds:.1f} s" if image.built else "up to date"
    print(f"  {image.tag:40} {image.size / 1e6:6.1f} MB  {state}")


def cmd_image(args) -> int:
    from .running.backends.docker import images, native_images
    from .running.backends.docker.engine import connect

    client = connect(args.docker_host)
    if args.action in ("base", "all"):
        _print_image(images.build_base(client, force=args.force))
    if args.action in ("servers", "all"):
        for name, image in native_images.build_all(client, base_image=args.base_image, force=args.force).items():
            if isinstance(image, str):  # a reference whose program is not installed here
                print(f"  {name:40} {image}")
            else:
                _print_image(image)
    if args.action in ("wrk", "all"):
        _print_image(images.build_wrk(client, force=args.force))
    return 0


def _value(text: str):
    """A -p value as YAML: 64 -> int, 1.5 -> float, true -> bool, null -> None, [a, b] -> list, 2s -> str."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def cmd_report(args) -> int:
    from .report import execute

    params = {key: _value(value) for key, value in args.parameters}
    done = execute(args.notebook, params, output=args.output, timeout=args.timeout, log_output=args.log_output)
    print(f"wrote {done.ipynb}\nwrote {done.html}\n({done.seconds:.0f} s)")
    return 0


def cmd_batch(args) -> int:
    from .report import NotebookFailed, batch

    outcomes = batch(args.batch, keep_going=not args.stop_on_failure)
    failed = [o for o in outcomes if isinstance(o, NotebookFailed)]
    print(f"{len(outcomes) - len(failed)} report(s) written, {len(failed)} failed")
    return 1 if failed else 0


def cmd_doctor(args) -> int:
    """Print the table of load tools and runtimes; exit 1 when a driver is missing."""
    from .running.doctor import doctor, format_doctor

    rows = doctor()
    print(format_doctor(rows))
    return 0 if all(r["installed"] for r in rows if r["kind"] == "driver") else 1


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="benchlab", description="Compare web servers under load.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("build", help="build the four Spring Boot jars and the Go server (each skipped when unchanged)")
    p.add_argument("--force", action="store_true")
    p.add_argument("--verbose", action="store_true")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("run", help="measure one server once")
    _add_options(p, "run")
    p.set_defaults(func=cmd_run)

    from .running.backends.docker.images import REGISTRY_BASE

    p = sub.add_parser("image", help="build the docker images (offline base, servers, wrk); skipped when unchanged")
    p.add_argument("action", choices=["base", "servers", "wrk", "all"])
    p.add_argument("--docker-host", default=None, help="the engine to build on (default: DOCKER_HOST)")
    p.add_argument("--base-image", default=None,
                   help=f"servers: the base image, e.g. {REGISTRY_BASE} (default: the offline base)")
    p.add_argument("--force", action="store_true", help="rebuild even when the inputs did not change")
    p.set_defaults(func=cmd_image)

    p = sub.add_parser("compare", help="compare servers: repeated, interleaved runs and statistics")
    _add_options(p, "compare")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("show", help="print the summary, verdicts and flags of stored results")
    p.add_argument("paths", nargs="+", help="results directories")
    p.add_argument("--baseline", default=None)
    p.add_argument("--hdr", default=None, metavar="DIR",
                   help="also write each cell's latency as an HdrHistogram log in DIR (docs/hdrhistogram.md)")
    p.add_argument("--hdr-unit", default=argparse.SUPPRESS, metavar="UNIT",
                   help="what the logs' whole numbers count: ns, us or ms (default: us, as wrk2 writes)")
    p.add_argument("--hdr-digits", default=argparse.SUPPRESS, type=int, metavar="N",
                   help="HdrHistogram's significant digits, 1 to 5 (default: 3, 0.1%%)")
    p.add_argument("--profiles", default=None, metavar="DIR",
                   help="also write each server's profile (profile=True) in DIR as collapsed stacks and a speedscope "
                        "file (docs/why.md)")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("doctor", help="list the load tools and runtimes: installed, version, how to install")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("report", help="execute a notebook with parameters; write the .ipynb and a standalone .html")
    p.add_argument("notebook", help="e.g. notebooks/compare.ipynb")
    p.add_argument("-p", "--parameter", nargs=2, action="append", default=[], dest="parameters",
                   metavar=("KEY", "VALUE"), help="a parameter (repeatable); VALUE is YAML: 64, 2s, true, [a, b]")
    p.add_argument("-o", "--output", default=None,
                   help="the executed notebook (.ipynb) or a folder for it (default data/reports/)")
    p.add_argument("--timeout", type=float, default=None, help="seconds any one cell may take (default no limit)")
    p.add_argument("--log-output", action="store_true", help="echo the notebook's output while it runs")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("batch", help="execute the reports of a YAML batch file in order")
    p.add_argument("batch", help="a YAML batch file, e.g. data/batch-example.yaml")
    p.add_argument("--stop-on-failure", action="store_true", help="stop at the first failed report")
    p.set_defaults(func=cmd_batch)
    return parser


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


class _Notes(logging.Handler):
    """The library's notes (the ``benchlab`` log: waiting for cores, a retake, a failed run, a lost host) on stderr,
    a line each as they were printed, above a progress bar rather than through it, without the control characters
    a stored file may carry."""

    def emit(self, record: logging.LogRecord) -> None:
        from tqdm import tqdm

        from .present.terminal import printable

        tqdm.write(printable(self.format(record)), file=sys.stderr)


def _notes_on_stderr() -> None:
    log = logging.getLogger("benchlab")
    if not any(isinstance(h, _Notes) for h in log.handlers):  # main() called again in one process
        log.addHandler(_Notes())


def main(argv: list[str] | None = None) -> int:
    import signal

    _notes_on_stderr()
    parser = build_parser()
    args = parser.parse_args(argv)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return args.func(args)
    except BenchlabError as exc:
        from .present.terminal import printable

        first, _, rest = printable(str(exc)).partition("\n")  # it may quote a stored file
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
