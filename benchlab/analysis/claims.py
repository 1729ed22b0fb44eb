"""The published claims, judged: each claim of ``data/published/claims.csv`` against our runs, one verdict each.

A claim is a ratio of one server's metric to a baseline's (``server``, ``baseline``, ``published``) or an ordering
of servers by a metric, lowest first (``order``: ``"spring-tomcat<spring-undertow<spring-jetty"``). It is judged on
the runs of the suite of its ``experiment`` at its load point (``connections`` for a duration load, ``users`` for a
count load, a fixed rate for a rate load: the rate the replay offered) and ``scenario``. The verdict words and their
meanings are :data:`benchlab.schema.CLAIM_VERDICTS`; significance is :func:`benchlab.analysis.verdicts.verdicts`' rule
(the test rejects at ``alpha`` and the ratio's interval excludes 1).

Before any ratio, the runs must be able to judge, by the one rule every verdict follows
(:mod:`benchlab.analysis.validity`): a flagged window (failed, generator-bound, not warm, disturbed, errors above 0.1%)
is left out, its sentence says so, and a claim is *not testable here* when no run is at its load point or a server
has fewer than two clean values left; its reason names the flag.

Only runs over a claim's **wire** with its **streams** judge it (:mod:`.catalogue`: an empty cell is HTTP/1.1, one).

Two procedures judge a claim (:data:`PROCEDURES`). The *controlled* one is benchlab's: warm runs, interleaved forks,
and each fork (a fresh server) one value, its windows averaged. *Theirs* replays what the source did: its warm-up
(mostly none), its number of runs, back to back against one server each, every run counted as one value as they
counted it. There a run that was not warm does not block the verdict (that is their procedure) but is counted, and
:func:`procedures` names it when the two procedures disagree.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import pandas as pd

from ..schema import CLAIM_VERDICTS, PROCEDURE_SENSITIVE, ClaimVerdict
from . import cells, intervals, stats, validity
from .catalogue import given, streams, wire
from .catalogue import read as read  # claims.read(): the table's door
from .flags import runs_flags
from .validity import WARMTH

#: How a claim's runs were taken and counted: benchlab's controlled procedure, or the source's own.
PROCEDURES = ("controlled", "theirs")

COLUMNS = ("claim", "source", "experiment", "load", "metric", "claim_text", "published", "ours", "low",
           "high", "our_order", "values", "forks", "cold", "verdict", "reason", "why")

HOLDS, DIFFERS, REVERSED, INCONCLUSIVE, NOT_TESTABLE = CLAIM_VERDICTS
(SENSITIVE,) = PROCEDURE_SENSITIVE


def judge(claims: pd.DataFrame, suites: Mapping, *, alpha: float = 0.05, procedure: str = "controlled"
          ) -> pd.DataFrame:
    """One row per claim: our ratio with its interval at ``1 - alpha`` (an ordering: ``our_order``), the verdict
    (:data:`benchlab.schema.CLAIM_VERDICTS`), the flag that made it untestable, and one sentence saying why.

    ``suites`` maps an experiment (``"wrk"``, ``"jmeter"``) to a :class:`benchlab.Suite` or a runs frame.
    ``procedure`` (:data:`PROCEDURES`) says how the runs count: "controlled", one value per fork; "theirs",
    one value per run, as the source counted them, with runs that were not warm counted in ``cold``.
    ``values`` is how many values each server gave, ``forks`` from how many server processes.

    Example
    -------
    >>> import benchlab
    >>> suites = {"wrk": benchlab.load("data/results/reproduce/wrk")}       # doctest: +SKIP
    >>> judge(read(), suites)[["claim", "verdict"]]                          # doctest: +SKIP
    >>> judge(read().head(1), {})["verdict"].tolist()
    ['not testable here']
    """
    if procedure not in PROCEDURES:
        raise ValueError(f"procedure {procedure!r}: choose {', '.join(PROCEDURES)}")
    rows = []
    for claim in claims.to_dict("records"):
        suite = suites.get(claim["experiment"])
        runs = suite if suite is None or isinstance(suite, pd.DataFrame) else suite.runs
        rows.append({**_describe(claim), **_judge_one(claim, runs, alpha, procedure)})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def servers(claim) -> list[str]:  # the servers a claim compares: its ordering's, else its baseline and server
    if given(claim.get("order")):
        return str(claim["order"]).split("<")
    return [claim["baseline"], claim["server"]]


def _describe(claim) -> dict:
    if given(claim.get("users")):
        load = f"{int(claim['users'])} users x {int(claim['loops'])} loops"
    else:
        parts = [f"{claim['rate']:g} req/s" if given(claim.get("rate")) else None,
                 f"{int(claim['connections'])} connections",
                 f"{claim['threads']:g} threads" if given(claim.get("threads")) else None,
                 f"{claim['duration_s']:g} s" if given(claim.get("duration_s")) else None]
        load = ", ".join(part for part in parts if part)
    if given(claim.get("pipelining")) and float(claim["pipelining"]) > 1:
        load += f", pipelined {int(claim['pipelining'])} deep"
    if wire(claim) != "http1":
        load += f", over {wire(claim)}" + (f", {streams(claim)} streams a connection" if streams(claim) > 1 else "")
    if given(claim.get("order")):
        text = f"{claim['metric']}: {' < '.join(servers(claim))}"
    else:
        text = f"{claim['server']} / {claim['baseline']} {claim['metric']} = {claim['published']:g}"
    return {"claim": claim["claim"], "source": claim.get("source"), "experiment": claim["experiment"],
            "load": f"{load}, {claim['scenario']}", "metric": claim["metric"], "claim_text": text,
            "published": claim.get("published") if given(claim.get("published")) else math.nan}


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
    options = str(first.get("jvm_opts")) if given(first.get("jvm_opts")) else ""
    return {"java": None if math.isnan(java) else int(java), "jvm_opts": options.split(),
            "stack": first.get("stack") if given(first.get("stack")) else "not stated"}


def figures(claim) -> dict[str, float]:
    """The source's own figure per server, as the table stores them (``"spring-jetty=1833.0;..."``).

    >>> figures({"figures": "spring-jetty=1833.00;spring-undertow=1733.84"})
    {'spring-jetty': 1833.0, 'spring-undertow': 1733.84}
    """
    pairs = (item.split("=", 1) for item in str(claim.get("figures") or "").split(";") if "=" in item)
    return {server.strip(): float(value) for server, value in pairs}


def _point(claim, runs: pd.DataFrame | None) -> tuple[pd.DataFrame, str, str]:
    """The runs of the claim's servers at its load point and scenario, where that is, and where the others were."""
    value: int | str = "rate"  # a fixed-rate claim: its rate runs, at the rate offered here; two rates are mixed setups
    if given(claim.get("rate")):
        column, where = "load", f"a fixed rate, scenario {claim['scenario']}"
    else:
        column = "users" if given(claim.get("users")) else "connections"
        value, where = int(claim[column]), f"{int(claim[column])} {column}, scenario {claim['scenario']}"
    if runs is None or runs.empty:
        return pd.DataFrame(), where, ""
    values = runs[column] if column == "load" else pd.to_numeric(runs[column], errors="coerce")
    at = (runs["scenario"] == claim["scenario"]) & (values == value) & _over(claim, runs)
    where += f", over {wire(claim)}, {streams(claim)} streams a connection" if wire(claim) != "http1" else ""
    elsewhere = ~at & (runs["status"] == "ok")
    points = sorted({(f"load {v}" if column == "load" else f"{v:g} {column}") + f", scenario {s}"
                     for v, s in zip(values[elsewhere], runs.loc[elsewhere, "scenario"]) if v == v})
    return runs[at & runs["server"].isin(servers(claim))], where, "; ".join(points)


