"""The run matrix of a comparison: its cells (scenario x load point), every server in each, and their order."""

from __future__ import annotations

import dataclasses
import hashlib
import random

from ..errors import BenchlabError, UsageError
from ..schema import AUTO, INTERLEAVES, ORDERS, RESTARTS
from ..store.files import slug
from . import factors as factor_specs
from . import servers as server_names
from .load import parse_duration
from .options import Comparison
from .spec import RunSpec, prepare


def as_list(value, name: str) -> list:
    if value is None:
        return [None]
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return [value]
    values = list(value)
    if not values:
        raise UsageError(f"{name} is empty: give at least one value")
    return values


def load_points(c: Comparison) -> list[dict]:
    """The load settings of the matrix: connections (duration), users x loops pairs (count) or rates."""
    if c.run.load == "count":
        users_, loops_ = as_list(c.users, "users"), as_list(c.loops, "loops")
        if len(users_) == 1 and len(loops_) > 1:
            users_ = users_ * len(loops_)
        if len(loops_) == 1 and len(users_) > 1:
            loops_ = loops_ * len(users_)
        if len(users_) != len(loops_):
            raise UsageError("users and loops pair up: give lists of the same length, e.g. users=[100, 1000], "
                             "loops=[1000, 100]")
        return [{"users": u, "loops": n, "connections": u} for u, n in zip(users_, loops_)]
    if c.run.load == "rate":
        if c.rates is None:
            raise UsageError("a rate comparison needs rates=[...] in requests per second, e.g. rates=[500, 1000]")
        return [{"rate": r, "connections": n} for r in as_list(c.rates, "rates")
                for n in as_list(c.connections, "connections")]
    return [{"connections": n} for n in as_list(c.connections, "connections")]


def load_tag(spec: RunSpec) -> str:
    load = spec.load
    wire = "" if load.protocol == "http1" else f"-{load.protocol}" + (f"m{load.streams}" if load.streams > 1 else "")
    if load.model == "count":
        return f"u{load.users}x{load.loops}{wire}"
    if load.model == "rate":
        return f"rate{load.rate:g}{wire}"
    return f"c{load.connections}{wire}"


def run_name(spec: RunSpec, repeat: int) -> str:
    """The run's directory name in a comparison: readable, and the same for the same cell and repeat."""
    return slug(f"{spec.server.name}-{spec.scenario.name.replace(':', '')}-{load_tag(spec)}-r{repeat}-"
                f"{_server_and_cell(spec)[:8]}")


def _server_and_cell(spec: RunSpec) -> str:
    """The spec's server and cell as one key: two servers whose names make one folder name stay apart."""
    return hashlib.sha256(f"{spec.server.name}\n{spec.cell_key()}".encode()).hexdigest()[:12]


def check_repeats(repeats, *, auto: bool = False) -> None:
    """``repeats`` is a whole number of 1 or more (or, with ``auto``, the word ``"auto"``)."""
    if auto and repeats == "auto":
        return
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        also = " or 'auto'" if auto else ""
        raise UsageError(f"repeats must be a whole number of 1 or more{also}, not {repeats!r}")


def check_design(comparison: Comparison) -> None:
    """The options that shape a comparison rather than one run: the forks, the windows a fork and their order,
    the precision asked of ``repeats="auto"`` and its ceiling, the budget, and whether servers restart."""
    repeats, windows, interleave = comparison.design()
    restart, precision, max_repeats = comparison.restart, comparison.precision, comparison.max_repeats
    check_repeats(repeats, auto=True)
    if windows != AUTO and (isinstance(windows, bool) or not isinstance(windows, int) or windows < 1):
        raise UsageError(f"windows must be a whole number of 1 or more, or auto, not {windows!r}")
    if restart not in RESTARTS:
        raise UsageError(f"unknown restart {restart!r}: choose one of {', '.join(RESTARTS)}")
    if interleave not in INTERLEAVES:
        raise UsageError(f"unknown interleave {interleave!r}: choose one of {', '.join(INTERLEAVES)}")
    if interleave == "windows" and restart == "never":
        raise UsageError("interleave='windows' keeps the forks of a round running together, and restart='never' "
                         "keeps one server for every run: use interleave='forks' with restart='never'")
    if interleave == "windows" and comparison.run.port is not None:
        raise UsageError(f"interleave='windows' runs the forks of a round at once, each on its own port: leave "
                         f"port unset (not {comparison.run.port!r}) so each takes a free one")
    if repeats == AUTO or comparison.budget is not None:
        if isinstance(precision, bool) or not isinstance(precision, (int, float)) or not 0 < precision < 1:
            raise UsageError(f"precision must be a fraction between 0 and 1, such as 0.03 for +/-3%, "
                             f"not {precision!r}")
        if isinstance(max_repeats, bool) or not isinstance(max_repeats, int) or max_repeats < 2:
            raise UsageError(f"max_repeats must be a whole number of 2 or more, not {max_repeats!r}")
    if comparison.budget is not None:
        budget_seconds(comparison.budget)
    if isinstance(comparison.rates, str) and comparison.rates != AUTO:
        raise UsageError(f"rates is requests per second, one number or a list, or 'auto', not {comparison.rates!r}")
    if comparison.rates == AUTO and comparison.run.load != "rate":
        raise UsageError(f"rates='auto' finds the common rate of a rate comparison: give load='rate', not "
                         f"{comparison.run.load!r}")
    if not isinstance(comparison.borrow, bool):
        raise UsageError(f"borrow must be True or False, not {comparison.borrow!r}")
    from ..analysis.history import folders  # here: the statistics' imports are not every command's to pay

    folders(comparison.history)  # each history folder exists, said before anything starts


