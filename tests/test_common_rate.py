"""The common rate of ``rates="auto"``: its lowering on a load tool with a known limit, its file, its words, and the
option at each door (fast; the real pilot, with real servers and vegeta, is in test_cost.py)."""

from __future__ import annotations

import json

import pytest

from benchlab import cli
from benchlab.analysis.cost import offered
from benchlab.errors import ResultsError
from benchlab.report import _check_option
from benchlab.running import common
from benchlab.store.results import Run


def tool(most: float, *, busy: float = 50.0, cost_us: float = 20.0):
    """A load tool that sends at most ``most`` req/s with ``busy`` % of its core, to a server that keeps up and spends
    ``cost_us`` µs of its one core a request; returns measure_at and the rates it was asked."""
    asked = []

    def measure_at(rate: float) -> dict:
        asked.append(rate)
        sent = min(rate, most)
        return {"target_rps": rate, "sent_rps": sent, "achieved_rps": sent, "p99": 0.002, "requests": int(sent),
                "load_cpu_mean": busy, "server_cpu_s": 5.0 * sent * cost_us * 1e-6, "elapsed_s": 5.0}
    return measure_at, asked


def test_a_rate_every_server_keeps_is_tried_once():
    a, asked_a = tool(12_000)
    b, asked_b = tool(12_000, cost_us=50.0)
    tries = common.tried({"a": a, "b": b}, 10_000)
    assert asked_a == asked_b == [10_000] and [t["passed"] for t in tries] == [True]
    assert tries[0]["servers"]["b"]["busy"] == 0.5


def test_a_rate_the_tool_falls_short_of_is_lowered_to_nine_tenths_of_what_it_sent():
    measure_at, asked = tool(10_000)
    tries = common.tried({"a": measure_at}, 18_000)
    assert asked == [18_000, 9_000] and [t["passed"] for t in tries] == [False, True]
    assert tries[0]["why"] == "a load tool sent 56%" and tries[0]["lowered_by"] == "load tool"


def test_a_server_that_falls_behind_lowers_the_rate_and_each_servers_busy_share_is_kept():
    cheap, _ = tool(1e9, cost_us=30.0)

    def behind(rate: float) -> dict:  # keeps at most 12,000 req/s: answers the rest late
        return {**cheap(rate), "achieved_rps": min(rate, 12_000.0)}
    tries = common.tried({"cheap": cheap, "behind": behind}, 20_000)
    assert [t["rate"] for t in tries] == [20_000.0, 18_000.0, 16_200.0] and not any(t["passed"] for t in tries)
    assert tries[0]["why"] == "behind kept 60%" and tries[0]["servers"]["cheap"]["busy"] == pytest.approx(0.6)


def test_a_tool_out_of_cpu_is_lowered_even_when_it_sent_everything():
    measure_at, asked = tool(1e9, busy=99.0)
    tries = common.tried({"a": measure_at}, 10_000)
    assert len(tries) == common.TRIES and not any(t["passed"] for t in tries)
    assert asked == [10_000, 9_000, 8_100] and tries[0]["why"] == "a load tool busy 99%"


def test_what_was_found_is_read_back_and_a_damaged_file_names_itself(tmp_path):
    assert common.found(tmp_path) is None
    (tmp_path / common.FILE).write_text(json.dumps({"rate": 9000.0, "by": "load tool"}))
    assert common.found(tmp_path)["rate"] == 9000.0
    (tmp_path / common.FILE).write_text('{"by": "servers"}')
    with pytest.raises(ResultsError, match=f"{tmp_path / common.FILE} is damaged.*remove it"):
        common.found(tmp_path)


def test_each_window_says_the_common_rate_it_was_offered():
    found = {"rate": 12000.0, "by": "closed loop", "share": 0.6, "slowest": "spring-tomcat",
             "closed": {"spring-tomcat": 20000.0, "spring-undertow": 30000.0}, "connections": 16}
    plain = Run(id="a", params={"server": "spring-tomcat"}, metrics={"rps": 1.0}, metadata={})
    assert offered([plain]) is None
    said = offered([plain, Run(id="b", params={}, metrics={"rps": 1.0}, metadata={"common_rate": found})])
    assert said == ("12,000 req/s offered to every server: 60% of spring-tomcat's 20,000 req/s in a closed loop at "
                    "16 connections")


def test_auto_reaches_the_function_the_command_line_and_the_notebook():
    args = cli.build_parser().parse_args(["compare", "--load", "rate", "--rates", "auto"])
    assert cli._given(args, "compare") == {"load": "rate", "rates": "auto"}
    _check_option("rates", "auto")  # the notebook's check takes it
    with pytest.raises(ValueError, match="rate must be more than 0"):
        _check_option("rates", [0])


def test_the_server_is_judged_while_the_load_ran_not_through_the_tools_report():
    from benchlab.running.monitor import Monitor, Sample

    monitor = Monitor()
    monitor.samples = [Sample(t / 4, "server", 85.0 if t < 20 else 0.0, 1.0, 0) for t in range(31)]
    monitor.samples += [Sample(t / 4, "load", 80.0, 1.0, t) for t in range(20)]  # vegeta's attack ends at 4.75 s
    summary = monitor.summary()
    assert summary["server_cpu_mean"] == 85.0 and summary["server_samples"] == 20
