"""The machine's ceiling: each server's requests/s as a share of the fastest reference in its cell, with an
interval that covers the true share as often as it says (a simulation), in the summary, the report's table and
the terminal (fast tier: runs made in memory)."""

from __future__ import annotations

import math

import numpy as np

from benchlab.analysis import ceiling
from benchlab.analysis.suite import Suite
from benchlab.present import formatting
from benchlab.store.results import Run, frame


def _runs(means: dict[str, float], *, rounds: int = 4, cv: float = 0.03, seed: int = 0, connections: int = 64,
          suite: str = "s") -> list[Run]:
    rng = np.random.default_rng(seed)
    return [Run(id=f"{server}-c{connections}-r{r}", params={"server": server, "scenario": "hello", "load": "duration",
                "driver": "wrk", "connections": connections, "repeat": r, "server_cpus": [0], "load_cpus": [1]},
                metrics={"rps": float(mean * rng.lognormal(0.0, cv))}, metadata={}, suite=suite)
            for r in range(1, rounds + 1) for server, mean in means.items()]


def test_without_a_reference_the_summary_is_as_it_was():
    suite = Suite(_runs({"spring-tomcat": 20000.0, "spring-jetty": 22000.0}))
    assert "share" not in suite.summary(["rps"]) and suite.ceiling().empty


def test_each_server_is_read_against_the_fastest_reference_of_its_cell():
    runs = _runs({"spring-undertow": 20000.0, "nginx": 80000.0, "go-nethttp": 40000.0}, cv=0.0)
    runs += _runs({"spring-undertow": 15000.0, "nginx": 30000.0, "go-nethttp": 50000.0}, cv=0.0, connections=16)
    shares = Suite(runs).ceiling().set_index(["connections", "server"])
    assert shares.loc[(64, "spring-undertow"), "reference"] == "nginx"
    assert math.isclose(shares.loc[(64, "spring-undertow"), "share"], 0.25)
    assert math.isclose(shares.loc[(64, "go-nethttp"), "share"], 0.5) and shares.loc[(64, "nginx"), "share"] == 1.0
    assert shares.loc[(16, "spring-undertow"), "reference"] == "go-nethttp", "the fastest reference of that cell"
    assert math.isclose(shares.loc[(16, "spring-undertow"), "share"], 0.3)
    assert shares.loc[(64, "spring-undertow"), "text"] == "spring-undertow served 25.0% of nginx's requests/s on 1 core"
    assert shares.loc[(64, "nginx"), "text"].startswith("nginx is the fastest reference on 1 core")
    summary = Suite(runs).summary(["rps", "p99"])
    rps = summary[summary["metric"] == "rps"].set_index(["connections", "server"])
    assert math.isclose(rps.loc[(64, "spring-undertow"), "share"], 0.25) and \
        rps.loc[(64, "spring-undertow"), "reference"] == "nginx"
    assert summary[summary["metric"] == "p99"]["share"].isna().all(), "a share of requests/s only"


def test_the_report_table_and_the_terminal_say_the_share():
    suite = Suite(_runs({"spring-undertow": 20000.0, "nginx": 80000.0}))
    shown = formatting.summary(suite.summary(["rps"]))
    column = shown["share of the fastest reference [95% CI]"]
    assert column.iloc[0].endswith(" of nginx") and column.iloc[0].startswith("2")


def test_the_share_interval_covers_the_true_share_at_its_level():
    # 400 cells of 4 forks a server, each fork 5% off its server's mean (log-normal), the truth 0.25: the 95%
    # interval of the share must cover 0.25 in about 95% of them. Each cell is a comparison of its own.
    trials = 400
    runs = [run for seed in range(trials)
            for run in _runs({"spring-undertow": 20000.0, "nginx": 80000.0}, cv=0.05, seed=seed, connections=seed + 1)]
    found = ceiling.shares(frame(runs))
    mine = found[found["server"] == "spring-undertow"]
    assert len(mine) == trials
    covered = ((mine["share_low"] <= 0.25) & (0.25 <= mine["share_high"])).mean()
    assert 0.92 <= covered <= 0.98, covered
