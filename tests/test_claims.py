"""Each verdict rule of benchlab.analysis.claims on constructed suites, and the claims table against the
published figures."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from benchlab import Suite, home
from benchlab.analysis import claims
from benchlab.schema import CLAIM_VERDICTS
from benchlab.store.results import Run


def runs(server: str, rps: list[float], *, p99: list[float] | None = None, connections: int = 200,
         scenario: str = "hello", requests: int = 100_000, warmup="auto", one_fork: bool = False,
         **metrics) -> list[Run]:
    """One run per value: each its own fork, or (``one_fork``) the windows of one server process."""
    out = []
    for i, value in enumerate(rps):
        params = {"server": server, "scenario": scenario, "load": "duration", "driver": "wrk",
                  "connections": connections, "threads": 1, "load_cores": 1, "repeat": 1 if one_fork else i + 1,
                  "warmup": warmup, "server_cpus": [0], "load_cpus": [1]}
        if one_fork:
            params.update(fork=f"{server}-fork", window=i + 1)
        measured = {"rps": value, "p99": (p99[i] if p99 else 0.01), "requests": requests,
                    "lat_mean": connections / value,
                    "errors_connect": 0, "errors_read": 0, "errors_write": 0, "errors_status": 0, "errors_timeout": 0,
                    "load_cpu_mean": 50.0, "warm": True}
        measured.update({k: (v[i] if isinstance(v, list) else v) for k, v in metrics.items()})
        out.append(Run(id=f"{server}-{scenario}-{connections}-{i}", params=params, metrics=measured, metadata={}))
    return out


def claim(**fields) -> dict:
    row = {"claim": "c", "source": "a write-up", "experiment": "wrk", "connections": 200, "threads": 4,
           "duration_s": 30, "users": math.nan, "loops": math.nan, "scenario": "hello", "metric": "rps",
           "server": "spring-undertow", "baseline": "spring-tomcat", "order": math.nan, "published": 1.47,
           "statement": "Undertow is faster"}
    row.update(fields)
    return row


def judged(rows: list[Run], *claim_rows: dict, alpha: float = 0.05) -> pd.DataFrame:
    return claims.judge(pd.DataFrame(list(claim_rows) or [claim()]), {"wrk": Suite(rows)}, alpha=alpha)


TOMCAT = [100.0, 101.0, 99.0, 100.5, 99.5]


def test_the_verdict_words_are_the_schemas():
    words = (claims.HOLDS, claims.DIFFERS, claims.REVERSED, claims.INCONCLUSIVE, claims.NOT_TESTABLE)
    assert words == tuple(CLAIM_VERDICTS)


def test_holds_when_significant_in_the_published_direction_and_the_ratio_is_inside():
    out = judged(runs("spring-tomcat", TOMCAT) + runs("spring-undertow", [147.0, 148.0, 146.0, 147.5, 146.5]))
    row = out.iloc[0]
    assert row["verdict"] == "holds", row["why"]
    assert row["low"] < 1.47 < row["high"] and row["ours"] == pytest.approx(1.47, abs=0.01)
    assert "inside the interval" in row["why"] and "1.47 published" in row["why"]


def test_a_fixed_warm_up_is_named_as_not_judged_steady():
    out = judged(runs("spring-tomcat", TOMCAT, warmup=15.0)
                 + runs("spring-undertow", [147.0] * 4 + [148.0], warmup=15.0))
    assert out.iloc[0]["why"].endswith("(after a fixed 15.0 s warm-up, not judged steady).")
    steady = judged(runs("spring-tomcat", TOMCAT) + runs("spring-undertow", [147.0] * 4 + [148.0]))
    assert "not judged steady" not in steady.iloc[0]["why"]


def test_differs_when_the_interval_excludes_the_published_ratio():
    out = judged(runs("spring-tomcat", TOMCAT) + runs("spring-undertow", [120.0, 121.0, 119.0, 120.5, 119.5]))
    assert out.iloc[0]["verdict"] == "differs"
    assert "smaller than published" in out.iloc[0]["why"]


def test_reversed_when_significant_the_other_way():
    out = judged(runs("spring-tomcat", TOMCAT) + runs("spring-undertow", [73.0, 74.0, 72.0, 73.5, 72.5]))
    assert out.iloc[0]["verdict"] == "reversed"
    assert out.iloc[0]["high"] < 1


def test_inconclusive_when_not_significant():
    out = judged(runs("spring-tomcat", TOMCAT) + runs("spring-undertow", [60.0, 160.0, 110.0, 90.0, 140.0]))
    assert out.iloc[0]["verdict"] == "inconclusive"
    assert "not significant at alpha 0.05" in out.iloc[0]["why"]


def test_alpha_flows_into_the_verdict():
    # Welch t p is about 0.01 here: significant at 0.05, not at 0.001.
    rows = runs("spring-tomcat", [100.0, 104.0, 96.0]) + runs("spring-undertow", [112.0, 116.0, 108.0])
    at_5 = judged(rows, claim(published=1.12)).iloc[0]
    at_01 = judged(rows, claim(published=1.12), alpha=0.001).iloc[0]
    assert at_5["verdict"] == "holds" and at_01["verdict"] == "inconclusive"
    assert at_01["high"] - at_01["low"] > at_5["high"] - at_5["low"], "the interval widens with 1 - alpha"


@pytest.mark.parametrize("flag, undertow, said", [
    ("generator_bound", {"load_cpu_mean": [50.0, 99.0, 50.0]}, "bound by their load generator"),
    ("errors", {"errors_read": [0, 500, 0]}, "with failed requests above 0.1%"),       # 0.5% of 100,000 requests
    ("not_warm", {"warm": [True, False, True], "warmup_s": 180.0}, "not warm"),
])
def test_a_flagged_run_is_left_out_and_said(flag, undertow, said):
    """The one rule (benchlab.analysis.validity): a claim is judged on its clean runs, saying what was left out."""
    out = judged(runs("spring-tomcat", TOMCAT[:3]) + runs("spring-undertow", [147.0, 148.0, 146.0], **undertow))
    row = out.iloc[0]
    assert row["verdict"] == "holds" and row["values"] == 2, row["why"]
    assert f"judged on the clean runs: 1 of 3 spring-undertow runs left out ({said}" in row["why"]


@pytest.mark.parametrize("flag, undertow", [
    ("generator_bound", {"load_cpu_mean": [50.0, 99.0, 99.0]}),
    ("errors", {"errors_read": [0, 500, 500]}),
    ("not_warm", {"warm": [True, False, False], "warmup_s": 180.0}),
])
def test_not_testable_when_the_flags_leave_under_two_values_and_names_the_flag(flag, undertow):
    out = judged(runs("spring-tomcat", TOMCAT[:3]) + runs("spring-undertow", [147.0, 148.0, 146.0], **undertow))
    row = out.iloc[0]
    assert (row["verdict"], row["reason"]) == ("not testable here", flag), row["why"]
    assert "2 of 3 spring-undertow runs" in row["why"] and "which leaves one to judge" in row["why"]
    assert math.isnan(row["ours"])
    said = row["why"].lower()
    assert not any(said.count(words) > 1 for words in ("warm-up reached its limit", "not the server", "errors")), \
        "each reason is said once"


def test_errors_below_the_limit_do_not_block():
    out = judged(runs("spring-tomcat", TOMCAT) + runs("spring-undertow", [147.0, 148.0, 146.0, 147.5, 146.5],
                                                      errors_read=50))  # 0.05%
    assert out.iloc[0]["verdict"] == "holds"


def test_a_failed_run_is_left_out_and_no_run_at_the_load_point_is_not_testable():
    failed = Run(id="f", params={"server": "spring-undertow", "scenario": "hello", "load": "duration",
                                 "connections": 200, "repeat": 4}, metrics={}, metadata={}, status="failed",
                 error="ServerError: it died")
    rows = runs("spring-tomcat", TOMCAT[:3]) + runs("spring-undertow", [147.0, 148.0, 146.0]) + [failed]
    row = judged(rows).iloc[0]
    assert row["verdict"] == "holds" and "1 failed run left out" in row["why"]
    row = judged(runs("spring-tomcat", TOMCAT[:3]) + [failed]).iloc[0]
    assert (row["verdict"], row["reason"]) == ("not testable here", "failed") and "it died" in row["why"]
    elsewhere = runs("spring-tomcat", TOMCAT, connections=50) + runs("spring-undertow", [147.0] * 5, connections=50)
    row = judged(elsewhere).iloc[0]
    assert (row["verdict"], row["reason"]) == ("not testable here", "not run")
    assert "the runs here are at 50 connections, scenario hello" in row["why"]
    row = claims.judge(pd.DataFrame([claim()]), {}).iloc[0]
    assert row["reason"] == "not run"


def test_an_ordering_holds_reverses_or_is_inconclusive_by_its_adjacent_pairs():
    order = claim(order="spring-tomcat<spring-undertow<spring-jetty", server=math.nan, baseline=math.nan,
                  published=math.nan)
    tomcat = runs("spring-tomcat", TOMCAT)
    rising = tomcat + runs("spring-undertow", [147.0, 148.0, 146.0, 147.5, 146.5]) + runs(
        "spring-jetty", [179.0, 180.0, 178.0, 179.5, 178.5])
    row = judged(rising, order).iloc[0]
    assert row["verdict"] == "holds" and row["our_order"] == "spring-tomcat<spring-undertow<spring-jetty"
    jetty_slow = tomcat + runs("spring-undertow", [147.0, 148.0, 146.0, 147.5, 146.5]) + runs(
        "spring-jetty", [73.0, 74.0, 72.0, 73.5, 72.5])
    row = judged(jetty_slow, order).iloc[0]
    assert row["verdict"] == "reversed" and row["our_order"] == "spring-jetty<spring-tomcat<spring-undertow"
    jetty_noisy = tomcat + runs("spring-undertow", [147.0, 148.0, 146.0, 147.5, 146.5]) + runs(
        "spring-jetty", [100.0, 200.0, 150.0, 120.0, 190.0])
    assert judged(jetty_noisy, order).iloc[0]["verdict"] == "inconclusive"
    # p99: lower first; a lower p99 on Tomcat than on Undertow holds
    p99 = claim(order="spring-tomcat<spring-undertow", metric="p99", server=math.nan, baseline=math.nan,
                published=math.nan)
    rows = runs("spring-tomcat", TOMCAT, p99=[0.010, 0.011, 0.0105, 0.0102, 0.0108]) + runs(
        "spring-undertow", TOMCAT, p99=[0.030, 0.031, 0.0305, 0.0302, 0.0308])
    assert judged(rows, p99).iloc[0]["verdict"] == "holds"


def test_every_published_ratio_is_recomputed_from_the_figures_beside_it():
    table = claims.read()
    assert table["claim"].is_unique and len(table) >= 15 and table["source"].nunique() >= 4
    for row in table.to_dict("records"):
        figures = claims.figures(row)
        if isinstance(row["order"], str):
            servers = row["order"].split("<")
            assert set(figures) == set(servers), row["claim"]
            assert sorted(servers, key=figures.__getitem__) == servers, f"{row['claim']}: the figures order otherwise"
        else:
            assert set(figures) == {row["server"], row["baseline"]}, row["claim"]
            ratio = figures[row["server"]] / figures[row["baseline"]]
            assert ratio == pytest.approx(row["published"], abs=0.006), f"{row['claim']}: {ratio:.4f}"


def test_the_seed_figures_are_the_means_of_the_runs_in_the_published_csv():
    table = claims.read()
    published = {name: pd.read_csv(home.published_dir() / f"{name}.csv") for name in ("wrk", "jmeter")}
    seeds = table[table["experiment"].isin(list(published))]
    assert len(seeds) == 10
    for row in seeds.to_dict("records"):
        runs = published[row["experiment"]]
        runs = runs[(runs["metric"] == row["metric"]) & (runs["run"].astype(str) != "mean")]
        if row["experiment"] == "jmeter":
            runs = runs[(runs["users"] == row["users"]) & (runs["loops"] == row["loops"])]
        means = runs.astype({"value": float}).groupby("server")["value"].mean()
        for server, figure in claims.figures(row).items():
            assert figure == pytest.approx(means[server], abs=0.051), (row["claim"], server)


def test_each_claim_says_where_it_is_from_how_it_was_measured_and_how_it_replays_here():
    table = claims.read().astype(object).fillna("")
    said = ("source", "url", "tool", "stack", "machine", "warmup", "runs", "run_order", "unit", "statement")
    for row in table.to_dict("records"):
        assert all(str(row[column]).strip() for column in said), (row["claim"], [c for c in said if not row[c]])
        assert row["replay"] or row["untestable"], f"{row['claim']}: how it replays here, or why it cannot"
    judged = claims.judge(claims.read(), {})
    untestable = judged[table["untestable"] != ""]
    assert len(untestable) and (untestable["verdict"] == "not testable here").all()
    assert all(why.startswith("Not testable here: its ") for why in untestable["why"]), "the stored reason, no 'no run'"
    loads = dict(zip(judged["claim"], judged["load"]))
    assert loads["networknt-undertow-tomcat-rps"] == "128 connections, 4 threads, 30 s, pipelined 16 deep, hello"
    assert loads["loom-k6-1k-tomcatvt-webflux-p99"] == "1000 req/s, 1000 connections, 180 s, hello"


def test_the_replay_refuses_its_own_bad_parameters_in_one_line():
    from benchlab.present import replay
    from benchlab.present.notebook import ParameterError

    replay.check(experiments=["wrk"], users=[100], loops=[1000], count_drivers=["jmeter"])
    with pytest.raises(ParameterError, match="unknown experiment ab: choose wrk, jmeter"):
        replay.check(experiments=["wrk", "ab"], users=[100], loops=[1000], count_drivers=["jmeter"])
    with pytest.raises(ParameterError, match="users and loops pair up"):
        replay.check(experiments=["jmeter"], users=[100, 1000], loops=[1000], count_drivers=["jmeter"])
    with pytest.raises(ParameterError, match="count_drivers"):
        replay.check(experiments=["jmeter"], users=[100], loops=[1000], count_drivers=["ab"])


def test_the_replay_tables_show_ours_beside_theirs():
    from benchlab.present import claimtables

    rows = runs("spring-tomcat", TOMCAT) + runs("spring-undertow", [150.0, 151.0, 149.0, 150.5, 149.5])
    table = pd.DataFrame([claim(claim="u", published=1.5), claim(claim="t", experiment="jmeter", users=100,
                                                                      loops=1000, connections=math.nan)])
    found = claims.judge(table, {"wrk": Suite(rows)})
    shown = claimtables.verdict_table(table, found, "jmeter")
    assert list(shown.index) == ["u", "t"] and shown.loc["u", "published"] == "1.50"
    assert shown.loc["u", "ours"].startswith("1.50 [") and shown.loc["t", "ours"] == "-", "no count runs: no figure"
    assert shown.loc["u", "verdict (count: jmeter)"] == "holds"
    alone = claimtables.verdict_table(table.iloc[:1], found.iloc[:1], "jmeter", {"wrk": found.iloc[:1]})
    assert list(alone.columns) == ["it says", "load", "published", "ours", "verdict", "why"], \
        "no count claim: no count-driver columns, and the verdict column says no driver"
    ours = claimtables.ratios(Suite(rows).runs, "rps", "spring-tomcat")
    assert ours.loc["spring-undertow", "ratio"] == pytest.approx(1.5)
    theirs = pd.DataFrame({"server": ["spring-tomcat", "spring-undertow"], "value": [10.0, 14.7]})
    both = claimtables.side_by_side(ours, claimtables.ratios(theirs, "value", "spring-tomcat"))
    assert both.loc["spring-undertow", ["ratio ours", "ratio published"]].tolist() == pytest.approx([1.5, 1.47])


def test_the_count_points_and_the_numbers_table_are_reproduce_notebooks_loops():
    """What reproduce.ipynb's count charts and its "side by side, in numbers" table are drawn from, with the published
    figures of data/published: every load point of every driver, the ones without a ratio saying why."""
    from benchlab.present import claimtables

    published = {name: pd.read_csv(home.published_dir() / f"{name}.csv") for name in ("wrk", "jmeter")}
    count = pd.DataFrame({"server": ["spring-tomcat", "spring-undertow", "spring-undertow"], "users": [100, 100, 1000],
                          "loops": [10, 10, 1], "rps": [1000.0, 1100.0, 900.0]})
    points = claimtables.count_points({"jmeter": count, "fast": count.iloc[:0]}, published["jmeter"],
                                      [100, 1000], [1000, 100], [10, 1], baseline="spring-tomcat")
    said = [p["missing"] for p in points]
    assert said[0] is None and len(points[0]["ours"]) == 2 and len(points[0]["theirs"]) > 0
    assert "the baseline spring-tomcat has no finished run" in said[1], said
    assert said[2] == "every run of the count experiment with fast failed: see the failed runs below"
    wrk = runs("spring-tomcat", TOMCAT) + runs("spring-undertow", [150.0, 151.0, 149.0, 150.5, 149.5])
    table = claimtables.numbers(Suite(wrk).runs, published, points, baseline="spring-tomcat", connections=64)
    assert table.index.get_level_values("experiment").unique().tolist() == ["wrk", "jmeter (jmeter)"]
    jmeter = table.xs("jmeter (jmeter)", level="experiment")
    assert jmeter.index.get_level_values("load").unique().tolist() == ["100 users x 10 here, x 1000 published",
                                                                       "1000 users x 1 here, x 100 published"]
    assert jmeter.loc[("100 users x 10 here, x 1000 published", "spring-undertow"), "ratio ours"] == 1.1
    tomcat = published["jmeter"].query("users == 100 and loops == 1000 and run != 'mean' and server == 'spring-tomcat'")
    assert jmeter.loc[("100 users x 10 here, x 1000 published", "spring-tomcat"), "mean published"] == round(
        tomcat["value"].astype(float).mean(), 3), "the published runs, not their stated mean"
    assert claimtables.numbers(None, published, [], baseline="spring-tomcat", connections=64) is None


def test_their_stack_is_the_sources_jvm_options_on_the_nearest_jdk():
    from benchlab.present import replay
    from benchlab.present.notebook import ParameterError

    table = claims.read()
    assert claims.published_stack(table, "wrk")["java"] == 24 and claims.published_stack(table, "wrk")["jvm_opts"] == []
    jdks = {"/17/bin/java": 17, "/25/bin/java": 25}
    assert replay.nearest_java(24, jdks) == ("/25/bin/java", 25), "Java 24 runs on the lowest newer JDK"
    assert replay.nearest_java(17, jdks) == ("/17/bin/java", 17)
    assert replay.nearest_java(30, jdks) == ("/25/bin/java", 25), "none newer: the newest older one"
    assert replay.nearest_java(21, {}) is None and replay.nearest_java(None, jdks) is None
    theirs = replay.stack_options(table, "wrk", "theirs", jdks)
    assert theirs == {"options": {"java": "/25/bin/java", "jvm_opts": []},
                      "said": "the JVM's own GC and heap, Java 25 for their 24"}
    assert replay.stack_options(table, "jmeter", "theirs", jdks)["options"] == {
        "jvm_opts": ["-Xms4096m", "-Xmx4096m", "-XX:+UseG1GC"]}, "their Java is not stated: ours, with their options"
    assert replay.stack_options(table, "wrk", "ours", jdks)["options"] == {}
    with pytest.raises(ParameterError, match="stack 'mine': choose ours, theirs, both"):
        replay.check(experiments=["wrk"], users=[1], loops=[1], count_drivers=["wrk"], stack="mine")


def test_their_stacks_verdicts_stand_beside_ours():
    from benchlab.present import claimtables

    table = pd.DataFrame([claim(claim="u", published=1.5)])
    faster = runs("spring-tomcat", TOMCAT) + runs("spring-undertow", [150.0, 151.0, 149.0, 150.5, 149.5])
    alike = runs("spring-tomcat", TOMCAT) + runs("spring-undertow", TOMCAT)
    mine, theirs = claims.judge(table, {"wrk": Suite(faster)}), claims.judge(table, {"wrk": Suite(alike)})
    shown = claimtables.beside(claimtables.verdict_table(table, mine, "jmeter"), theirs, "theirs stack")
    assert shown.loc["u", "verdict"] == "holds"
    assert shown.loc["u", "verdict (theirs stack)"] == "inconclusive"
    assert shown.loc["u", "ours (theirs stack)"].startswith("1.00")


# --- two procedures: the source's own, and the controlled one ------------------------------------------------

def test_under_their_procedure_every_run_counts_and_a_cold_run_is_counted_not_blocking():
    cold = {"jit_share": [0.4, 0.3, 0.01], "jit_compile_s": [4.0, 3.0, 0.1]}  # compiling in two of three windows
    rows = (runs("spring-tomcat", [100.0, 101.0, 99.0], warmup=0.0, one_fork=True, **cold)
            + runs("spring-undertow", [147.0, 148.0, 146.0], warmup=0.0, one_fork=True, **cold))
    controlled = judged(rows).iloc[0]
    assert (controlled["verdict"], controlled["reason"]) == ("not testable here", "jit_active"), controlled["why"]
    theirs = claims.judge(pd.DataFrame([claim()]), {"wrk": Suite(rows)}, procedure="theirs").iloc[0]
    assert theirs["verdict"] == "holds", theirs["why"]
    assert (theirs["values"], theirs["forks"], theirs["cold"]) == (3, 1, 4)
    assert theirs["why"].endswith("(their procedure: no warm-up, every run one value; 4 of 6 runs not warm).")


def test_the_controlled_procedure_takes_fork_means():
    import dataclasses

    rows = [dataclasses.replace(r, id=f"{r.id}-{k}", params={**r.params, "fork": f"{r.params['server']}-{k}"})
            for k in range(3) for r in runs("spring-tomcat", [100.0, 101.0], one_fork=True)
            + runs("spring-undertow", [147.0, 148.0], one_fork=True)]
    out = judged(rows).iloc[0]
    assert (out["values"], out["forks"]) == (3, 3), "three forks of two windows each are three values"


def test_a_claim_that_holds_under_one_procedure_only_is_procedure_sensitive_and_says_why():
    from benchlab.schema import PROCEDURE_SENSITIVE

    def frame(verdict, values, forks, cold, why="..."):
        return pd.DataFrame([{"claim": "c", "verdict": verdict, "values": values, "forks": forks, "cold": cold,
                              "why": why}])

    out = claims.procedures(frame("holds", 3, 1, 2), frame("inconclusive", 5, 5, 0)).iloc[0]
    assert out["verdict"] == "procedure-sensitive" and out["verdict"] in PROCEDURE_SENSITIVE
    assert (out["their procedure"], out["controlled"]) == ("holds", "inconclusive")
    assert "warm-up: 2 of their runs were measured before the server was warm" in out["why"]
    assert "their 3 runs per server came from 1 server process" in out["why"] and "ours are 5 fresh" in out["why"]
    single = claims.procedures(frame("inconclusive", 1, 1, 0), frame("holds", 5, 5, 0)).iloc[0]
    assert single["verdict"] == "procedure-sensitive" and "one run per server gives no interval" in single["why"]
    unseen = claims.procedures(frame("reversed", 3, 3, 0), frame("holds", 3, 3, 0)).iloc[0]
    assert "the runs do not show which part" in unseen["why"]
    for theirs, ours, said in (("holds", "holds", "Holds under both procedures."),
                               ("differs", "inconclusive", "it holds under neither"),
                               ("holds", "not testable here", "The controlled runs cannot judge it"),
                               ("not testable here", "holds", "Its own procedure's runs cannot judge it"),
                               ("not testable here", "not testable here", "Neither procedure's runs")):
        agreed = claims.procedures(frame(theirs, 3, 1, 0), frame(ours, 3, 3, 0)).iloc[0]
        assert agreed["verdict"] == ours and said in agreed["why"], (theirs, ours, agreed["why"])
    busy = "Not testable here: wrk was 91% busy in 1 of 4 runs."
    reason = claims.procedures(frame("inconclusive", 3, 1, 0), frame("not testable here", 2, 2, 0, busy)).iloc[0]
    assert reason["why"] == ("The controlled runs cannot judge it (wrk was 91% busy in 1 of 4 runs); under its own "
                             "procedure it is inconclusive."), "the reason is said where the verdict is"
    neither = claims.procedures(frame("not testable here", 3, 1, 0, "Not testable here: no finished run of a."),
                               frame("not testable here", 2, 2, 0, busy)).iloc[0]
    assert neither["why"] == ("Neither procedure's runs can judge it: wrk was 91% busy in 1 of 4 runs (theirs: no "
                              "finished run of a).")
    alike = claims.procedures(frame("not testable here", 3, 1, 0,
                                    "Not testable here: wrk was 97% busy in 2 of 3 runs."),
                              frame("not testable here", 2, 2, 0, busy)).iloc[0]
    assert alike["why"] == ("Neither procedure's runs can judge it: wrk was 91% busy in 1 of 4 runs (theirs "
                            "likewise).")
    same = claims.procedures(frame("not testable here", 3, 1, 0, busy), frame("not testable here", 2, 2, 0, busy))
    assert same.iloc[0]["why"] == "Neither procedure's runs can judge it: wrk was 91% busy in 1 of 4 runs."
    both_cold = claims.procedures(frame("inconclusive", 3, 1, 9), frame("inconclusive", 2, 2, 0)).iloc[0]
    assert both_cold["why"] == ("Inconclusive under both procedures. 9 of their runs were measured before the server "
                                "was warm."), "a cold replay is said even where the verdicts agree"


def test_the_report_says_which_claims_are_procedure_sensitive_or_that_none_is_per_stack():
    from benchlab.present import claimtables

    def frame(*verdicts):
        return pd.DataFrame({"claim": ["a", "b", "c", "d"], "verdict": verdicts, "values": 3, "forks": 1,
                             "cold": 0, "why": "..."})

    judged = {("ours", "controlled"): frame("inconclusive", "holds", "not testable here", "holds"),
              ("ours", "theirs"): frame("holds", "inconclusive", "holds", "holds"),
              ("theirs", "controlled"): frame("inconclusive", "inconclusive", "inconclusive", "differs"),
              ("theirs", "theirs"): frame("inconclusive", "not testable here", "differs", "differs")}
    assert claimtables.sensitivity(judged) == (
        "Both procedures judged 3 of 4 claims: 2 are procedure-sensitive (a, b). "
        "Both procedures judged 3 of 4 claims on their stack: none is procedure-sensitive.")
    assert claimtables.sensitivity({key: f for key, f in judged.items() if key[1] == "controlled"}) == "", \
        "one procedure: nothing to say"


def test_their_procedure_is_their_warm_up_and_runs_back_to_back_in_their_sequence():
    from benchlab.present import replay
    from benchlab.present.notebook import ParameterError

    table = claims.read()
    theirs = replay.procedure_options(table, "wrk", "theirs", repeats=5, warmup="auto")
    assert theirs["options"] == {"repeats": 1, "windows": 3, "warmup": 0.0} and theirs["sequence"] is None
    k6 = replay.procedure_options(table, "rate-10k", "theirs", repeats=5, warmup="auto")
    assert k6["sequence"] == ["spring-tomcat+vt@java25", "spring-webflux"] and k6["options"]["windows"] == 2
    assert replay.procedure_options(table, "wrk", "controlled", repeats=5, warmup="auto")["options"] == {
        "repeats": 5, "warmup": "auto"}
    assert replay.in_sequence(["a", "b", "c"], ["c", "a"]) == ["c", "a", "b"]
    assert replay.in_sequence(["a", "b"], None) == ["a", "b"]
    with pytest.raises(ParameterError, match="procedure 'mine': choose controlled, theirs, both"):
        replay.check(experiments=["wrk"], users=[1], loops=[1], count_drivers=["wrk"], procedure="mine")


def test_claims_are_chosen_by_id_or_source_and_each_experiment_replays_its_load_shape():
    from benchlab.present import replay
    from benchlab.present.notebook import ParameterError

    table = claims.read()
    chosen = replay.select(table, ["Andy Beck", "jhipster814-jetty-undertow-rps"])
    assert set(chosen["experiment"]) == {"jmeter-ramp", "h2load-count"} and len(chosen) == 4
    assert replay.experiments_of(chosen, replay.EXPERIMENTS) == ["jmeter-ramp", "h2load-count"]
    assert replay.experiments_of(chosen, ["wrk"]) == []
    with pytest.raises(ParameterError, match="'nobody' is no claim id and starts no source; the sources are: wrk"):
        replay.select(table, ["nobody"])
    ramp = replay.plan(table, "jmeter-ramp", duration=10, count_scale=1.0)["options"]
    assert ramp == {"servers": ["spring-tomcat", "spring-undertow", "spring-jetty"], "scenarios": ["hello"],
                    "load": "count", "users": [1000], "loops": [3], "driver": "jmeter", "ramp_up": 10}
    arena = replay.plan(table, "wrk-512", duration=10, count_scale=0.1)
    assert arena["options"]["connections"] == [512] and arena["options"]["duration"] == 5.0
    assert arena["options"]["pipeline"] == 1
    assert arena["said"] == "wrk, 512 connections, 5 s"
    ab = replay.plan(table, "h2load-count", duration=10, count_scale=0.1)
    assert ab["options"]["driver"] == "h2load" and ab["said"] == "h2load, 50 users x 20 loops (theirs 200)"
    servlets = ["spring-tomcat", "spring-undertow"]
    close = replay.plan(table, "rate-1k-close", duration=10, count_scale=0.1, servers=servlets)
    assert close["options"] == {"servers": servlets, "scenarios": ["hello"], "load": "rate", "rates": [1000.0],
                                "duration": 10.0, "keepalive": False}, "webflux's claims need webflux"
    loom = replay.plan(table, "rate-10k", duration=10, count_scale=0.1, servers=["spring-tomcat", "spring-webflux"])
    assert loom["options"]["servers"] == ["spring-webflux@java25", "spring-tomcat+vt@java25"], "variants of named ones"
    assert loom["options"]["rates"] == [replay.RATE_CAP] and "(theirs 10000:" in loom["said"]
    piped = replay.plan(table, "wrk-pipelined", duration=10, count_scale=0.1)
    assert piped["options"]["pipeline"] == 16 and piped["options"]["connections"] == [128]
    assert piped["said"] == "wrk, 128 connections, 16 requests pipelined, 10 s (theirs 30 s)"
    assert set(replay.NOT_REPLAYED) | set(replay.EXPERIMENTS) == set(table["experiment"])


def test_the_report_table_puts_both_procedures_and_their_verdict_beside_each_claim():
    from benchlab.present import claimtables
    from benchlab.schema import PROCEDURE_SENSITIVE

    table = pd.DataFrame([claim(claim="u", published=1.47, untestable=math.nan)])
    warm = Suite(runs("spring-tomcat", TOMCAT) + runs("spring-undertow", [147.0, 148.0, 146.0, 147.5, 146.5]))
    cold = Suite(runs("spring-tomcat", [100.0, 130.0, 70.0], warmup=0.0, one_fork=True)
                 + runs("spring-undertow", [90.0, 160.0, 150.0], warmup=0.0, one_fork=True))
    by_replay = {("ours", "controlled"): ({"wrk": warm}, {}), ("ours", "theirs"): ({"wrk": cold}, {})}
    shown = claimtables.verdicts(table, by_replay, ["jmeter"])
    assert list(shown.columns) == ["it says", "load", "published", "their procedure", "controlled", "verdict", "why"]
    row = shown.loc["u"]
    assert row["controlled"].startswith("holds (1.") and row["their procedure"].startswith("inconclusive (1.")
    assert row["verdict"] == "procedure-sensitive" and "procedure-sensitive" in PROCEDURE_SENSITIVE
    assert row["why"].startswith("It is inconclusive under its own procedure and holds under the "
                                 "controlled one: repeats: their 3 runs per server came from 1")
    # two stacks: a row per claim and stack, the claim's words once
    stacks = claimtables.verdicts(table, {**by_replay, ("theirs", "controlled"): ({"wrk": warm}, {}),
                                          ("theirs", "theirs"): ({"wrk": warm}, {})}, ["jmeter"])
    assert list(stacks["stack"]) == ["our stack", "their stack"] and list(stacks.index) == ["u", "u"]
    assert list(stacks["verdict"]) == ["procedure-sensitive", "holds"] and list(stacks["published"]) == ["1.47", ""]
    alone = claimtables.verdicts(table, {("ours", "controlled"): ({"wrk": warm}, {})}, ["jmeter"])
    assert not [c for c in alone.columns if "procedure" in c], "one procedure: no procedure columns"


def test_the_count_drivers_stand_side_by_side_with_the_claims_they_change():
    from benchlab.present import claimtables

    rows = pd.DataFrame([
        {"claim": "a", "claim_text": "x", "driver": "jmeter", "ours": "1.1", "verdict": "holds",
         "load tool cpu (median %)": 90.0},
        {"claim": "a", "claim_text": "x", "driver": "wrk", "ours": "1.0", "verdict": "inconclusive",
         "load tool cpu (median %)": 30.0},
        {"claim": "b", "claim_text": "y", "driver": "jmeter", "ours": "0.9", "verdict": "holds",
         "load tool cpu (median %)": 90.0},
        {"claim": "b", "claim_text": "y", "driver": "wrk", "ours": "0.9", "verdict": "holds",
         "load tool cpu (median %)": 30.0}])
    side, said = claimtables.drivers_beside(rows)
    assert said == "1 of 2 count claims get a different verdict with another driver (jmeter, wrk)"
    assert side.loc[("a", "x"), ("verdict", "wrk")] == "inconclusive" and len(side) == 2


def test_a_planned_experiment_runs_only_the_servers_asked_for():
    from benchlab.present import replay

    table = claims.read()
    assert replay.plan(table, "h2load-count", duration=10, count_scale=0.1)["options"]["servers"] == [
        "spring-undertow", "spring-jetty"], "Baeldung's untestable h2load claims add no server"
    # jhipster's claim compares Jetty with Undertow: without Undertow it cannot be judged, so nothing of it runs
    assert replay.plan(table, "h2load-count", duration=10, count_scale=0.1,
                       servers=["spring-tomcat", "spring-jetty"])["options"]["servers"] == []
    assert replay.plan(table, "h2load-count", duration=10, count_scale=0.1,
                       servers=["spring-undertow", "spring-jetty"])["options"]["servers"] == [
        "spring-undertow", "spring-jetty"]


def test_a_fixed_rate_claim_is_judged_on_the_rate_runs_whatever_rate_the_replay_offered():
    # loom's 10,000 req/s over 10,000 connections, replayed here at the 3,000 one load core sends (vegeta's
    # runs keep the default 200 connections): the rate runs judge it, the connections do not
    import dataclasses

    def at_rate(rows: list[Run], rate: float) -> list[Run]:
        return [dataclasses.replace(r, params={**r.params, "load": "rate", "driver": "vegeta", "rate": rate})
                for r in rows]

    rate_claim = claim(metric="p99", rate=10000.0, connections=10000, published=0.5)
    p99s = {"spring-tomcat": [0.010, 0.011, 0.0105, 0.0102, 0.0108], "spring-undertow": [0.005, 0.0051, 0.0052,
                                                                                           0.0049, 0.0050]}
    rows = [r for server, p99 in p99s.items() for r in at_rate(runs(server, [3000.0] * 5, p99=p99), 3000.0)]
    row = judged(rows, rate_claim).iloc[0]
    assert row["verdict"] == "holds", row["why"]
    assert judged(runs("spring-tomcat", TOMCAT) + runs("spring-undertow", TOMCAT), rate_claim).iloc[0][
        "verdict"] == "not testable here", "closed-loop runs do not judge a fixed-rate claim"
    mixed = rows + at_rate(runs("spring-tomcat", [2000.0] * 5, p99=p99s["spring-tomcat"]), 2000.0)
    assert "differ in rate" in judged(mixed, rate_claim).iloc[0]["why"], "two rates in one suite are two setups"
