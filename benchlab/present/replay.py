"""The replay of the published write-ups, for people: its parameters checked, its verdict table, ours beside theirs.

``notebooks/reproduce.ipynb`` runs the experiments and calls these; each is tested on its own
(``tests/test_claims.py``).

>>> ours({"our_order": None, "ours": 1.5, "low": 1.4, "high": 1.62})
'1.50 [1.40, 1.62]'
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ..analysis import claims
from ..analysis.cells import ok
from .notebook import ParameterError

EXPERIMENTS = ("wrk", "jmeter")
COUNT_DRIVERS = ("jmeter", "wrk", "h2load")
#: ``stack``: what the servers run on. ours: this machine's default java with the JVM's own GC and heap;
#: theirs: each source's JDK (the nearest installed) and JVM options; both: one after the other.
STACKS = {"ours": ("ours",), "theirs": ("theirs",), "both": ("ours", "theirs")}


def check(*, experiments, users, loops, count_drivers, stack="ours") -> None:
    """The replay's own parameters, beyond their types: a ParameterError that says what to give."""
    unknown = sorted(set(experiments) - set(EXPERIMENTS))
    if unknown:
        raise ParameterError(f"unknown experiment {', '.join(unknown)}: choose {', '.join(EXPERIMENTS)}")
    if stack not in STACKS:
        raise ParameterError(f"stack {stack!r}: choose {', '.join(STACKS)}")
    if len(users) != len(loops):
        raise ParameterError("users and loops pair up: give lists of the same length")
    if not count_drivers or sorted(set(count_drivers) - set(COUNT_DRIVERS)):
        raise ParameterError(f"count_drivers {count_drivers!r}: give one or more of {', '.join(COUNT_DRIVERS)}")


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


def ours(row) -> str:
    """Our side of one judged claim: the ratio with its interval, or the order we measured, or "-"."""
    if isinstance(row["our_order"], str):
        return row["our_order"].replace("<", " < ")
    if pd.isna(row["ours"]):
        return "-"
    return f"{row['ours']:.2f}" + ("" if pd.isna(row["low"]) else f" [{row['low']:.2f}, {row['high']:.2f}]")


def verdict_table(claim_table: pd.DataFrame, judged: pd.DataFrame, primary: str,
                  others: Mapping[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """One row per claim: the claim, its load, the published figure, ours, the verdict and why; the count
    claims judged again with each other driver (``others``: driver -> judged) in two more columns each."""
    table = judged.assign(ours=judged.apply(ours, axis=1), published=judged["published"].map(
        lambda v: "-" if pd.isna(v) else f"{v:.2f}"))[["claim_text", "load", "published", "ours", "verdict", "why"]]
    table = table.rename(columns={"claim_text": "it says", "verdict": f"verdict (count: {primary})"})
    counted = claim_table["experiment"] == "jmeter"
    for driver, other in (others or {}).items():
        table[f"ours with {driver}"] = other.apply(ours, axis=1).where(counted, "")
        table[f"verdict with {driver}"] = other["verdict"].where(counted, "")
    table.index = claim_table["claim"]
    return table


def beside(table: pd.DataFrame, judged: pd.DataFrame, label: str) -> pd.DataFrame:
    """The verdict table with another judgement of the same claims beside it (``judged``, in the table's
    order): our figure and the verdict under ``label``, e.g. "their stack"."""
    return table.assign(**{f"ours ({label})": judged.apply(ours, axis=1).values,
                           f"verdict ({label})": judged["verdict"].values})


def by_driver(claim_table: pd.DataFrame, suites: Mapping, *, alpha: float = 0.05) -> pd.DataFrame:
    """The count claims judged once per driver (``suites``: driver -> Suite), with the load tool's median CPU
    (percent of one core) at each claim's users: a verdict that changes with the driver is the tool's."""
    counted = claim_table[claim_table["experiment"] == "jmeter"]
    rows = []
    for driver, suite in suites.items():
        out = claims.judge(counted, {"jmeter": suite}, alpha=alpha)
        cpu = ok(suite.runs).groupby("users")["load_cpu_mean"].median()
        out["load tool cpu (median %)"] = counted["users"].map(cpu).round().values
        rows.append(out.assign(driver=driver, ours=out.apply(ours, axis=1))[
            ["claim", "claim_text", "driver", "ours", "verdict", "reason", "load tool cpu (median %)"]])
    return pd.concat(rows, ignore_index=True)


def ratios(frame: pd.DataFrame, value: str, baseline: str) -> pd.DataFrame:
    """Each server's mean ``value`` and its ratio to the ``baseline``'s, indexed by server."""
    means = frame.groupby("server")[value].mean()
    return pd.DataFrame({"mean": means, "ratio": means / means.get(baseline, float("nan"))})


def side_by_side(ours_table: pd.DataFrame, theirs: pd.DataFrame) -> pd.DataFrame:
    """Our :func:`ratios` beside the published ones, server by server."""
    return ours_table.merge(theirs, how="left", left_index=True, right_index=True, suffixes=(" ours", " published"))
