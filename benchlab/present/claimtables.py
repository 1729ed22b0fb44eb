"""The report of claims, for people: the judged claims as one verdict table, each source's procedure beside
ours, the count claims per driver, and our ratios beside the published ones.

``notebooks/reproduce.ipynb`` shows these after :mod:`benchlab.present.replay` ran its experiments; each is
tested on its own (``tests/test_claims.py``).

>>> ours({"our_order": None, "ours": 1.5, "low": 1.4, "high": 1.62})
'1.50 [1.40, 1.62]'
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ..analysis import claims
from ..analysis.cells import ok
from .replay import NOT_REPLAYED, label


def judged_replays(chosen: pd.DataFrame, by_replay: Mapping, count_drivers, *, alpha: float = 0.05) -> dict:
    """Every claim judged on every (stack, procedure) of ``by_replay`` (-> ``({experiment: Suite}, {count driver:
    Suite})``), its count claims on the first count driver: ``{(stack, procedure): judged frame}``."""
    return {(which, way): claims.judge(chosen, {**found, "jmeter": counted.get(count_drivers[0])}, alpha=alpha,
                                       procedure=way)
            for (which, way), (found, counted) in by_replay.items()}


def verdicts(chosen: pd.DataFrame, by_replay: Mapping, count_drivers, *, alpha: float = 0.05,
             judged: Mapping | None = None) -> pd.DataFrame:
    """The claims table of the report. Where both procedures ran, :func:`by_procedure`'s. Else the first stack's
    verdicts and why, the other count drivers beside them, and the other stack's figure and verdict.
    ``judged``: the claims already judged by :func:`judged_replays` (else judged here)."""
    judged = judged or judged_replays(chosen, by_replay, count_drivers, alpha=alpha)
    if both := both_procedures(judged):
        return by_procedure(chosen, judged, both)
    (first_stack, first_way), *rest = judged
    counted = by_replay[(first_stack, first_way)][1]
    others = {driver: claims.judge(chosen, {"jmeter": counted.get(driver)}, alpha=alpha, procedure=first_way)
              for driver in count_drivers[1:]}
    table = verdict_table(chosen, judged[(first_stack, first_way)], count_drivers[0], others)
    for which, way in rest:
        table = beside(table, judged[(which, way)], label(which, way))
    return table


def by_procedure(chosen: pd.DataFrame, judged: Mapping, both: Mapping) -> pd.DataFrame:
    """The claims table where both procedures ran (``both``: :func:`both_procedures`): one row per claim and
    stack, with each procedure's verdict and our figure ("inconclusive (1.15 [0.79, 1.68])"), the verdict of the
    two (:func:`benchlab.analysis.claims.procedures`) and its sentence. A stack column unless only ours ran; a
    claim's text, load and published figure once. The count claims' other drivers have their own table.

    >>> one = lambda verdict: pd.DataFrame({"claim": ["a"], "claim_text": ["A is faster"], "load": ["wrk"],
    ...     "published": [1.5], "our_order": [None], "ours": [1.2], "low": [0.9], "high": [1.6], "values": [3],
    ...     "forks": [3], "cold": [0], "verdict": [verdict], "why": ["..."]})
    >>> judged = {("ours", "controlled"): one("inconclusive"), ("ours", "theirs"): one("holds")}
    >>> by_procedure(pd.DataFrame({"claim": ["a"]}), judged, both_procedures(judged)).loc["a"].tolist()[3:6]
    ['holds (1.20 [0.90, 1.60])', 'inconclusive (1.20 [0.90, 1.60])', 'procedure-sensitive']
    """
    rows = []
    for at, claim in enumerate(chosen["claim"]):
        for n, (which, agreed) in enumerate(both.items()):
            mine, ours_ = (judged[(which, way)].iloc[at] for way in ("theirs", "controlled"))
            published = "-" if pd.isna(ours_["published"]) else f"{ours_['published']:.2f}"
            said = {"it says": ours_["claim_text"], "load": ours_["load"], "published": published}
            rows.append({"claim": claim, "stack": "their stack" if which == "theirs" else "our stack",
                         **({key: "" for key in said} if n else said),
                         "their procedure": _cell(mine), "controlled": _cell(ours_),
                         "verdict": agreed.iloc[at]["verdict"], "why": agreed.iloc[at]["why"]})
    table = pd.DataFrame(rows).set_index("claim")
    return table.drop(columns="stack") if list(both) == ["ours"] else table


def _cell(judged) -> str:
    """A verdict with our figure beside it, as one cell: "inconclusive (1.15 [0.79, 1.68])"."""
    figure = ours(judged)
    return judged["verdict"] + ("" if figure == "-" else f" ({figure})")


def both_procedures(judged: Mapping) -> dict:
    """Each stack both procedures ran on, and its claims judged under the two
    (:func:`benchlab.analysis.claims.procedures`): ``{stack: frame}``."""
    return {which: claims.procedures(judged[(which, "theirs")], judged[(which, "controlled")])
            for which in dict.fromkeys(stack for stack, _ in judged)
            if (which, "theirs") in judged and (which, "controlled") in judged}


def sensitivity(judged: Mapping) -> str:
    """What the two procedures decided, a sentence per stack both ran on (``judged``: :func:`judged_replays`):
    which claims are procedure-sensitive, or that none is, of how many both procedures could judge; "" when only
    one procedure ran.

    >>> one = lambda *verdicts: pd.DataFrame({"claim": ["a", "b", "c"], "verdict": verdicts, "values": 3,
    ...                                        "forks": 1, "cold": 0, "why": "..."})
    >>> sensitivity({("ours", "theirs"): one("holds", "inconclusive", "holds"),
    ...              ("ours", "controlled"): one("inconclusive", "inconclusive", "not testable here")})
    'Both procedures judged 2 of 3 claims: 1 is procedure-sensitive (a).'
    """
    said = []
    for which, both in both_procedures(judged).items():
        testable = both[["their procedure", "controlled"]].ne(claims.NOT_TESTABLE).all(axis=1)
        sensitive = list(both.loc[both["verdict"] == claims.SENSITIVE, "claim"])
        where = " on their stack" if which == "theirs" else ""
        said.append(f"Both procedures judged {int(testable.sum())} of {len(both)} claims{where}: " + (
            f"{len(sensitive)} {'is' if len(sensitive) == 1 else 'are'} procedure-sensitive ({', '.join(sensitive)})."
            if sensitive else "none is procedure-sensitive."))
    return " ".join(said)


def sources(chosen: pd.DataFrame, said: Mapping) -> pd.DataFrame:
    """One row per source of the chosen claims: how it measured (tool, warm-up, runs, order, stack, machine),
    and beside it how each replay here ran (``said``: (stack, procedure) -> {experiment: words}, as the
    notebook keeps it), or why it was not replayed."""
    rows = []
    for source, group in chosen.groupby("source", sort=False):
        first, experiment = group.iloc[0], group.iloc[0]["experiment"]
        row = {"source": source, "claims": len(group), "their load": first["tool"], "their warm-up": first["warmup"],
               "their runs": first["runs"], "their order": first["run_order"], "their stack": first["stack"],
               "their machine": first["machine"]}
        for key, words in said.items():
            fallback = NOT_REPLAYED.get(experiment, "not run (see the experiments parameter)")
            row[f"here ({label(*key) or 'our stack, controlled procedure'})"] = words.get(experiment, fallback)
        rows.append(row)
    return pd.DataFrame(rows).set_index("source")


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
    claims judged again with each other driver (``others``: driver -> judged) in two more columns each,
    where the table has count claims (no empty columns)."""
    table = judged.assign(ours=judged.apply(ours, axis=1), published=judged["published"].map(
        lambda v: "-" if pd.isna(v) else f"{v:.2f}"))[["claim_text", "load", "published", "ours", "verdict", "why"]]
    counted = claim_table["experiment"] == "jmeter"
    table = table.rename(columns={"claim_text": "it says",
                                  "verdict": f"verdict (count: {primary})" if counted.any() else "verdict"})
    for driver, other in (others or {}).items() if counted.any() else ():
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


