"""What the command line prints: one run, and a suite's summary, per-fork table, verdicts and flags.

Everything printed goes through :func:`printable`: names, ids and errors come from stored files, which may
come from anyone, and a terminal obeys the escape sequences in what it is sent.
"""

from __future__ import annotations

import re

from ..analysis.cost import offered
from . import formatting
from .numbers import UNITS
from .numbers import ms as _ms  # one formatter for the terminal, the notebooks and the report

# ESC sequences first (CSI such as cursor moves, OSC such as OSC 52's clipboard write, then any other ESC
# pair), then what is left of C0 but newline and tab, DEL and C1 (of which 0x9b is a one-byte CSI).
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]?|\x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?|\x1b[PX^_][^\x1b\x9c]*"
                      r"(?:\x1b\\|\x9c)?|\x1b.?|[\x00-\x08\x0b-\x1f\x7f-\x9f]", re.DOTALL)


def printable(text: str) -> str:
    r"""``text`` without control characters (C0 but newline and tab, DEL, C1) or escape sequences.

    >>> printable("tomcat\x1b]52;c;ZWNobyBoaQ==\x07\x1b[2J\x1b[Hok\r\x9b31m!")
    'tomcatok31m!'
    """
    return _CONTROL.sub("", text)


def _print(text: str = "") -> None:
    print(printable(str(text)))


def _mib(value) -> str:
    return "-" if value is None else f"{value / 2**20:.0f} MiB"


def _pct(value) -> str:
    return "-" if value is None else f"{value:.0f}%"


def _warmup(asked, metrics) -> str:
    took = metrics.get("warmup_s")
    if asked != "auto":
        return f"{asked:g}s"
    if not took:
        return "auto"
    said = ", not warm" if metrics.get("warm") is False else ""
    kind = f", {metrics['warmup_class']}" if metrics.get("warmup_class") else ""
    quiet = f", JIT quiet at {metrics['jit_quiet_s']:.0f} s" if metrics.get("jit_quiet_s") is not None else ""
    return f"auto ({took:.0f} s{kind}{quiet}{said})"


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
        achieved = m.get("achieved_rps") or m["rps"]
        lines.append(f"  target      {m['target_rps']:,.1f}/s  (achieved {achieved / m['target_rps']:.1%})")
    if m.get("cpu_per_request"):
        lines.append(f"  cost        {m['cpu_per_request'] * 1e6:,.1f} µs of server CPU a request "
                     f"({m['server_cpu_s']:.2f} s over the window)")
    lines.append("  latency     " + "  ".join(
        f"{name} {_ms(m.get(key))}" for name, key in
        (("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p99.9", "p999"), ("max", "lat_max"))))
    from ..schema import ERROR_KINDS

    errors = {k: m.get(f"errors_{k}") for k in ERROR_KINDS}
    lines.append("  errors      " + (", ".join(f"{k} {v}" for k, v in errors.items() if v) or "none"))
    lines.append(f"  server      cpu {_pct(m.get('server_cpu_mean'))} mean, rss {_mib(m.get('server_rss_max'))} max, "
                 f"startup {m['startup_ms']:.0f} ms" if m.get("startup_ms") is not None else
                 f"  server      cpu {_pct(m.get('server_cpu_mean'))} mean, rss {_mib(m.get('server_rss_max'))} max")
    cores = p.get("load_cores") or 1
    lines.append(f"  load tool   cpu {_pct(m.get('load_cpu_mean'))} mean of {cores * 100}% on cores "
                 f"{','.join(map(str, p['load_cpus']))}")
    for g in run.metadata.get("generators") or ():  # a load spread over several generators: each one's own part
        share = f"rate={g['rate']:g}/s" if g.get("rate") else f"c={g['connections']}"
        lines.append(f"  generator {g['generator']} {g['host']} {share}: {g['requests']:,} requests, p99 "
                     f"{_ms(g.get('p99'))}, cpu {_pct(g.get('cpu_mean'))} mean on cores "
                     f"{','.join(map(str, g['cpus']))}{' (shared)' if g.get('shared_cores') else ''}")
    lines.append(f"  stored      {run.id}")
    return "\n".join(lines)


