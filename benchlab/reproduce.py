"""Reproduce the published experiments: every replay the chosen claims need, run or read back, per stack and procedure.

``notebooks/reproduce.ipynb`` calls :func:`experiments` once and shows what it returns. Each experiment's load
shape, stack and procedure as ``compare()`` options are :mod:`benchlab.present.replay`'s plans; the two seed
experiments (wrk and the JMeter count) take their load shape from the notebook's parameters (:class:`Seeds`),
the others from ``data/published/claims.csv``. What the published setups were, beside ours, is
:meth:`Replayed.differences`, read from the same table.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .analysis.claims import given
from .analysis.suite import Suite, load
from .present import charts, header, replay
from .running.options import Comparison
from .store.results import Run

log = logging.getLogger(__name__)

#: The seed experiments: their load shapes are the notebook's parameters, not the table's.
SEEDS = ("wrk", "jmeter")


@dataclass(frozen=True)
class Seeds:
    """The load shapes of the seed experiments, as the notebook's parameters give them: wrk's scenario,
    connections, threads (None: one per load core) and duration; the count experiment's scenario, users x
    loops (the published loops, scaled by ``count_scale``, one at least) and its load tools, the published one
    first (it judges the claims).

    >>> Seeds(users=[100, 1000], loops=[1000, 100], count_scale=0.1).scaled_loops
    [100, 10]
    """

    scenario: str = "hello"
    connections: int = 200
    threads: int | None = None
    duration: str | float = "10s"
    count_scenario: str = "reflect"
    users: tuple[int, ...] = (100, 1000)
    loops: tuple[int, ...] = (1000, 100)
    count_scale: float = 0.1
    count_drivers: tuple[str, ...] = ("jmeter", "wrk")

    def __post_init__(self) -> None:
        for name in ("users", "loops", "count_drivers"):  # a notebook's parameters are lists
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @property
    def scaled_loops(self) -> list[int]:
        return [max(1, round(n * self.count_scale)) for n in self.loops]

    def shape(self, experiment: str, servers: list[str]) -> dict:
        """The ``compare()`` load options of a seed experiment."""
        if experiment == "wrk":
            return {"servers": servers, "scenarios": [self.scenario], "connections": [self.connections],
                    "threads": self.threads, "duration": self.duration}
        return {"servers": servers, "scenarios": [self.count_scenario], "load": "count", "users": list(self.users),
                "loops": self.scaled_loops}


@dataclass
class Replayed:
    """What the replay ran or read back: ``by_replay``, per (stack, procedure), ``({experiment: Suite}, {count
    driver: Suite})``, and ``said``, per (stack, procedure), ``{experiment: how it ran, in words}``."""

    by_replay: dict[tuple[str, str], tuple[dict[str, Suite], dict[str, Suite]]] = field(default_factory=dict)
    said: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)

    @property
    def suites(self) -> dict[str, Suite]:
        """The first stack and procedure's suites by experiment: every table after the claims shows these."""
        return next(iter(self.by_replay.values()), ({}, {}))[0]

    @property
    def count_suites(self) -> dict[str, Suite]:
        """The first stack and procedure's count experiment, a suite per load tool."""
        return next(iter(self.by_replay.values()), ({}, {}))[1]

    @property
    def everything(self) -> dict[str, Suite]:
        """Every suite, named by its experiment (the count one by its tool) and its stack and procedure."""
        out = {}
        for key, (found, counted) in self.by_replay.items():
            for name, suite in {**found, **{f"count ({d})": c for d, c in counted.items()}}.items():
                out[f"{name} ({replay.label(*key)})" if replay.label(*key) else name] = suite
        return out

    @property
    def records(self) -> list[Run]:
        """Every finished run of every suite."""
        return [r for s in self.everything.values() for r in s.records if r.status == "ok"]

    @property
    def machine(self) -> str:
        """The machine the runs were measured on, in one line (:func:`benchlab.present.charts.machine_of`)."""
        return charts.machine_of(self.records)

    def show(self, echo=print) -> header.Header:
        """Say what each suite holds and how each experiment ran, a line each through ``echo`` (the notebook's
        output by default); return the header of what was measured."""
        everything = self.everything
        for name, suite in everything.items():
            echo(f"{name}: {len(suite.records)} runs, {sum(r.status == 'ok' for r in suite.records)} ok, "
                 f"stored in {suite.path}")
        for key, words in self.said.items():
            echo(f"{replay.label(*key) or 'our stack, controlled procedure'}: "
                 + "; ".join(f"{e} on {text}" for e, text in words.items()))
        return header.measured([r for s in everything.values() for r in s.records],
                               what="the published experiments, re-run: " + (", ".join(everything) or
                                                                              "none (no chosen claim needs one)"))

    def differences(self, catalogue: pd.DataFrame, seeds: Seeds, *, warmup) -> pd.DataFrame:
        """The seed experiments' setups as their sources state them (``catalogue``, the claims table, and the
        published figures' files) beside ours: versions, stack, machine, load, runs and queues."""
        from .running.importers import published

        wrk, count = (catalogue[catalogue["experiment"] == e].iloc[0] for e in SEEDS)
        boot = {e: published(e)["spring_boot"].iloc[0] for e in SEEDS}
        pairs = catalogue[catalogue["experiment"] == "jmeter"][["users", "loops"]].drop_duplicates()
        ours = self.records[0] if self.records else None
        meta = ours.metadata if ours else {}
        rows = [
            ("Spring Boot", f"{boot['wrk']} (wrk), {boot['jmeter']} (JMeter)",
             meta.get("server", {}).get("spring_boot_version") or "?"),
            ("Java", _both(wrk, count, "java", lambda v: f"{v:g}"), meta.get("java", {}).get("version") or "?"),
            ("stack", _both(wrk, count, "stack"),
             " | ".join(f"{replay.label(*key) or 'ours'}: " + "; ".join(f"{e} on {text}" for e, text in words.items())
                        for key, words in self.said.items())),
            ("machine", _both(wrk, count, "machine"), self.machine),
            ("wrk load", f"{wrk['tool']}, /{wrk['scenario']}",
             f"{f'{seeds.threads} threads' if seeds.threads else 'one thread per load core'}, {seeds.connections} "
             f"connections, {seeds.duration} after {warmup} warm-up, {seeds.scenario}"),
            ("JMeter load", " and ".join(f"{u:g} x {n:g}" for u, n in pairs.itertuples(index=False))
             + f" users x loops, /{count['scenario']}",
             f"{' and '.join(f'{u} x {n}' for u, n in zip(seeds.users, seeds.scaled_loops))} users x loops, "
             f"{seeds.count_scenario}, with {' and '.join(seeds.count_drivers)}"),
            ("runs per server", _both(wrk, count, "runs") + f"; in {_both(wrk, count, 'run_order')} order",
             " | ".join(f"{replay.label(*key) or 'controlled'}: {words.get('wrk', '').split('; ')[-1]}"
                        for key, words in self.said.items())),
            ("accept queue", "not stated", "; ".join(sorted({
                f"{r.params.get('server')}: {r.metadata['accept_queue'].get('value')} "
                f"({r.metadata['accept_queue'].get('source')})" for r in self.records
                if r.metadata.get("accept_queue")})) or "?"),
            ("kernel somaxconn", "not stated", str(meta.get("network", {}).get("somaxconn")) if ours else "?"),
        ]
        return pd.DataFrame(rows, columns=["", "published", "here"]).set_index("")