def _over(claim, runs: pd.DataFrame) -> pd.Series:
    """Which runs spoke the claim's wire with its streams (a run stored before HTTP/2 spoke HTTP/1.1, one stream)."""
    spoke = runs["protocol"].fillna("http1") if "protocol" in runs else pd.Series("http1", index=runs.index)
    flight = (pd.to_numeric(runs["streams"], errors="coerce").fillna(1) if "streams" in runs
              else pd.Series(1, index=runs.index))
    return (spoke == wire(claim)) & (flight == streams(claim))


def _untestable(claim, here: pd.DataFrame, where: str, elsewhere: str = "", procedure: str = "controlled"):
    """(reason, sentence) when these runs cannot judge the claim, else None: no finished run of a server, mixed
    setups, or a server left with no clean run by :mod:`.validity` (under their procedure :data:`WARMTH` blocks no
    run of theirs)."""
    if len(here):
        finished = set(cells.ok(here)["server"])
        missing = [s for s in servers(claim) if s not in finished]
    else:
        missing = servers(claim)
    if missing:
        ran = f" (the runs here are at {elsewhere})" if elsewhere else ""
        failed = here[here["status"] == "failed"] if len(here) and "status" in here else here
        died = f"; {len(failed)} failed: {str(failed['error'].iloc[0]).splitlines()[0]}" if len(failed) else ""
        return "failed" if len(failed) else "not run", (f"no finished run of {', '.join(missing)} at {where}{ran}"
                                                        f"{died}, so there is nothing to judge")
    setups = [c for c in cells.varying(cells.ok(here)) if c not in ("server",)]
    if setups:
        return "mixed setups", (f"the runs at {where} differ in {', '.join(setups)}: judge one setup at a time "
                                "(one suite per setup)")
    ok = cells.ok(here).reset_index(drop=True)
    found = validity.reasons(ok, exempt=WARMTH if procedure == "theirs" else ())
    keys = ok["id"] if procedure == "theirs" else pd.Series(cells.fork_keys(ok))  # a value: a run, or a fork
    for server in servers(claim):
        mine = [i for i in range(len(ok)) if ok["server"].iloc[i] == server]
        flagged = [i for i in mine if found[i]]
        values = {keys.iloc[i] for i in mine if not found[i]}
        if flagged and len(values) < 2:  # the rule left it fewer than the two values any interval needs
            flag = found[flagged[0]][0]
            first = dict(runs_flags(ok.iloc[[flagged[0]]].reset_index(drop=True))[0])[flag]
            return flag, (f"{len(flagged)} of {len(mine)} {server} runs at {where} were {validity.INVALID[flag]}, "
                          f"which leaves {'one' if values else 'none'} to judge: {first}")
    return None


