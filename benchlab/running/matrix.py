"""The run matrix of a comparison: its cells (scenario x load point), every server in each, and their order."""

from __future__ import annotations

import hashlib
import random

from ..errors import UsageError
from ..schema import AUTO, INTERLEAVES, ORDERS, RESTARTS, Interleave, Order, Restart
from ..store.files import slug
from . import factors as factor_specs
from . import servers as server_names
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


def load_points(load: str, connections, users, loops, rates) -> list[dict]:
    """The load settings of the matrix: connections (duration), users x loops pairs (count) or rates."""
    if load == "count":
        users_, loops_ = as_list(users, "users"), as_list(loops, "loops")
        if len(users_) == 1 and len(loops_) > 1:
            users_ = users_ * len(loops_)
        if len(loops_) == 1 and len(users_) > 1:
            loops_ = loops_ * len(users_)
        if len(users_) != len(loops_):
            raise UsageError("users and loops pair up: give lists of the same length, e.g. users=[100, 1000], "
                             "loops=[1000, 100]")
        return [{"users": u, "loops": n, "connections": u} for u, n in zip(users_, loops_)]
    if load == "rate":
        if rates is None:
            raise UsageError("a rate comparison needs rates=[...] in requests per second, e.g. rates=[500, 1000]")
        return [{"rate": r, "connections": c} for r in as_list(rates, "rates")
                for c in as_list(connections, "connections")]
    return [{"connections": c} for c in as_list(connections, "connections")]


def load_tag(spec: RunSpec) -> str:
    load = spec.load
    if load.model == "count":
        return f"u{load.users}x{load.loops}"
    if load.model == "rate":
        return f"rate{load.rate:g}"
    return f"c{load.connections}"


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


def check_design(*, repeats, iterations, precision, max_repeats, restart: Restart, interleave: Interleave = "forks",
                 port=None) -> None:
    """The options that shape a comparison rather than one run: the forks, the windows a fork and their order,
    the precision asked of ``repeats="auto"`` and its ceiling, and whether servers restart."""
    if iterations != AUTO and (isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1):
        raise UsageError(f"iterations must be a whole number of 1 or more, or auto, not {iterations!r}")
    if restart not in RESTARTS:
        raise UsageError(f"unknown restart {restart!r}: choose one of {', '.join(RESTARTS)}")
    if interleave not in INTERLEAVES:
        raise UsageError(f"unknown interleave {interleave!r}: choose one of {', '.join(INTERLEAVES)}")
    if interleave == "windows" and restart == "never":
        raise UsageError("interleave='windows' keeps the forks of a round running together, and restart='never' "
                         "keeps one server for every run: use interleave='forks' with restart='never'")
    if interleave == "windows" and port is not None:
        raise UsageError(f"interleave='windows' runs the forks of a round at once, each on its own port: leave "
                         f"port unset (not {port!r}) so each takes a free one")
    if repeats == AUTO:
        if isinstance(precision, bool) or not isinstance(precision, (int, float)) or not 0 < precision < 1:
            raise UsageError(f"precision must be a fraction between 0 and 1, such as 0.03 for +/-3%, "
                             f"not {precision!r}")
        if isinstance(max_repeats, bool) or not isinstance(max_repeats, int) or max_repeats < 2:
            raise UsageError(f"max_repeats must be a whole number of 2 or more, not {max_repeats!r}")


#: The scenario of a comparison that names none: built-in servers answer it, a custom server its own path.
DEFAULT_SCENARIO = "hello"


def matrix(servers, scenarios=None, connections=(200,), repeats=3, *, order: Order = "interleaved", seed=None,
           load="duration", users=None, loops=None, rates=None, options: dict | None = None, factors=None
           ) -> list[tuple[int, RunSpec]]:
    """The runs of :func:`benchlab.compare` in the order they run: ``[(repeat, spec), ...]``.

    Each repeat runs every cell and every server once before the next repeat starts (A B C A B C), so a
    drift on the machine hits every server alike; ``order="shuffled"`` shuffles inside each repeat.
    ``options`` are the per-run options of :func:`benchlab.running.spec.prepare`; each spec is checked there.
    ``factors`` (:mod:`benchlab.running.factors`) add each server's variants beside it and repeat each cell per
    value of a run option such as ``server_cpus``. Without ``scenarios`` the one cell is
    :data:`DEFAULT_SCENARIO`, which a custom server is measured at its own path for (its runs record the path).
    """
    server_list = as_list(servers, "servers") if servers is not None else []
    if not server_list or server_list == [None]:
        raise UsageError("servers is empty: give at least one, e.g. servers=['spring-tomcat', 'spring-jetty']")
    check_repeats(repeats)
    if order not in ORDERS:
        raise UsageError(f"unknown order {order!r}: choose one of {', '.join(ORDERS)} (never grouped A A A B B B)")
    factors = factor_specs.parse(factors)
    server_list = factor_specs.cross(server_list, factors)
    names = [server_names.get(s).name for s in server_list]
    if len(set(names)) != len(names):
        raise UsageError(f"servers lists one server twice: {', '.join(names)}")
    # The matrix sets the load model and its points; the rest are the same for every run.
    common = {k: v for k, v in (options or {}).items() if k not in ("load", "connections", "users", "loops", "rate")}
    varied = factor_specs.run_options(factors, common)
    common = {k: v for k, v in common.items() if k not in varied[0]}
    cells = []
    named = scenarios is not None
    for scenario in as_list(scenarios, "scenarios") if named else [DEFAULT_SCENARIO]:
        for point in load_points(load, connections, users, loops, rates):
            for setting in varied:
                cells.append([prepare(s, scenario if named else server_names.get(s).own(scenario), load=load,
                                      **common, **point, **setting, tools=False) for s in server_list])
    rng = random.Random(seed)
    runs: list[tuple[int, RunSpec]] = []
    for repeat in range(1, repeats + 1):
        block = [spec for cell in cells for spec in cell]
        if order == "shuffled":
            rng.shuffle(block)
        runs.extend((repeat, spec) for spec in block)
    return runs


def suite_id(runs: list[tuple[int, RunSpec]]) -> str:
    keys = sorted({_server_and_cell(spec) for _, spec in runs})
    return hashlib.sha256(",".join(keys).encode()).hexdigest()[:10]