def _both(wrk, count, column: str, fmt=str) -> str:
    """A column of the two seed experiments' claims: once when they agree, else each named."""
    said = [fmt(row[column]) if given(row[column]) else "not stated" for row in (wrk, count)]
    return said[0] if said[0] == said[1] else f"wrk: {said[0]}; JMeter: {said[1]}"


def experiments(chosen: pd.DataFrame, catalogue: pd.DataFrame, asked, seeds: Seeds, template: Comparison, *,
                base: Path, stack: str = "ours", procedure: str = "controlled", measure: bool = True) -> Replayed:
    """Run (``measure``, else read back from ``base``) every experiment of ``asked`` that a ``chosen`` claim needs,
    on each stack of ``stack`` and procedure of ``procedure``: each a comparison into its own folder under ``base``
    (``their-stack``/``their-procedure`` below it where those ran), the count experiment once per load tool
    (``count-<tool>``). Each comparison is the ``template`` (the notebook's servers and baseline, the controlled
    procedure's repeats and warm-up, where the servers run) with the experiment's load shape, stack and procedure
    (:meth:`Comparison.changed`). An experiment whose claims compare a server not in the template's does not run,
    said.

    Example
    -------
    >>> import benchlab.reproduce
    >>> from benchlab.analysis import claims
    >>> table = claims.read(); chosen = replay.select(table, ["wrk write-up"])
    >>> template = Comparison.of(servers=["spring-tomcat", "spring-jetty"], baseline="spring-tomcat")
    >>> done = benchlab.reproduce.experiments(chosen, table, ["wrk"], Seeds(duration="2s"), template,
    ...     base=Path("results/reproduce"))  # doctest: +SKIP
    """
    from .running import variants

    have = variants.installed()
    done = Replayed()
    for which in replay.STACKS[stack]:
        for way in replay.PROCEDURES[procedure]:
            place = _place(base, which, way)
            found: dict[str, Suite] = {}
            counted: dict[str, Suite] = {}
            words: dict[str, str] = {}
            for experiment in replay.experiments_of(chosen, asked):
                planned = _planned(chosen, catalogue, experiment, seeds, template, which=which, way=way, have=have)
                if planned is None:
                    continue
                comparison, words[experiment] = planned
                if experiment == "jmeter":  # the count experiment, once per load tool
                    for driver in seeds.count_drivers:
                        counted[driver] = _suite(comparison.changed(driver=driver), place / f"count-{driver}", measure)
                else:
                    found[experiment] = _suite(comparison, place / experiment, measure)
            done.by_replay[(which, way)] = (found, counted)
            done.said[(which, way)] = words
    return done