def _clean(here: pd.DataFrame, procedure: str) -> tuple[pd.DataFrame, str]:
    """The runs a claim is judged on (:func:`.validity.usable`), and what its sentence says was left out."""
    clean, left = validity.usable(here, exempt=WARMTH if procedure == "theirs" else ())
    failed = int((here["status"] == "failed").sum()) if "status" in here else 0
    notes = [validity.said(entry) for entry in left.values()]
    notes += [f"{failed} failed run{'' if failed == 1 else 's'} left out"] if failed else []
    return clean, "; ".join(notes)


def _pair(mine: pd.DataFrame, theirs: pd.DataFrame, metric: str, alpha: float) -> dict:  # by round where they can
    a, b, paired = cells.rounds(mine, theirs, metric, alpha=alpha)
    ratio, low, high = stats.ratio_ci(a, b, alpha=alpha, paired=paired)
    test, p = stats.test_difference(a, b, alpha=alpha, paired=paired)
    return {"ratio": ratio, "low": low, "high": high, "test": test, "p": p, "n": stats.count(a, b, paired),
            "significant": bool(intervals.significant(p, low, high, alpha)) if test != "none" else False}


def _evidence(pair: dict) -> str:
    interval = "" if math.isnan(pair["low"]) else f" [{pair['low']:.2f}, {pair['high']:.2f}]"
    p = "" if math.isnan(pair["p"]) else f", {pair['test']} p={pair['p']:.2g}"
    return f"{pair['ratio']:.2f}{interval} ({pair['n']} run{'' if pair['n'] == 1 else 's'} each{p})"


