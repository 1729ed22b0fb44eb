"""The replay of the published claims: its parameters checked, the claims chosen, and each experiment's load
shape, stack and procedure as ``compare()`` options (:mod:`benchlab.present.claimtables` shows what they found).

:func:`benchlab.reproduce.experiments` runs the experiments by these plans for ``notebooks/reproduce.ipynb``;
each is tested on its own (``tests/test_claims.py``).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ..analysis import claims
from .notebook import ParameterError

#: The experiments of ``claims.csv`` this notebook replays: the two seed write-ups (their load shapes are
#: the notebook's own parameters) and those whose load shape :func:`plan` reads from the table.
EXPERIMENTS = ("wrk", "jmeter", "wrk-512", "jmeter-ramp", "h2load-count", "wrk-pipelined", "wrk-512-pipelined",
               "rate-1k", "rate-1k-close", "rate-5k", "rate-10k", "h2load-h2-256")
#: Why the other experiments are not replayed (none is, today).
NOT_REPLAYED: dict[str, str] = {}
#: The most requests/s a fixed-rate replay offers here: vegeta takes about 20% of a core per 1,000/s (README,
#: Load models) and has one load core on this machine; a source's higher rate is replayed at this one, said so.
RATE_CAP = 3000.0
#: A count experiment's load tool: the table's tool, or the nearest benchlab drives (h2load for ApacheBench).
TOOLS = {"JMeter": "jmeter", "ApacheBench": "h2load"}
#: What a load shape has that the table's columns do not: JMeter's ramp-up in the Java Code Geeks test.
RAMP_UP = {"jmeter-ramp": 10}
COUNT_DRIVERS = ("jmeter", "wrk", "h2load")
#: ``stack``: what the servers run on. ours: this machine's default java with the JVM's own GC and heap;
#: theirs: each source's JDK (the nearest installed) and JVM options; both: one after the other.
STACKS = {"ours": ("ours",), "theirs": ("theirs",), "both": ("ours", "theirs")}
#: ``procedure``: how the runs are taken (:data:`benchlab.analysis.claims.PROCEDURES`). controlled: warm by the
#: warm-up rule, interleaved fresh servers; theirs: the source's warm-up and runs, back to back; both.
PROCEDURES = {"controlled": ("controlled",), "theirs": ("theirs",), "both": ("controlled", "theirs")}


def check(*, experiments, users, loops, count_drivers, stack="ours", procedure="controlled") -> None:
    """The replay's own parameters, beyond their types: a ParameterError that says what to give."""
    unknown = sorted(set(experiments) - set(EXPERIMENTS))
    if unknown:
        raise ParameterError(f"unknown experiment {', '.join(unknown)}: choose {', '.join(EXPERIMENTS)}")
    if stack not in STACKS:
        raise ParameterError(f"stack {stack!r}: choose {', '.join(STACKS)}")
    if procedure not in PROCEDURES:
        raise ParameterError(f"procedure {procedure!r}: choose {', '.join(PROCEDURES)}")
    if len(users) != len(loops):
        raise ParameterError("users and loops pair up: give lists of the same length")
    if not count_drivers or sorted(set(count_drivers) - set(COUNT_DRIVERS)):
        raise ParameterError(f"count_drivers {count_drivers!r}: give one or more of {', '.join(COUNT_DRIVERS)}")


def select(claim_table: pd.DataFrame, wanted) -> pd.DataFrame:
    """The claims ``wanted`` names, by claim id or by source (its exact text, or the start of it); all of
    them when it is empty. A name that matches nothing is a ParameterError listing the sources.

    >>> table = claims.read()
    >>> len(select(table, ["jhipster/generator-jhipster"])), select(table, ["wrk-jetty-rps"])["claim"].tolist()
    (1, ['wrk-jetty-rps'])
    """
    if not wanted:
        return claim_table
    keep = pd.Series(False, index=claim_table.index)
    for name in wanted:
        hit = (claim_table["claim"] == name) | claim_table["source"].astype(str).str.startswith(str(name))
        if not hit.any():
            sources = "; ".join(dict.fromkeys(claim_table["source"].astype(str)))
            raise ParameterError(f"claims: {name!r} is no claim id and starts no source; the sources are: {sources}")
        keep |= hit
    return claim_table[keep]


def experiments_of(chosen: pd.DataFrame, asked) -> list[str]:
    """The experiments to run: those ``asked`` that a chosen claim needs, in :data:`EXPERIMENTS` order."""
    needed = set(chosen["experiment"])
    return [e for e in EXPERIMENTS if e in asked and e in needed]