def wall_text(seconds: float) -> str:
    """``95`` -> "1 min 35 s", ``3725`` -> "1 h 2 min"."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def warmup_line(runs) -> str:
    """How the runs were warmed, said before any number: a fixed warm-up is not judged steady."""
    from ..analysis.cells import ok as finished

    ok = finished(runs)
    if not len(ok) or "warmup" not in ok:
        return "warm-up: no finished run"
    fixed = sorted({float(w) for w in ok["warmup"] if w != "auto" and w is not None})
    auto = ok[ok["warmup"] == "auto"]
    parts = []
    if len(auto):
        unsteady = int((auto["warm"] == False).sum()) if "warm" in auto else 0  # noqa: E712 - a column of objects
        took = auto["warmup_s"].astype(float)
        text = f"auto in {len(auto)} runs ({took.min():.0f}-{took.max():.0f} s"
        if "jit_quiet_s" in auto and auto["jit_quiet_s"].notna().any():
            quiet = auto["jit_quiet_s"].dropna().astype(float)
            text += f"; JIT quiet at {quiet.min():.0f}-{quiet.max():.0f} s"
        kinds = auto["warmup_class"].dropna().value_counts() if "warmup_class" in auto else {}
        if len(kinds):
            text += "; " + ", ".join(f"{kind} {count}" for kind, count in kinds.items())
        parts.append(text + ")" + (f", {unsteady} not warm at the limit (flag not_warm)" if unsteady else
                                   ", all warm: compiler quiet and throughput steady"))
    if fixed:
        parts.append(f"fixed {', '.join(f'{w:g} s' for w in fixed)}, not judged steady: on one core a JVM can take "
                     "minutes to warm, so use warmup auto for figures to quote")
    return "warm-up: " + "; ".join(parts)


def print_suite(suite, metrics=("rps", "p50", "p99")) -> None:
    """The summary, the verdicts and the flags of a suite, for a terminal; at a fixed rate, what it cost too."""
    import pandas as pd

    from ..analysis import cost
    from ..analysis.cells import varying

    with pd.option_context("display.width", 200, "display.max_columns", 40, "display.max_colwidth", 120):
        judged = (*cost.judged(suite.runs), *(("capacity_rps",) if cost.searched(suite.runs) else ()))
        summary = suite.summary((*metrics, *judged))
        keep = varying(summary)
        several = bool((summary["windows"] > summary["n"]).any()) if len(summary) else False
        columns = ["n", "windows", "mean", "ci_low", "ci_high", "cv", "between_cv", "within_cv"] if several else \
            ["n", "mean", "ci_low", "ci_high", "cv"]
        shown = summary[[*keep, "server", "metric", *columns, "ratio", "flags"]].copy()
        # each figure in its metric's unit (ms, µs, MiB), as the notebooks show it
        factor = shown["metric"].map(lambda m: UNITS.get(formatting.unit_kind(m), (1.0, ""))[0])
        for column in ("mean", "ci_low", "ci_high"):
            shown[column] = shown[column].astype(float) * factor
        shown["metric"] = shown["metric"].map(lambda m: m if m == "rps" else formatting.metric_name(m))
        _print(f"{suite!r}  baseline: {suite.baseline}" + (f"  stored in {suite.path}" if suite.path else ""))
        _print(warmup_line(suite.runs))
        _offered(suite)
        _custom(suite)
        _precision(suite)
        spent = getattr(suite, "budget", None)
        if spent:
            _print(f"budget: {spent['text']}")
        design = getattr(suite, "design", None)
        if design:
            _print(f"windows=auto: {design['why']}")
        took = suite.wall_s
        if took is not None:
            _print(f"the runs took {wall_text(took)} of wall time, first start to last end")
        _hosts(suite)
        _print()
        number = _number  # one rule for every figure; an interval that does not exist is "-", not NaN
        for column in ("ci_low", "ci_high"):
            shown[column] = shown[column].map(lambda v: "-" if pd.isna(v) else number(v))
        _print(shown.to_string(index=False, float_format=number))
        _print()
        _print("per-fork requests/s:")
        _print(formatting.per_fork(suite.table("rps")).to_string())  # the notebooks' rounding: one rule
        _print()
        # rps and p99; at a fixed rate, what serving it cost each server; with slo=, what each carried
        for metric in ("rps", "p99", *judged):
            for verdict in suite.verdicts(metric)["verdict"]:
                _print("  " + verdict)
        _ceiling(suite)
        _profiles(suite)
        flags = suite.flags()
        if len(flags):
            _print()
            _print("flags:")
            for _, flag in flags.iterrows():
                if flag["flag"] == "damaged" or flag["level"] == "host":  # no run to name: the line names it
                    _print(f"  [{flag['flag']}] {flag['explanation']}")
                    continue
                _print(f"  [{flag['flag']}] {_whose(flag)}: {flag['explanation']}")


def _whose(flag) -> str:
    """Whose flag a row of the flags frame is: a window, named with what it is (used, left out, retaken: a
    retaken window's flags are not the kept one's), or a cell's every repeat."""
    return f"{flag['id']} ({flag['standing']})" if flag["level"] == "run" else f"{flag['server']} (all repeats)"