def _cold(here: pd.DataFrame) -> int:
    """How many of these runs carry a :data:`WARMTH` flag: measured before their server was warm."""
    return sum(any(flag in WARMTH for flag in found) for found in validity.reasons(here))


def _judge_one(claim, runs, alpha: float, procedure: str = "controlled") -> dict:
    out = {"ours": math.nan, "low": math.nan, "high": math.nan, "our_order": None, "values": 0, "forks": 0,
           "cold": 0}
    if given(claim.get("untestable")):  # its stack cannot run here, whatever the runs
        why = f"Not testable here: {claim['untestable']}."
        return {**out, "verdict": NOT_TESTABLE, "reason": "not here", "why": why}
    here, where, elsewhere = _point(claim, runs)
    blocked = _untestable(claim, here, where, elsewhere, procedure)
    if blocked:
        reason, sentence = blocked
        return {**out, "verdict": NOT_TESTABLE, "reason": reason, "why": f"Not testable here: {sentence}."}
    ok, left_out = _clean(here, procedure)
    metric = claim["metric"]
    forks = cells.forks(ok)
    counted = ok if procedure == "theirs" else forks  # theirs: each run a value, as the source had it
    values = {s: counted[counted["server"] == s] for s in servers(claim)}  # each server's rows
    judged = (_judge_order(claim, values, metric, alpha) if given(claim.get("order"))
              else _judge_pair(claim, values, metric, alpha))
    judged.update(values=min(len(v) for v in values.values()), cold=_cold(ok),
                  forks=min(int((forks["server"] == s).sum()) for s in values))
    if left_out:
        judged["why"] = judged["why"][:-1] + f" (judged on the clean runs: {left_out})."
    fixed = sorted({str(w) for w in ok["warmup"] if w != "auto"}) if "warmup" in ok else []
    if procedure == "theirs":
        judged["why"] = judged["why"][:-1] + _their_procedure(ok, judged["cold"])
    elif fixed:  # a fixed warm-up was not judged steady: the verdict may be one of a JVM still warming
        judged["why"] = judged["why"][:-1] + f" (after a fixed {', '.join(fixed)} s warm-up, not judged steady)."
    return judged


def _their_procedure(ok: pd.DataFrame, cold: int) -> str:
    """The end of a sentence judged under the source's procedure: how the runs were taken, and how many were cold."""
    warmups = sorted({float(w) for w in pd.to_numeric(ok.get("warmup"), errors="coerce").dropna()})
    warm = ("no warm-up" if warmups == [0.0] else
            f"a {', '.join(f'{w:g}' for w in warmups)} s warm-up" if warmups else "the warm-up rule")
    return f" (their procedure: {warm}, every run one value; {cold} of {len(ok)} runs not warm)."


def _judge_pair(claim, values: dict, metric: str, alpha: float) -> dict:
    out = {"ours": math.nan, "low": math.nan, "high": math.nan, "our_order": None}
    pair = _pair(values[claim["server"]], values[claim["baseline"]], metric, alpha)
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
    named = servers(claim)
    means = {s: float(cells.finite(v[metric]).mean()) for s, v in values.items()}
    ours = "<".join(sorted(named, key=means.__getitem__))
    steps, words = [], []
    for low_server, high_server in zip(named, named[1:]):
        pair = _pair(values[high_server], values[low_server], metric, alpha)
        word = (INCONCLUSIVE if not pair["significant"] else HOLDS if pair["ratio"] > 1 else REVERSED)
        words.append(word)
        steps.append(f"{high_server} / {low_server} {_evidence(pair)}: {word}")
    verdict = REVERSED if REVERSED in words else HOLDS if all(w == HOLDS for w in words) else INCONCLUSIVE
    lead = {HOLDS: "every adjacent pair is significant in the published order",
            REVERSED: "at least one adjacent pair is significant the other way round",
            INCONCLUSIVE: f"not every adjacent pair is significant at alpha {alpha:g}"}[verdict]
    return {"ours": math.nan, "low": math.nan, "high": math.nan, "our_order": ours, "verdict": verdict, "reason": None,
            "why": f"Here the mean {metric} orders {ours.replace('<', ' < ')}; {lead}: {'; '.join(steps)}."}


