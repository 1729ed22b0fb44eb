"""The capacity search's logic on a server model with a known limit (fast; the real search is in test_cost.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from benchlab.errors import UsageError
from benchlab.running import cost
from benchlab.running.load import Load


def model(capacity: float, *, tool: float = 1e9, base: float = 0.001):
    """A server whose p99 is ``base / (1 - rate / capacity)`` (an M/M/1 queue's shape), and a load tool that sends
    at most ``tool`` req/s; returns measure_at and the loads it was given."""
    given = []

    def measure_at(load):
        given.append(load)
        sent = min(load.rate, tool)
        busy = sent / capacity
        p99 = base / (1 - busy) if busy < 1 else 10.0
        achieved = sent if busy < 1 else capacity
        return SimpleNamespace(metrics={"p99": p99, "target_rps": load.rate, "sent_rps": sent,
                                        "achieved_rps": achieved, "requests": int(sent * load.duration)})

    return measure_at, given


def rate_at_limit(capacity: float, limit: float, base: float = 0.001) -> float:
    return capacity * (1 - base / limit)


def test_the_search_finds_the_rate_at_the_limit_within_its_resolution_and_holds_it():
    measure_at, given = model(20_000)
    load = Load(model="rate", rate=1000, duration=4, slo="p99<5ms")
    held, found = cost.search(load, measure_at)
    truth = rate_at_limit(20_000, 0.005)  # 16,000 req/s
    assert found["capacity_by"] == "server"
    assert truth / (1 + cost.RESOLUTION) <= found["capacity_rps"] <= truth
    assert held.metrics["target_rps"] == found["capacity_rps"] and given[-1].duration == 4, "held a whole window"
    assert all(step.duration == 2 for step in given[:-1]), "each step half a window"
    assert [s["rate"] for s in found["steps"][:5]] == [1000, 2000, 4000, 8000, 16000], "doubling from the start"
    first_fail = found["steps"][4]  # 16,000 req/s puts p99 at 5 ms: over the limit, which is strict
    searched = [s for s in found["steps"] if not s.get("held")]
    assert not first_fail["passed"] and first_fail["why"].startswith("p99") and len(searched) <= 12
    assert [s["rate"] for s in found["steps"] if s.get("held")] == [found["capacity_rps"]], "held once, kept"


def test_a_load_tool_that_cannot_send_more_is_named_not_taken_for_the_server():
    measure_at, _ = model(50_000, tool=9_000)
    _, found = cost.search(Load(model="rate", rate=1000, duration=4, slo="p99<5ms"), measure_at)
    assert found["capacity_by"] == "load tool" and found["capacity_rps"] <= 9_000 / cost.KEPT


def test_a_first_rate_over_the_limit_finds_nothing():
    measure_at, _ = model(2_000)
    held, found = cost.search(Load(model="rate", rate=5000, duration=4, slo="p99<5ms"), measure_at)
    assert found["capacity_by"] == "limit" and found["capacity_rps"] is None
    assert [s["attempt"] for s in found["steps"]] == [1, 2], "failed on its p99 twice: two of three decided"


def test_an_unfound_capacity_is_flagged_and_leaves_the_window_out():
    import pandas as pd

    from benchlab.analysis import validity
    from benchlab.schema import COLUMNS

    rows = [{**dict.fromkeys(COLUMNS), "id": f"r{i}", "server": "a", "status": "ok", "rps": 1000.0,
             "capacity_rps": 9000.0, "capacity_by": by} for i, by in enumerate(["server", "load tool"])]
    used, left = validity.usable(pd.DataFrame(rows, columns=list(COLUMNS)))
    assert list(used["id"]) == ["r0"] and "capacity search stopped short" in validity.said(next(iter(left.values())))


@pytest.mark.parametrize("slo, message", [("p99<5", "needs its unit"), ("p42<5ms", "one of p50"),
                                          ("latency<5ms", "such as p99<5ms"), ("p99<0ms", "more than 0")])
def test_a_bad_slo_is_one_line_that_names_the_fix(slo, message):
    with pytest.raises(UsageError, match=message):
        cost.parse(slo)


def test_slo_needs_an_open_loop_and_reads_as_one_spelling():
    with pytest.raises(UsageError, match="needs load='rate'"):
        Load(connections=16, duration=5, slo="p99<5ms")
    assert Load(model="rate", rate=100, duration=5, slo="p99 <= 0.005s").slo == "p99<5ms"


def test_the_capacity_chart_draws_every_step_the_limit_and_each_forks_capacity():
    import pandas as pd

    from benchlab.analysis import cost as judged
    from benchlab.present import charts

    rows = []
    for fork, server in enumerate(["spring-tomcat", "spring-undertow"]):
        _, found = cost.search(Load(model="rate", rate=1000, duration=4, slo="p99<5ms"), model(10_000 * (fork + 1))[0])
        rows += [{"id": f"w{fork}", "server": server, "fork": f"f{fork}", "slo": found["slo"], "percentile": "p99",
                  "step": n, "rate": s["rate"], "latency_s": s["p99"], "passed": s["passed"], "why": s["why"],
                  "capacity_rps": found["capacity_rps"], "capacity_by": found["capacity_by"], "kept": fork == 0}
                 for n, s in enumerate(found["steps"], start=1)]
    spec = charts.capacity(pd.DataFrame(rows, columns=list(judged.STEP_COLUMNS))).to_dict()
    points, rule, ticks = spec["layer"]
    assert points["encoding"]["x"]["field"] == "rate" and points["encoding"]["y"]["scale"]["type"] == "log"
    assert rule["encoding"]["y"]["datum"] == 5.0, "the limit, in ms"
    assert ticks["encoding"]["x"]["field"] == "capacity_rps"
    assert len({r["id"] for r in rows}) == 2 and "Capacity under p99<5ms" in spec["title"]["text"]


def test_one_slow_window_does_not_stop_the_search_two_of_three_decide():
    measure_at, _ = model(20_000)
    calls = {"n": 0}

    def with_a_pause(load):  # the third window (4,000 req/s, first try) meets a GC pause: its p99 is 20 ms
        calls["n"] += 1
        measured = measure_at(load)
        if calls["n"] == 3:
            measured.metrics["p99"] = 0.020
        return measured

    _, found = cost.search(Load(model="rate", rate=1000, duration=4, slo="p99<5ms"), with_a_pause)
    tries = [(s["rate"], s["attempt"], s["passed"]) for s in found["steps"] if s["rate"] == 4000]
    assert tries == [(4000, 1, False), (4000, 2, True), (4000, 3, True)]
    assert found["capacity_by"] == "server" and found["capacity_rps"] > 15_000, "it went on past the pause"


def test_a_load_tool_out_of_cpu_is_its_own_limit_whatever_the_latency():
    slow_and_busy = {"p99": 0.009, "target_rps": 20_000, "sent_rps": 20_000, "achieved_rps": 20_000,
                     "requests": 40_000, "load_cpu_mean": 97.0}
    assert cost.passes(slow_and_busy, "p99", 0.005) == (False, "load tool busy 97%")
    assert cost.passes(slow_and_busy, "p99", 0.005, load_cores=2)[1] == "p99 9 ms", "half of two cores is not busy"


def test_a_held_window_that_falls_short_is_held_again_a_step_lower():
    """A 2 s step can pass at a rate whose queue grows by 1% of it; the whole held window shows it (Tomcat on
    sleep:50 found 4,050 req/s where 200 threads carry 4,000, and 2 of 3 held windows fell short)."""
    from benchlab.analysis import flags

    measure_at, given = model(20_000)

    def sustained(cap: float):
        def measure(load):
            measured = measure_at(load)
            if load.duration >= 4:  # a whole window: what the server sustains, not what its queue absorbed
                measured.metrics["achieved_rps"] = min(load.rate, cap)
            return measured
        return measure

    load = Load(model="rate", rate=1000, duration=4, slo="p99<5ms")
    held, found = cost.search(load, sustained(15_700))
    holds = [s for s in found["steps"] if s.get("held")]
    assert [h["passed"] for h in holds] == [False, True] and holds[0]["why"].startswith("kept")
    assert holds[1]["rate"] == pytest.approx(holds[0]["rate"] * (1 - cost.RESOLUTION), abs=0.1)
    assert found["capacity_rps"] == holds[1]["rate"] == held.metrics["target_rps"] and found["capacity_by"] == "server"

    held, found = cost.search(load, sustained(12_000))  # far below what the steps found: no hold keeps it
    holds = [s for s in found["steps"] if s.get("held")]
    assert len(holds) == cost.HOLDS and not any(h["passed"] for h in holds) and found["capacity_by"] == "hold"
    assert "hold" in flags.UNFOUND, "flagged capacity_unfound and left out, as an unfound capacity is"

    held, found = cost.search(load, measure_at)  # a hold that keeps the rate is the only one
    assert [s["passed"] for s in found["steps"] if s.get("held")] == [True]
