"""What serving costs, end to end: two real Spring servers offered one paced rate (vegeta), their CPU per request and
memory judged with intervals, and a run that could not keep its rate flagged and left out."""

from __future__ import annotations

import math

import pytest

import benchlab
from benchlab.analysis import cost, validity
from benchlab.present import terminal

pytestmark = pytest.mark.integration

SERVERS = ["spring-tomcat", "spring-undertow"]


def test_two_servers_at_one_rate_cost_with_intervals(jars, tmp_path, no_jvm_left, capsys):
    suite = benchlab.compare(SERVERS, ["hello"], load="rate", rates=[3000], repeats=2, windows=2, duration="3s",
                             results_dir=tmp_path, progress=False)
    runs = suite.runs[suite.runs["status"] == "ok"]
    assert len(runs) == 8 and cost.judged(suite.runs) == ("cpu_per_request", "server_rss_mean", "server_rss_max")
    for _, run in runs.iterrows():
        answered = run["requests"] - run["errors_total"]
        assert run["server_cpu_s"] > 0 and run["cpu_per_request"] * answered == pytest.approx(run["server_cpu_s"])
        # two measures of one thing: the kernel's count read before and after, and the monitor's sampled % of a core
        sampled = run["server_cpu_mean"] / 100 * run["elapsed_s"] / answered
        assert 0.7 < run["cpu_per_request"] / sampled < 1.4, (run["cpu_per_request"], sampled)
    summary = suite.summary(metrics=cost.judged(suite.runs))
    per_request = summary[summary["metric"] == "cpu_per_request"]
    assert set(per_request["server"]) == set(SERVERS) and (per_request["n"] == 2).all()
    assert (per_request["ci_low"] > 0).all() and per_request["ci_high"].map(math.isfinite).all(), \
        "an interval on each server's CPU per request, above 0, from the clean windows' fork means"
    verdict = suite.verdicts("cpu_per_request").iloc[0]
    assert verdict["judged"] and math.isfinite(verdict["change"]) and "cpu_per_request" in verdict["verdict"]
    # better says whether the server beat the baseline: for CPU per request, lower is better
    assert verdict["better"] == (verdict["change"] < 0) if verdict["significant"] else verdict["better"] is None
    terminal.print_suite(suite)
    shown = capsys.readouterr().out
    assert "cpu_per_request (µs)" in shown and "spring-undertow vs spring-tomcat:" in shown
    assert any(line.strip().startswith("spring-undertow vs spring-tomcat:") and "cpu_per_request" in line
               for line in shown.splitlines())


def test_the_common_rate_is_found_first_kept_and_said(jars, tmp_path, no_jvm_left):
    """rates="auto": each server's closed-loop rate, 60% of the slowest, lowered to what vegeta on its one core
    keeps; every window offered that rate, each saying where it came from, and a resumed comparison offering the
    same rate without measuring it again."""
    import json

    from benchlab.present import header
    from benchlab.running import common

    options = dict(load="rate", rates="auto", connections=16, repeats=2, duration="3s", warmup="5s",
                   results_dir=tmp_path, progress=False)
    suite = benchlab.compare(SERVERS, **options)
    found = json.loads((tmp_path / common.FILE).read_text())
    assert set(found["closed"]) == set(SERVERS) and min(found["closed"].values()) > 1000
    ceiling = common.SHARE * min(found["closed"].values())
    tries = found["tries"]
    assert tries[-1]["passed"] and not any(t["passed"] for t in tries[:-1]) and found["rate"] == tries[-1]["rate"]
    assert set(tries[-1]["servers"]) == set(SERVERS), "every server tried at the rate offered"
    # each one's busy share kept: its CPU seconds over the load's time (a cold fork compiling beside its load can
    # read over one core: the CPU is read from just before the tool starts to just after it ends)
    assert all(server["busy"] > 0 for server in tries[-1]["servers"].values())
    if found["by"] == "closed loop":
        assert len(tries) == 1 and found["rate"] == pytest.approx(ceiling, abs=0.1)
    else:  # the load tool short, or a server behind: lowered to 90% of what was sent, at most three tries
        assert found["by"] == "load tool"
        assert 1 < len(tries) <= common.TRIES and found["rate"] < ceiling and all(t["why"] for t in tries[:-1])
    ok = [r for r in suite.records if r.status == "ok"]
    assert len(ok) == 4 and {r.metrics["target_rps"] for r in ok} == {found["rate"]}
    assert all(r.metadata["common_rate"] == found for r in ok)
    said = dict(header.measured(suite).rows)["rate"]
    assert said.startswith(f"{found['rate']:,.0f} req/s offered to every server")
    assert f"{found['closed'][found['slowest']]:,.0f} req/s in a closed loop at 16 connections" in said
    again = benchlab.compare(SERVERS, **options)  # resumed: the rate read back, every window found stored
    assert sorted(r.id for r in again.records) == sorted(r.id for r in suite.records)
    assert json.loads((tmp_path / common.FILE).read_text()) == found


