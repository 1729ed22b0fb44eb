"""The published claims, judged: each claim of ``data/published/claims.csv`` against our runs, one verdict each.

A claim is a ratio of one server's metric to a baseline's (``server``, ``baseline``, ``published``) or an
ordering of servers by a metric, lowest first (``order``: ``"spring-tomcat<spring-undertow<spring-jetty"``).
It is judged on the runs of the suite of its ``experiment`` at its load point (``connections`` for a
duration load, ``users`` for a count load) and ``scenario``. The verdict words and their meanings are
:data:`benchlab.schema.CLAIM_VERDICTS`; significance is :func:`benchlab.analysis.stats.verdicts`' rule (the test
rejects at ``alpha`` and the ratio's interval excludes 1).

Before any ratio, the runs must be able to judge: a claim is *not testable here* when no run is at its
load point, when a run failed, was generator-bound, not warm (``warmup="auto"`` hit its limit, or the
JVM's counters show its JIT compiling or its GC heavy in the measured window, or the server stalled), or
when a run's errors exceed :data:`ERROR_SHARE_LIMIT` of its requests. Its reason names the flag.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from ..schema import CLAIM_VERDICTS
from . import cells, intervals, stats
from .flags import runs_flags

#: A run whose failed requests exceed this share of its requests cannot judge a claim.
ERROR_SHARE_LIMIT = 0.001

#: The flags that make a run unable to judge a claim, and what that says, in the order they are named.
BLOCKING = {
    "failed": "failed",
    "generator_bound": "were bound by their load generator",
    "errors": "had errors above 0.1% of their requests",
    "not_warm": "were not warm",
    "jit_active": "were measured while their JIT was still compiling",
    "gc_heavy": "spent an unusual share of their measured window in GC pauses",
    "server_idle": "had a server that stalled while the load tool was busy",
}

COLUMNS = ("claim", "source", "experiment", "load", "metric", "claim_text", "published", "ours", "low",
           "high", "our_order", "verdict", "reason", "why")

HOLDS, DIFFERS, REVERSED, INCONCLUSIVE, NOT_TESTABLE = CLAIM_VERDICTS


def read(path=None) -> pd.DataFrame:
    """The claims table, ``data/published/claims.csv`` by default.

    >>> read()["claim"].iloc[0]
    'wrk-undertow-rps'
    """
    from .. import home

    return pd.read_csv(path or home.published_dir() / "claims.csv")


def judge(claims: pd.DataFrame, suites: Mapping, *, alpha: float = 0.05) -> pd.DataFrame:
    """One row per claim: our ratio with its interval at ``1 - alpha`` (an ordering: ``our_order``), the verdict
    (:data:`benchlab.schema.CLAIM_VERDICTS`), the flag that made it untestable, and one sentence saying why.

    ``suites`` maps an experiment (``"wrk"``, ``"jmeter"``) to a :class:`benchlab.Suite` or a runs frame.

    Example
    -------
    >>> import benchlab
    >>> suites = {"wrk": benchlab.load("data/results/reproduce/wrk")}       # doctest: +SKIP
    >>> judge(read(), suites)[["claim", "verdict"]]                          # doctest: +SKIP
    >>> judge(read().head(1), {})["verdict"].tolist()
    ['not testable here']
    """
    rows = []
    for claim in claims.to_dict("records"):
        suite = suites.get(claim["experiment"])
        runs = suite if suite is None or isinstance(suite, pd.DataFrame) else suite.runs
        rows.append({**_describe(claim), **_judge_one(claim, runs, alpha)})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _given(value) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value)) and value != ""


def _servers(claim) -> list[str]:
    if _given(claim.get("order")):
        return str(claim["order"]).split("<")
    return [claim["baseline"], claim["server"]]


def _describe(claim) -> dict:
    if _given(claim.get("users")):
        load = f"{int(claim['users'])} users x {int(claim['loops'])} loops"
    else:
        parts = [f"{claim['rate']:g} req/s" if _given(claim.get("rate")) else None,
                 f"{int(claim['connections'])} connections",
                 f"{claim['threads']:g} threads" if _given(claim.get("threads")) else None,
                 f"{claim['duration_s']:g} s" if _given(claim.get("duration_s")) else None]
        load = ", ".join(part for part in parts if part)
    if _given(claim.get("pipelining")) and float(claim["pipelining"]) > 1:
        load += f", pipelined {int(claim['pipelining'])} deep"
    if _given(claim.get("order")):
        text = f"{claim['metric']}: {' < '.join(_servers(claim))}"
    else:
        text = f"{claim['server']} / {claim['baseline']} {claim['metric']} = {claim['published']:g}"
    return {"claim": claim["claim"], "source": claim.get("source"), "experiment": claim["experiment"],
            "load": f"{load}, {claim['scenario']}", "metric": claim["metric"], "claim_text": text,
            "published": claim.get("published") if _given(claim.get("published")) else math.nan}


def published_stack(claims: pd.DataFrame, experiment: str) -> dict:
    """What the source of ``experiment``'s claims ran on, as far as it says: ``{"java": major or None,
    "jvm_opts": [...], "stack": text}``, from the table's ``java``, ``jvm_opts`` and ``stack`` columns.

    >>> published_stack(read(), "jmeter")["jvm_opts"], published_stack(read(), "wrk")["java"]
    (['-Xms4096m', '-Xmx4096m', '-XX:+UseG1GC'], 24)
    """
    rows = claims[claims["experiment"] == experiment]
    if rows.empty:
        raise ValueError(f"no claim of experiment {experiment!r}")
    first = rows.iloc[0]
    java = pd.to_numeric(pd.Series([first.get("java")]), errors="coerce").iloc[0]
    options = str(first.get("jvm_opts")) if _given(first.get("jvm_opts")) else ""
    return {"java": None if math.isnan(java) else int(java), "jvm_opts": options.split(),
            "stack": first.get("stack") if _given(first.get("stack")) else "not stated"}


def figures(claim) -> dict[str, float]:
    """The source's own figure per server, as the table stores them (``"spring-jetty=1833.0;..."``).

    >>> figures({"figures": "spring-jetty=1833.00;spring-undertow=1733.84"})
    {'spring-jetty': 1833.0, 'spring-undertow': 1733.84}
    """
    pairs = (item.split("=", 1) for item in str(claim.get("figures") or "").split(";") if "=" in item)
    return {server.strip(): float(value) for server, value in pairs}


def _point(claim, runs: pd.DataFrame | None) -> tuple[pd.DataFrame, str, str]:
    """The runs of the claim's servers at its load point and scenario, where that is in words, and where
    the runs that are not there were (empty when there are none)."""
    if _given(claim.get("users")):
        column, unit, value = "users", "users", int(claim["users"])
    else:
        column, unit, value = "connections", "connections", int(claim["connections"])
    where = f"{value} {unit}, scenario {claim['scenario']}"
    if runs is None or runs.empty:
        return pd.DataFrame(), where, ""
    at = (runs["scenario"] == claim["scenario"]) & (pd.to_numeric(runs[column], errors="coerce") == value)
    elsewhere = runs[~at & (runs["status"] == "ok")]
    points = sorted({f"{v:g} {unit}, scenario {s}" for v, s in zip(pd.to_numeric(elsewhere[column], errors="coerce"),
                                                                    elsewhere["scenario"]) if v == v})
    return runs[at & runs["server"].isin(_servers(claim))], where, "; ".join(points)


def _untestable(claim, here: pd.DataFrame, where: str, elsewhere: str = ""):
    """(reason, sentence) when these runs cannot judge the claim, else None."""
    if len(here):
        finished = set(cells.ok(here)["server"])
        missing = [s for s in _servers(claim) if s not in finished]
    else:
        missing = _servers(claim)
    if missing:
        ran = f" (the runs here are at {elsewhere})" if elsewhere else ""
        return "not run", f"no finished run of {', '.join(missing)} at {where}{ran}, so there is nothing to judge"
    setups = [c for c in cells.varying(cells.ok(here)) if c not in ("server",)]
    if setups:
        return "mixed setups", (f"the runs at {where} differ in {', '.join(setups)}: judge one setup at a time "
                                "(one suite per setup)")
    found = runs_flags(here.reset_index(drop=True))
    share = pd.to_numeric(here["errors_total"], errors="coerce") / pd.to_numeric(here["requests"], errors="coerce")
    for flag, what in BLOCKING.items():
        hits = [i for i, flags in enumerate(found) if any(f == flag for f, _ in flags)]
        if flag == "errors":
            hits = [i for i in hits if share.iloc[i] > ERROR_SHARE_LIMIT]
        if hits:
            first = dict(found[hits[0]])[flag]
            return flag, f"{len(hits)} of {len(here)} runs at {where} {what}: {first}"  # each reason once
    return None


def _pair(a: pd.Series, b: pd.Series, alpha: float) -> dict:
    ratio, low, high = stats.ratio_ci(a, b, alpha=alpha)
    test, p = stats.test_difference(a, b, alpha=alpha)
    return {"ratio": ratio, "low": low, "high": high, "test": test, "p": p,
            "n": min(len(cells.finite(a)), len(cells.finite(b))),
            "significant": bool(intervals.significant(p, low, high, alpha)) if test != "none" else False}


def _evidence(pair: dict) -> str:
    interval = "" if math.isnan(pair["low"]) else f" [{pair['low']:.2f}, {pair['high']:.2f}]"
    p = "" if math.isnan(pair["p"]) else f", {pair['test']} p={pair['p']:.2g}"
    return f"{pair['ratio']:.2f}{interval} ({pair['n']} run{'' if pair['n'] == 1 else 's'} each{p})"


def _judge_one(claim, runs, alpha: float) -> dict:
    out = {"ours": math.nan, "low": math.nan, "high": math.nan, "our_order": None}
    if _given(claim.get("untestable")):  # its stack cannot run here, whatever the runs
        why = f"Not testable here: {claim['untestable']}."
        return {**out, "verdict": NOT_TESTABLE, "reason": "not here", "why": why}
    here, where, elsewhere = _point(claim, runs)
    blocked = _untestable(claim, here, where, elsewhere)
    if blocked:
        reason, sentence = blocked
        return {**out, "verdict": NOT_TESTABLE, "reason": reason, "why": f"Not testable here: {sentence}."}
    ok, metric = cells.ok(here), claim["metric"]
    values = {s: ok.loc[ok["server"] == s, metric] for s in _servers(claim)}
    judged = (_judge_order(claim, values, metric, alpha) if _given(claim.get("order"))
              else _judge_pair(claim, values, metric, alpha))
    fixed = sorted({str(w) for w in ok["warmup"] if w != "auto"}) if "warmup" in ok else []
    if fixed:  # a fixed warm-up was not judged steady: the verdict may be one of a JVM still warming
        judged["why"] = judged["why"][:-1] + f" (after a fixed {', '.join(fixed)} s warm-up, not judged steady)."
    return judged


def _judge_pair(claim, values: dict, metric: str, alpha: float) -> dict:
    out = {"ours": math.nan, "low": math.nan, "high": math.nan, "our_order": None}
    pair = _pair(values[claim["server"]], values[claim["baseline"]], alpha)
    published = float(claim["published"])
    out.update(ours=pair["ratio"], low=pair["low"], high=pair["high"], reason=None)
    said = f"{claim['server']} / {claim['baseline']} {metric} is {_evidence(pair)} here against {published:g} published"
    if not pair["significant"]:
        return {**out, "verdict": INCONCLUSIVE, "why": f"{said}: not significant at alpha {alpha:g}, so this "
                                                        "many repeats cannot tell the servers apart."}
    if (pair["ratio"] > 1) != (published > 1):
        return {**out, "verdict": REVERSED, "why": f"{said}: significant, the other way round."}
    if pair["low"] <= published <= pair["high"]:
        return {**out, "verdict": HOLDS, "why": f"{said}: significant, and the published ratio is inside the interval."}
    size = "larger" if pair["low"] > published else "smaller"
    return {**out, "verdict": DIFFERS, "why": f"{said}: the same direction, but {size} than published (the "
                                              "interval excludes it)."}


def _judge_order(claim, values: dict, metric: str, alpha: float) -> dict:
    servers = _servers(claim)
    means = {s: float(cells.finite(v).mean()) for s, v in values.items()}
    ours = "<".join(sorted(servers, key=means.__getitem__))
    steps, words = [], []
    for low_server, high_server in zip(servers, servers[1:]):
        pair = _pair(values[high_server], values[low_server], alpha)
        word = (INCONCLUSIVE if not pair["significant"] else HOLDS if pair["ratio"] > 1 else REVERSED)
        words.append(word)
        steps.append(f"{high_server} / {low_server} {_evidence(pair)}: {word}")
    verdict = REVERSED if REVERSED in words else HOLDS if all(w == HOLDS for w in words) else INCONCLUSIVE
    lead = {HOLDS: "every adjacent pair is significant in the published order",
            REVERSED: "at least one adjacent pair is significant the other way round",
            INCONCLUSIVE: f"not every adjacent pair is significant at alpha {alpha:g}"}[verdict]
    return {"ours": math.nan, "low": math.nan, "high": math.nan, "our_order": ours, "verdict": verdict, "reason": None,
            "why": f"Here the mean {metric} orders {ours.replace('<', ' < ')}; {lead}: {'; '.join(steps)}."}