def _place(base: Path, which: str, way: str) -> Path:
    """Where stack ``which`` and procedure ``way`` keep their comparisons under ``base``; the source's procedure in
    ``their-procedure``, or in ``their-protocol`` where runs were stored under that older word and no new ones."""
    stack = base / ("their-stack" if which == "theirs" else "")
    if way != "theirs":
        return stack
    old = stack / "their-protocol"
    return old if old.is_dir() and not (stack / "their-procedure").exists() else stack / "their-procedure"


def _planned(chosen: pd.DataFrame, catalogue: pd.DataFrame, experiment: str, seeds: Seeds, template: Comparison, *,
             which: str, way: str, have) -> tuple[Comparison, str] | None:
    """(the ``template`` with ``experiment``'s load shape, stack ``which`` and procedure ``way``, how it runs in
    words), or None when each of its claims compares a server not in the template's, said."""
    on = replay.stack_options(catalogue, experiment, which, have)
    how = replay.procedure_options(catalogue, experiment, way, repeats=template.design()[0],
                                  warmup=template.run.warmup)
    shape, load_said = _shape(chosen, experiment, seeds, _names(template.servers))
    if not shape["servers"]:
        log.warning(f"{experiment}: each of its claims compares a server that is not in servers, so it does not run")
        return None
    shape["servers"] = replay.in_sequence(shape["servers"], how["sequence"])
    first = template.baseline if template.baseline in shape["servers"] else shape["servers"][0]
    # what the requests speak is the claims' wire, whatever the template's: an h2 claim replayed over HTTP/1.1 is
    # another experiment
    comparison = template.changed(**shape, **how["options"], **on["options"], **replay.wire_of(catalogue, experiment),
                                  baseline=first)
    return comparison, f"{load_said}{on['said']}; {how['said']}"


def _names(servers) -> list[str]:
    """The template's servers as names (a server of your own by its name)."""
    return [servers] if isinstance(servers, str) else [getattr(s, "name", s) for s in servers]


def _shape(chosen: pd.DataFrame, experiment: str, seeds: Seeds, servers: list[str]) -> tuple[dict, str]:
    """(the experiment's load options, its load in words for a table-planned one, else "")."""
    from .running.load import parse_duration

    if experiment in SEEDS:  # the seed two's loads are the parameters, said in the differences table
        return seeds.shape(experiment, list(servers)), ""
    planned = replay.plan(chosen, experiment, duration=parse_duration(seeds.duration), count_scale=seeds.count_scale,
                          servers=servers)
    return planned["options"], planned["said"] + "; "


def _suite(comparison: Comparison, folder: Path, measure: bool) -> Suite:
    """The comparison measured into ``folder`` (``measure``), else its runs read back from there."""
    from .api import carry_out

    return carry_out(comparison, results_dir=folder) if measure else load(folder, baseline=comparison.baseline)