def test_a_run_that_cannot_keep_its_rate_is_flagged_and_left_out(jars, tmp_path, no_jvm_left):
    # Tomcat's 200 threads sleeping 100 ms each answer at most 2,000 req/s: offered 3,000, it falls behind
    run = benchlab.run("spring-tomcat", "sleep:100", load="rate", rate=3000, duration="3s", warmup="2s",
                       results_dir=tmp_path)
    # it answers late, and once vegeta's 1,000 requests in flight are all waiting, vegeta sends less too
    assert run.metrics["achieved_rps"] < 0.99 * 3000 and run.metrics["achieved_rps"] <= run.metrics["sent_rps"] * 1.01
    stored = benchlab.load(tmp_path)
    flags = stored.flags()
    assert "rate_shortfall" in set(flags["flag"])
    used, left = validity.usable(stored.runs)
    assert used.empty and "short of their asked rate" in validity.said(next(iter(left.values())))


def test_a_capacity_search_finds_the_knee_a_sweep_of_the_same_fork_finds(jars, tmp_path, no_jvm_left):
    """Tomcat with 8 threads, each request sleeping 10 ms, carries some 800 req/s: below that p99 is about 10 ms,
    above it the queue grows for as long as the window lasts. The search (p99 < 50 ms) and then a sweep of 8 rates
    in the same warm fork. The capacity is a rate a whole window held, so each sweep step is as long as that window:
    a 2 s step can pass at 800 req/s where the queue of a 4 s window at 790 already breaks the limit."""
    import dataclasses
    import time

    from benchlab.running import cost as searching
    from benchlab.running import window
    from benchlab.running.fork import Fork
    from benchlab.running.options import RunOptions
    from benchlab.running.spec import prepare

    spec = prepare("spring-tomcat+threads8", "sleep:10", RunOptions.of(load="rate", rate=100, slo="p99<50ms",
                                                                      duration="4s", warmup="10s", retakes=0))
    with Fork(spec, [(tmp_path / "search", "search")]) as fork:
        fork.start()
        fork.warm()
        began = time.monotonic()
        run = fork.window()
        search_s = time.monotonic() - began
        found = run.metadata["search"]
        column, limit = searching.parse(spec.load.slo)
        swept, began = [], time.monotonic()
        for rate in (500, 600, 650, 700, 750, 800, 850, 900):
            at = dataclasses.replace(spec, load=dataclasses.replace(spec.load, rate=rate))
            (tmp_path / f"sweep{rate}").mkdir()
            measured = window.measure(at, fork.driver, fork.instance, fork.runner, fork.jvm, tmp_path / f"sweep{rate}",
                                      waited=0.0)
            swept.append((rate, searching.passes(measured.metrics, column, limit)[0]))
        sweep_s = time.monotonic() - began
    capacity = run.metrics["capacity_rps"]
    assert found["capacity_by"] == "server" and run.metrics["capacity_by"] == "server", found["steps"]
    assert run.metrics["target_rps"] == capacity and run.metrics["search_steps"] == len(found["steps"]) >= 5
    last_pass = max((r for r, ok in swept if ok), default=0)
    first_fail = min((r for r, ok in swept if not ok and r > last_pass), default=float("inf"))
    assert last_pass * (1 - searching.RESOLUTION) <= capacity <= first_fail * (1 + searching.RESOLUTION), \
        (capacity, swept, found["steps"])
    held = [s["rate"] for s in found["steps"] if s.get("held")]
    print(f"capacity {capacity:.0f} req/s in {len(found['steps'])} steps, held at {held}, {search_s:.0f} s in all; "
          f"the sweep of 8 rates: {swept}, {sweep_s:.0f} s")
