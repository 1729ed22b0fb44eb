"""A claim's wire (HTTP/1.1, h2c, h2, HTTPS) and streams: read from the claims table, checked there, carried into
the replay's Comparison (``protocol``, ``streams``), and kept apart when judging."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from benchlab import Suite, reproduce
from benchlab.analysis import catalogue, claims
from benchlab.errors import ResultsError
from benchlab.present import replay
from benchlab.running.options import Comparison
from tests.test_claims import TOMCAT, claim, runs

H2 = "httparena-h2-256-jetty-tomcat-rps"


@pytest.fixture(autouse=True)
def jdks(monkeypatch):
    """The JDKs "theirs" chooses from, without asking each installed java its version (a JVM start each)."""
    from benchlab.running import variants

    monkeypatch.setattr(variants, "installed", lambda: {"/jdk17/bin/java": 17, "/jdk25/bin/java": 25})


def test_every_claim_before_http2_is_http1_with_one_stream_and_the_h2_ones_say_theirs():
    table = claims.read()
    assert list(table.columns) == list(catalogue.TABLE)
    wires = {row["claim"]: (claims.wire(row), claims.streams(row)) for row in table.to_dict("records")}
    assert wires[H2] == wires["httparena-h2-256-jetty-tomcat-rss"] == ("h2", 100)
    assert {w for c, w in wires.items() if not c.startswith("httparena-h2-")} == {("http1", 1)}
    loads = dict(zip(claims.judge(table, {})["claim"], claims.judge(table, {})["load"]))
    assert loads[H2] == "256 connections, 64 threads, 5 s, over h2, 100 streams a connection, hello"
    assert loads["wrk-jetty-rps"] == "200 connections, 4 threads, 30 s, hello", "an HTTP/1.1 claim says no wire"


def test_an_http2_claim_becomes_an_h2_experiment_and_the_wrk_and_jmeter_claims_stay_http1(tmp_path, monkeypatch):
    from benchlab import api

    table = claims.read()
    chosen = replay.replayable(replay.select(table, [H2, "httparena-h2-256-jetty-tomcat-rss", "wrk write-up",
                                                     "JMeter write-up"]))
    taken: dict = {}
    monkeypatch.setattr(api, "carry_out", lambda comparison, *, results_dir: taken.setdefault(results_dir, comparison))
    seeds = reproduce.Seeds(duration="2s", users=[100], loops=[1000], count_drivers=["jmeter"])
    template = Comparison.of(servers=["spring-tomcat", "spring-jetty", "spring-undertow"], baseline="spring-tomcat",
                             repeats=2, warmup="5s", protocol="h2c", streams=7)  # the template's wire is not theirs
    done = reproduce.experiments(chosen, table, ["wrk", "jmeter", "h2load-h2-256"], seeds, template, base=tmp_path)
    h2 = taken[tmp_path / "h2load-h2-256"]
    assert (h2.run.protocol, h2.run.streams, h2.connections, h2.servers) == (
        "h2", 100, [256], ["spring-tomcat", "spring-jetty"])
    assert done.said[("ours", "controlled")]["h2load-h2-256"].startswith("h2load, 256 connections over h2 x 100 "
                                                                        "streams, 2 s (theirs 5 s); ")
    for folder in ("wrk", "count-jmeter"):
        ran = taken[tmp_path / folder]
        assert (ran.run.protocol, ran.run.streams) == ("http1", 1), folder
    unchanged = Comparison.of(servers=["spring-tomcat", "spring-jetty", "spring-undertow"], scenarios=["hello"],
                              connections=[200], threads=None, duration="2s", repeats=2, warmup="5s",
                              baseline="spring-tomcat", driver=None)
    assert taken[tmp_path / "wrk"] == unchanged, "the wrk experiment is the one it was before wires"
    assert taken[tmp_path / "count-jmeter"].run.driver == "jmeter"


def test_the_claims_table_is_refused_when_a_column_is_missing_a_wire_unknown_or_an_experiment_mixes_wires(tmp_path):
    table = claims.read()
    path = tmp_path / "claims.csv"
    table.drop(columns=["streams"]).to_csv(path, index=False)
    with pytest.raises(ResultsError, match="claims.csv: no column streams"):
        claims.read(path)
    table.assign(wire=table["wire"].where(table["claim"] != H2, "h3")).to_csv(path, index=False)
    with pytest.raises(ResultsError, match="wire h3: give one of http1, h2c, h2, https"):
        claims.read(path)
    table.assign(wire=table["wire"].where(table["claim"] != "wrk-jetty-rps", "h2c")).to_csv(path, index=False)
    with pytest.raises(ResultsError, match="experiment wrk holds claims over more than one wire"):
        claims.read(path)
    table.assign(streams=table["streams"].where(table["claim"] != H2, 10)).to_csv(path, index=False)
    with pytest.raises(ResultsError, match="experiment h2load-h2-256 holds"):
        claims.read(path)


def test_an_h2_claim_is_judged_on_the_runs_over_its_wire_and_streams_only():
    def over(rows, protocol: str, streams: int):
        return [dataclasses.replace(r, id=f"{r.id}-{protocol}-{streams}",
                                    params={**r.params, "protocol": protocol, "streams": streams}) for r in rows]

    h2 = claim(wire="h2", streams=100, published=1.47)
    faster = runs("spring-tomcat", TOMCAT) + runs("spring-undertow", [147.0, 148.0, 146.0, 147.5, 146.5])
    row = claims.judge(pd.DataFrame([h2]), {"wrk": Suite(over(faster, "h2", 100))}).iloc[0]
    assert row["verdict"] == "holds", row["why"]
    plain = claims.judge(pd.DataFrame([h2]), {"wrk": Suite(faster)}).iloc[0]
    assert plain["verdict"] == "not testable here" and "over h2, 100 streams a connection" in plain["why"], \
        "HTTP/1.1 runs do not judge an h2 claim"
    other = claims.judge(pd.DataFrame([h2]), {"wrk": Suite(over(faster, "h2", 10))}).iloc[0]
    assert other["verdict"] == "not testable here", "10 streams a connection is another load"
    both = claims.judge(pd.DataFrame([claim(), h2]), {"wrk": Suite(faster + over(faster, "h2", 100))})
    assert list(both["verdict"]) == ["holds", "holds"], "each claim takes its own wire's runs from one suite"