def plan(chosen: pd.DataFrame, experiment: str, *, duration: float, count_scale: float, servers=None) -> dict:
    """The ``compare()`` options of an experiment whose load shape the table holds (not the seed two, whose
    shapes are the notebook's parameters): the servers its testable ``chosen`` claims compare (with ``servers``,
    only the claims whose every server is one of those or a variant of one), scenario and load point,
    ``duration`` seconds at most for a timed load, the loops times ``count_scale`` (one at least) for a counted
    one, a fixed rate of :data:`RATE_CAP` at most, and what was scaled in words: ``{"options": {...}, "said": "..."}``.

    >>> plan(claims.read(), "h2load-count", duration=10, count_scale=0.1)["options"]["driver"]
    'h2load'
    """
    rows = chosen[(chosen["experiment"] == experiment) & ~chosen["untestable"].map(claims.given)]
    first = rows.iloc[0]
    wanted = None if servers is None else {_base(s) for s in servers}
    runnable = [row for row in rows.to_dict("records")
                if wanted is None or all(_base(s) in wanted for s in claims.servers(row))]
    options: dict = {"servers": list(dict.fromkeys(s for row in runnable for s in claims.servers(row))),
                     "scenarios": [first["scenario"]]}
    if pd.notna(first.get("rate")):
        return _rate_plan(first, options, duration=duration)
    if pd.notna(first.get("users")):
        users, loops = int(first["users"]), int(first["loops"])
        scaled = max(1, round(loops * count_scale))
        tool = next((d for name, d in TOOLS.items() if str(first["tool"]).startswith(name)), "jmeter")
        options.update(load="count", users=[users], loops=[scaled], driver=tool,
                       ramp_up=RAMP_UP.get(experiment, 0))
        said = f"{tool}, {users} users x {scaled} loops" + (f" (theirs {loops})" if scaled != loops else "")
    else:
        seconds = min(float(first["duration_s"]), float(duration))
        depth = int(first["pipelining"]) if pd.notna(first.get("pipelining")) else 1
        options.update(connections=[int(first["connections"])], duration=seconds, pipeline=depth)
        said = (f"{_tool(first)}, {int(first['connections'])} connections" + _streams(first)
                + (f", {depth} requests pipelined" if depth > 1 else "")
                + f", {seconds:g} s" + (f" (theirs {float(first['duration_s']):g} s)"
                                        if seconds != float(first["duration_s"]) else ""))
    return {"options": options, "said": said}


def wire_of(claim_table: pd.DataFrame, experiment: str) -> dict:
    """The ``compare()`` options of what ``experiment``'s requests speak: its claims' wire as ``protocol`` and their
    streams (one experiment, one wire: :func:`benchlab.analysis.claims.read` checks it).

    >>> wire_of(claims.read(), "h2load-h2-256"), wire_of(claims.read(), "wrk")
    ({'protocol': 'h2', 'streams': 100}, {'protocol': 'http1', 'streams': 1})
    """
    first = claim_table[claim_table["experiment"] == experiment].iloc[0]
    return {"protocol": claims.wire(first), "streams": claims.streams(first)}


def _tool(claim) -> str:
    """The load tool a timed replay of ``claim`` drives: h2load over HTTP/2, wrk otherwise (docs/http2.md)."""
    return "h2load" if claims.wire(claim) in ("h2c", "h2") else "wrk"


def _streams(claim) -> str:
    """A claim's wire and streams in words, after its connections ("" for HTTP/1.1)."""
    if claims.wire(claim) == "http1":
        return ""
    return f" over {claims.wire(claim)}" + (f" x {claims.streams(claim)} streams" if claims.streams(claim) > 1 else "")


def _base(server: str) -> str:
    """A server's name without its variant's settings: ``spring-tomcat+vt@java25`` -> ``spring-tomcat``."""
    return str(server).split("+")[0].split("@")[0]


def _rate_plan(first, options: dict, *, duration: float) -> dict:
    """A fixed-rate experiment's options: vegeta at the source's rate (at most :data:`RATE_CAP`), its connection
    per request where the source opened one (``keepalive`` "no"), ``duration`` seconds at most."""
    theirs, seconds = float(first["rate"]), min(float(first["duration_s"]), float(duration))
    rate = min(theirs, RATE_CAP)
    keepalive = not (claims.given(first.get("keepalive")) and str(first["keepalive"]).strip() == "no")
    options.update(load="rate", rates=[rate], duration=seconds, keepalive=keepalive)
    said = (f"vegeta, {rate:g} req/s" + (f" (theirs {theirs:g}: this machine's load core sends about {RATE_CAP:g})"
                                         if rate != theirs else "")
            + ("" if keepalive else ", a new connection a request")
            + f", {seconds:g} s" + (f" (theirs {float(first['duration_s']):g} s)"
                                     if seconds != float(first["duration_s"]) else ""))
    return {"options": options, "said": said}