def _offered(suite) -> None:
    """The common rate of ``rates="auto"``, where it set the rate (:func:`benchlab.analysis.cost.offered`)."""
    common = offered(suite.records)
    if common:
        _print(f"rate: {common}")


def _precision(suite) -> None:
    """repeats="auto": the rounds run, the widest rps interval, and whether the precision asked was reached, or what
    stopped the rounds short of it (the budget, or max_repeats)."""
    reached = getattr(suite, "precision", None)
    if reached:
        stopper = "the budget stopped it" if reached.get("budget") else "max_repeats stopped it"
        outcome = "reached" if reached["reached"] else f"NOT reached: {stopper}; the ratios are less precise"
        _print(f"repeats=auto: {reached['repeats']} rounds; widest rps interval +/-{reached['widest']:.1%} "
               f"(asked +/-{reached['asked']:.0%}: {outcome})" + (f"; {reached['note']}" if reached.get("note")
                                                                   else ""))


def _custom(suite) -> None:
    """What the suite says of the user's own servers: a custom server's path beside the built-in ones', and a
    server that was already running (its repeats are windows of one process)."""
    from ..analysis.custom import attached, note, paths

    where, said = paths(suite.records), note(attached(suite.records))
    if where:
        _print(f"paths: {where}")
    if said:
        _print(said)


def _hosts(suite) -> None:
    """With ``compare(hosts=...)`` (docs/scale-out.md): the rounds each host ran, and which differs."""
    ran = suite.hosts()
    if len(ran):
        _print("rounds by host: " + ", ".join(f"{h} {r}" + (" (host_differs: see the flags)" if d else "")
                                              for h, r, d in zip(ran["host"], ran["rounds"], ran["host_differs"])))


def _ceiling(suite) -> None:
    """With a reference server (nginx, go-nethttp): each server's share of the fastest reference's requests/s."""
    from ..analysis.cells import varying

    shares = suite.ceiling()
    if not len(shares):
        return
    _print()
    _print("the machine's ceiling (requests/s as a share of the fastest reference in each cell):")
    cell = varying(shares)  # the cell's columns, where there are several cells
    for row in shares.to_dict("records"):
        _print("  " + "".join(f"{c} {row[c]}, " for c in cell) + row["text"])


def _profiles(suite) -> None:
    """With ``profile=True`` (docs/why.md): each server's CPU a request by layer, the layers that explain most of
    each server's difference from the baseline with their intervals, and what the profiler cost."""
    from ..analysis import profiles

    stacks = suite.profiles
    if stacks.empty:
        return
    _print()
    _print("where the CPU went (profiled windows; µs of server CPU a request, mean over forks):")
    _print(profiles.table(stacks).map(lambda v: f"{v:,.2f}").to_string())
    for server, mine in suite.layers().groupby("server", sort=False):
        top = mine.head(3)
        said = ", ".join(f"{r.layer} {r.difference:+.2f} [{r.low:+.2f}, {r.high:+.2f}]" if r.low == r.low else
                         f"{r.layer} {r.difference:+.2f}" for r in top.itertuples())
        _print(f"  {server} vs {suite.baseline}: {mine['difference'].sum():+.2f} µs a request; most in {said}")
    for row in profiles.slowdown(suite.runs).itertuples():
        interval = f" [{row.low:.3f}, {row.high:.3f}]" if row.low == row.low else ""
        _print(f"  profiling cost {row.server}: profiled window / its fork's other windows, requests/s "
               f"{row.ratio:.3f}{interval} over {row.forks} fork(s); the profiled windows enter no statistic")


def _number(value: float) -> str:
    """A summary figure as the terminal prints it: three decimals below 10, one from 10.

    >>> _number(0.12345), _number(9021.44)
    ('0.123', '9,021.4')
    """
    return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.1f}"