def drivers_beside(by_driver_frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """:func:`by_driver`'s rows as one row per count claim, each driver's figure, verdict and CPU side by side,
    and the sentence that counts the claims whose verdict changes with the driver."""
    side = by_driver_frame.pivot(index=["claim", "claim_text"], columns="driver",
                                 values=["ours", "verdict", "load tool cpu (median %)"])
    drivers = list(dict.fromkeys(by_driver_frame["driver"]))
    changed = int((by_driver_frame.pivot(index="claim", columns="driver", values="verdict").nunique(axis=1) > 1).sum())
    return side, (f"{changed} of {by_driver_frame['claim'].nunique()} count claims get a different verdict with "
                  f"another driver ({', '.join(drivers)})")


def ratios(frame: pd.DataFrame, value: str, baseline: str) -> pd.DataFrame:
    """Each server's mean ``value`` and its ratio to the ``baseline``'s, indexed by server."""
    means = frame.groupby("server")[value].mean()
    return pd.DataFrame({"mean": means, "ratio": means / means.get(baseline, float("nan"))})


def side_by_side(ours_table: pd.DataFrame, theirs: pd.DataFrame) -> pd.DataFrame:
    """Our :func:`ratios` beside the published ones, server by server."""
    return ours_table.merge(theirs, how="left", left_index=True, right_index=True, suffixes=(" ours", " published"))


def count_points(count_runs: Mapping[str, pd.DataFrame], published: pd.DataFrame, users, loops, scaled_loops, *,
                 baseline: str) -> list[dict]:
    """The count experiment's load points, driver by driver: ``{"driver", "users", "loops"`` (published),
    ``"scaled"`` (here), ``"ours"`` (that point's finished runs), ``"theirs"`` (its published rows), ``"missing"``
    (why it has no ratio, or None)``}``; a driver whose every run failed is one point that says so.

    >>> ran = pd.DataFrame({"server": ["a", "b"], "users": 10, "loops": 5, "rps": [100.0, 150.0]})
    >>> pub = pd.DataFrame({"server": ["a", "b"], "users": 10, "loops": 50, "metric": "rps", "value": [1.0, 2.0]})
    >>> [(p["users"], p["scaled"], len(p["ours"]), p["missing"]) for p in count_points({"wrk": ran}, pub, [10],
    ...                                                                                 [50], [5], baseline="a")]
    [(10, 5, 2, None)]
    >>> count_points({"wrk": ran}, pub, [10], [50], [5], baseline="c")[0]["missing"]
    'wrk, 10 users x 5: the baseline c has no finished run, so no ratio: see the failed runs below'
    """
    points: list[dict] = []
    for driver, runs in count_runs.items():
        if runs.empty:
            points.append({"driver": driver, "missing": f"every run of the count experiment with {driver} failed: "
                                                        "see the failed runs below"})
            continue
        for u, n, scaled in zip(users, loops, scaled_loops):
            mine = runs[(runs["users"] == u) & (runs["loops"] == scaled)]
            theirs = published[(published["users"] == u) & (published["loops"] == n)]
            missing = (f"{driver}, {u} users x {scaled}: the baseline {baseline} has no finished run, so no ratio: "
                       "see the failed runs below" if not (mine["server"] == baseline).any() else
                       f"{u} users x {n} loops: no published figures at this point" if theirs.empty else None)
            points.append({"driver": driver, "users": u, "loops": n, "scaled": scaled, "ours": mine,
                           "theirs": theirs, "missing": missing})
    return points


def numbers(wrk_runs: pd.DataFrame | None, published: Mapping[str, pd.DataFrame], points: list[dict], *,
            baseline: str, connections: int) -> pd.DataFrame | None:
    """Every experiment's mean requests/s per server and its ratio to the ``baseline``'s, ours beside the published
    (:func:`side_by_side`), indexed by experiment, load and server; None when nothing ran."""
    tables = []
    if wrk_runs is not None:
        theirs = published["wrk"][published["wrk"]["metric"] == "rps"]
        tables.append(side_by_side(ratios(wrk_runs, "rps", baseline), ratios(theirs, "value", baseline))
                      .assign(experiment="wrk", load=f"{connections} connections here, 200 published"))
    for point in points:
        if "theirs" not in point:  # a driver whose every run failed
            continue
        theirs = point["theirs"][(point["theirs"]["metric"] == "rps") & (point["theirs"]["run"] != "mean")]
        if len(point["ours"]) and len(theirs):
            load = f"{point['users']} users x {point['scaled']} here, x {point['loops']} published"
            tables.append(side_by_side(ratios(point["ours"], "rps", baseline),
                                       ratios(theirs.astype({"value": float}), "value", baseline))
                          .assign(experiment=f"jmeter ({point['driver']})", load=load))
    if not tables:
        return None
    return pd.concat(tables).reset_index().set_index(["experiment", "load", "server"]).round(3)