#: The least budget a comparison takes: a round of JVM forks warmed by "auto" costs minutes on one core.
LEAST_BUDGET = 60.0


def budget_seconds(budget) -> float:
    """A budget in seconds (``"10m"``, ``"600s"``, ``"1h"``, a number of seconds); at least :data:`LEAST_BUDGET`.

    >>> budget_seconds("10m")
    600.0
    """
    seconds = parse_duration(budget, what="budget")
    if seconds < LEAST_BUDGET:
        raise UsageError(f"budget {budget!r} is less than a round of forks can take: give at least 1m, such as "
                         "budget='10m'")
    return seconds


#: The scenario of a comparison that names none: built-in servers answer it, a custom server its own path.
DEFAULT_SCENARIO = "hello"


def matrix(comparison: Comparison, repeats: int | None = None) -> list[tuple[int, RunSpec]]:
    """The runs of :func:`benchlab.compare` in the order they run: ``[(repeat, spec), ...]``, ``repeats`` rounds
    (default: the comparison's own, 3 unless given).

    Each repeat runs every cell and every server once before the next repeat starts (A B C A B C), so a
    drift on the machine hits every server alike; ``order="shuffled"`` shuffles inside each repeat.
    Each run's spec is checked by :func:`benchlab.running.spec.prepare` from the comparison's run options with its
    load point set. ``factors`` (:mod:`benchlab.running.factors`) add each server's variants beside it and repeat
    each cell per value of a run option such as ``server_cpus``. Without ``scenarios`` the one cell is
    :data:`DEFAULT_SCENARIO`, which a custom server is measured at its own path for (its runs record the path).

    >>> [spec.server.name for _, spec in matrix(Comparison.of(servers=["spring-tomcat", "spring-jetty"]), 1)]
    ['spring-tomcat', 'spring-jetty']
    """
    c = comparison
    rounds = repeats if repeats is not None else c.design()[0]
    server_list = as_list(c.servers, "servers") if c.servers is not None else []
    if not server_list or server_list == [None]:
        raise UsageError("servers is empty: give at least one, e.g. servers=['spring-tomcat', 'spring-jetty']")
    check_repeats(rounds)
    if c.order not in ORDERS:
        raise UsageError(f"unknown order {c.order!r}: choose one of {', '.join(ORDERS)} (never grouped A A A B B B)")
    factors = factor_specs.parse(c.factors)
    server_list = factor_specs.cross(server_list, factors)
    names = [server_names.get(s).name for s in server_list]
    if len(set(names)) != len(names):
        raise UsageError(f"servers lists one server twice: {', '.join(names)}")
    varied = factor_specs.run_options(factors, dataclasses.asdict(c.run))
    # jvm_opts in a comparison with a JVM go to its JVMs; nginx or a Go server beside them runs as it is (its runs
    # record no jvm_opts). Only a comparison with no JVM at all is refused (spec.prepare).
    jvms = {name for name, s in zip(names, server_list) if server_names.get(s).jvm}
    cells = []
    named = c.scenarios is not None
    for scenario in as_list(c.scenarios, "scenarios") if named else [DEFAULT_SCENARIO]:
        for point in load_points(c):
            for setting in varied:
                options = dataclasses.replace(c.run, **point, **setting)
                cells.append([prepare(s, scenario if named else server_names.get(s).own(scenario),
                                      options if name in jvms or not jvms else dataclasses.replace(options,
                                                                                              jvm_opts=()),
                                      tools=False) for name, s in zip(names, server_list)])
    rng = random.Random(c.seed)
    runs: list[tuple[int, RunSpec]] = []
    for repeat in range(1, int(rounds) + 1):
        block = [spec for cell in cells for spec in cell]
        if c.order == "shuffled":
            rng.shuffle(block)
        runs.extend((repeat, spec) for spec in block)
    return runs


def baseline_of(baseline, names: list[str]) -> str:
    """The server every ratio is taken against, of the schedule's ``names``: ``baseline`` (a name or a server),
    else the first server.

    >>> names = ["spring-tomcat", "spring-jetty"]
    >>> baseline_of(None, names), baseline_of("spring-jetty", names)
    ('spring-tomcat', 'spring-jetty')
    """
    if baseline is None:
        return names[0]
    name = baseline if baseline in names else _server_name(baseline)
    if name not in names:
        raise UsageError(f"unknown baseline {baseline!r}: choose one of {', '.join(names)}")
    return name


def _server_name(name) -> str:
    try:
        return server_names.get(name).name
    except BenchlabError:  # not a server benchlab knows: the unknown baseline error names it as given
        return str(name)


def suite_id(runs: list[tuple[int, RunSpec]]) -> str:
    keys = sorted({_server_and_cell(spec) for _, spec in runs})
    return hashlib.sha256(",".join(keys).encode()).hexdigest()[:10]


def rounds(schedule: list[tuple[int, RunSpec]]) -> list[tuple[int, list[RunSpec]]]:
    """The schedule as rounds: each repeat and its runs, in their order.

    >>> [(r, len(specs)) for r, specs in rounds(matrix(Comparison.of(servers=["spring-jetty"]), 2))]
    [(1, 1), (2, 1)]
    """
    out: list[tuple[int, list[RunSpec]]] = []
    for repeat, spec in schedule:
        if not out or out[-1][0] != repeat:
            out.append((repeat, []))
        out[-1][1].append(spec)
    return out