def procedures(theirs: pd.DataFrame, controlled: pd.DataFrame) -> pd.DataFrame:
    """One row per claim judged under both procedures (two :func:`judge` frames of the same claims, in the same
    order): each procedure's verdict, and the claim's verdict with one sentence saying why. The verdict is
    *procedure-sensitive* when the claim holds under one procedure and not under the other (neither untestable), else
    the controlled one's; the sentence names the part of the procedure the runs show made the difference, or why not.

    >>> one = lambda verdict, values, cold: pd.DataFrame([{"claim": "c", "verdict": verdict, "values": values,
    ...                                                     "forks": 1, "cold": cold, "why": "..."}])
    >>> procedures(one("holds", 3, 3), one("inconclusive", 3, 0)).iloc[0]["verdict"]
    'procedure-sensitive'
    """
    rows = []
    for mine, ours in zip(theirs.to_dict("records"), controlled.to_dict("records")):
        t, c = mine["verdict"], ours["verdict"]
        row = {"claim": ours["claim"], "their procedure": t, "controlled": c}
        if NOT_TESTABLE in (t, c) or (t == HOLDS) == (c == HOLDS):
            cold = (f" {mine['cold']} of their runs were measured before the server was warm."
                    if mine.get("cold") and t != NOT_TESTABLE else "")
            reasons = (str(r["why"]).removeprefix("Not testable here: ").rstrip(".") for r in (mine, ours))
            rows.append({**row, "verdict": c, "why": _agreed(t, c, *reasons) + cold})
            continue
        rows.append({**row, "verdict": SENSITIVE, "why": f"It {'holds' if t == HOLDS else 'is ' + t} under its "
                     f"own procedure and {'holds' if c == HOLDS else 'is ' + c} under the controlled one: "
                     f"{'; '.join(_causes(mine, ours))}."})
    return pd.DataFrame(rows, columns=["claim", "their procedure", "controlled", "verdict", "why"])


def _agreed(theirs: ClaimVerdict, controlled: ClaimVerdict, t_why: str, c_why: str) -> str:
    """The sentence of a claim that is not procedure-sensitive: why not, in the verdicts' words and reasons."""
    if theirs == controlled == NOT_TESTABLE:
        alike = re.sub(r"[\d.]+", "#", t_why) == re.sub(r"[\d.]+", "#", c_why)  # the same cause, other counts
        said = "" if t_why == c_why else " (theirs likewise)" if alike else f" (theirs: {t_why})"
        return f"Neither procedure's runs can judge it: {c_why}{said}."
    if controlled == NOT_TESTABLE:
        return f"The controlled runs cannot judge it ({c_why}); under its own procedure it is {theirs}."
    if theirs == NOT_TESTABLE:
        return f"Its own procedure's runs cannot judge it ({t_why}); under the controlled one it is {controlled}."
    if theirs == controlled:
        return f"{controlled.capitalize()} under both procedures."
    return f"It is {theirs} under its own procedure and {controlled} under the controlled one: it holds under neither."


def _causes(theirs: dict, controlled: dict) -> list[str]:
    """What the runs show made the two procedures disagree: the warm-up, the repeats, or neither visibly."""
    causes = []
    if theirs["cold"]:
        causes.append(f"warm-up: {theirs['cold']} of their runs were measured before the server was warm "
                      "(its JIT still compiling, or throughput not yet steady)")
    if theirs["values"] <= 1:
        causes.append("repeats: one run per server gives no interval, so their procedure cannot tell the servers "
                      "apart")
    elif theirs["forks"] < theirs["values"]:
        causes.append(f"repeats: their {theirs['values']} runs per server came from {theirs['forks']} server "
                      f"process{'' if theirs['forks'] == 1 else 'es'}, sharing its JIT's and heap's luck, and count "
                      f"as {theirs['values']} values; ours are {controlled['forks']} fresh servers each")
    return causes or ["the runs do not show which part of the procedure (warm-up, order, repeats) made it"]