def procedure_options(claim_table: pd.DataFrame, experiment: str, which: str, *, repeats: int | str,
                     warmup) -> dict:
    """The ``compare()`` options of procedure ``which`` (:data:`PROCEDURES`) for ``experiment``, and the
    procedure in words. controlled: ``repeats`` fresh servers each, interleaved, warmed by ``warmup``;
    theirs: the source's warm-up (none, mostly) and its runs, back to back against one server each
    (``repeats=1, windows=runs``), the servers one after another in their sequence where it is known.

    >>> procedure_options(claims.read(), "wrk", "theirs", repeats=3, warmup="auto")["said"]
    'no warm-up, 3 runs back to back against one server each, the servers one after another'
    """
    if which == "controlled":
        return {"options": {"repeats": repeats, "warmup": warmup}, "sequence": None,
                "said": f"warm-up {warmup}, {repeats} fresh servers each, interleaved"}
    first = claim_table[claim_table["experiment"] == experiment].iloc[0]
    seconds, runs = float(first["procedure_warmup_s"]), int(first["procedure_runs"])
    sequence = str(first["procedure_sequence"]).split(", ") if claims.given(first.get("procedure_sequence")) else None
    warm = "no warm-up" if seconds == 0 else f"a {seconds:g} s warm-up"
    said = (f"{warm}, {runs} run{'s' if runs != 1 else ''} back to back against one server each, the servers one "
            f"after another" + (f" ({', '.join(sequence)})" if sequence else ""))
    return {"options": {"repeats": 1, "windows": runs, "warmup": seconds}, "sequence": sequence, "said": said}


def in_sequence(servers: list, sequence: list | None) -> list:
    """``servers`` in the source's sequence where it gives one (the others after, as listed)."""
    if not sequence:
        return list(servers)
    return sorted(servers, key=lambda s: sequence.index(s) if s in sequence else len(sequence))


def nearest_java(wanted: int | None, have: Mapping[str, int]) -> tuple[str, int] | None:
    """Of the JDKs ``have`` (path -> major), the one nearest to Java ``wanted``: that version, else the lowest
    newer one (a published Java 24 runs on 25), else the newest older one; None when ``wanted`` is None
    (the source does not say: the default java) or there is none.

    >>> nearest_java(24, {"/jdk17/bin/java": 17, "/jdk25/bin/java": 25})
    ('/jdk25/bin/java', 25)
    >>> nearest_java(8, {"/jdk17/bin/java": 17, "/jdk25/bin/java": 25}), nearest_java(None, {"/j": 17})
    (('/jdk17/bin/java', 17), None)
    """
    if wanted is None or not have:
        return None
    newer = sorted((major, path) for path, major in have.items() if major >= wanted)
    older = sorted((major, path) for path, major in have.items() if major < wanted)
    major, path = newer[0] if newer else older[-1]
    return path, major


def stack_options(claim_table: pd.DataFrame, experiment: str, which: str, have: Mapping[str, int]) -> dict:
    """The ``compare()`` options that run ``experiment`` on stack ``which`` (:data:`STACKS`), and what that
    is in words: ``{"options": {...}, "said": "..."}``. Theirs takes the source's JVM options and the
    installed JDK nearest to its Java (``have``: path -> major, ``benchlab.running.variants.installed()``).

    >>> table = claims.read()
    >>> stack_options(table, "jmeter", "theirs", {"/jdk17/bin/java": 17})["said"]
    'their JVM options -Xms4096m -Xmx4096m -XX:+UseG1GC, the default java (theirs is not stated)'
    >>> stack_options(table, "wrk", "theirs", {"/jdk25/bin/java": 25})["options"]
    {'java': '/jdk25/bin/java', 'jvm_opts': []}
    """
    if which == "ours":
        return {"options": {}, "said": "the default java, the JVM's own GC and heap"}
    theirs = claims.published_stack(claim_table, experiment)
    nearest = nearest_java(theirs["java"], have)
    options: dict = {"jvm_opts": theirs["jvm_opts"]}
    if nearest:
        options = {"java": nearest[0], **options}
    java = (f"Java {nearest[1]} for their {theirs['java']}" if nearest else
            "the default java (theirs is not stated)" if theirs["java"] is None else
            f"the default java (no JDK near their {theirs['java']})")
    opts = f"their JVM options {' '.join(theirs['jvm_opts'])}" if theirs["jvm_opts"] else "the JVM's own GC and heap"
    return {"options": options, "said": f"{opts}, {java}"}


def replayable(chosen: pd.DataFrame) -> pd.DataFrame:
    """The chosen claims, those of an experiment this notebook does not replay marked untestable, with why."""
    reason = chosen["experiment"].map(NOT_REPLAYED)
    marked = chosen["untestable"].where(chosen["untestable"].map(claims.given), reason)
    return chosen.assign(untestable=marked)


def label(which: str, way: str) -> str:
    """A run's stack and procedure in words, as a column says them: "" for ours and controlled."""
    return ", ".join(word for word in ("their stack" if which == "theirs" else "",
                                       "their procedure" if way == "theirs" else "") if word)
