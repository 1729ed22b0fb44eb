"""The wrk driver's parsers, on captured output (unit tests: no process is started)."""

from __future__ import annotations

import pytest

from benchlab.errors import LoadError, UsageError
from benchlab.running.drivers import wrk
from benchlab.running.servers import SCENARIOS


def test_lua_json_report(capture):
    m = wrk.parse(capture("wrk_lua_tomcat.out"))
    assert m["requests"] == 8375
    assert m["bytes"] == 1542273
    assert m["elapsed_s"] == pytest.approx(5.013149)
    assert m["rps"] == pytest.approx(8375 / 5.013149)
    assert m["bytes_per_request"] == pytest.approx(1542273 / 8375)
    assert m["lat_min"] == pytest.approx(269e-6)
    assert m["p50"] == pytest.approx(0.022176)
    assert m["p999"] == pytest.approx(0.607376)
    assert m["p9999"] == pytest.approx(0.761032)
    ordered = [m[k] for k in ("p50", "p75", "p90", "p99", "p999", "p9999")]
    assert ordered == sorted(ordered)
    assert all(m[f"errors_{k}"] == 0 for k in ("connect", "read", "write", "status", "timeout"))


def test_text_report_real(capture):
    m = wrk.parse_text(capture("wrk_text_jetty.txt"))
    assert m["requests"] == 872
    assert m["elapsed_s"] == pytest.approx(3.10)
    assert m["bytes"] == int(158.39 * 1024)
    assert m["rps"] == pytest.approx(281.19)
    assert m["lat_mean"] == pytest.approx(0.17573)
    assert m["lat_max"] == pytest.approx(0.69679)
    assert m["p50"] == pytest.approx(0.16413)
    assert m["p99"] == pytest.approx(0.47911)
    assert m["p999"] is None and m["lat_min"] is None
    assert m["errors_timeout"] == 0 and m["errors_status"] == 0


def test_text_report_units_suffixes_and_errors(capture):
    m = wrk.parse_text(capture("wrk_text_constructed_large.txt"))
    assert m["requests"] == 5161384
    assert m["bytes"] == int(1.20 * 1024**3)
    assert m["rps"] == pytest.approx(171473.01)
    assert m["lat_max"] == pytest.approx(1.02)          # seconds
    assert m["p75"] == pytest.approx(850e-6)            # microseconds
    assert m["p99"] == pytest.approx(1.20)
    assert (m["errors_read"], m["errors_write"], m["errors_timeout"], m["errors_status"]) == (12, 3, 7, 5)


def test_count_suffixes():
    assert wrk._count("43.21k") == pytest.approx(43210)
    assert wrk._count("1.5M") == pytest.approx(1.5e6)
    assert wrk._size("2.5GB") == 2.5 * 1024**3
    assert wrk._time("120.00us") == pytest.approx(120e-6)


def test_no_report_is_an_error():
    with pytest.raises(LoadError, match="no report"):
        wrk.parse("")
    with pytest.raises(LoadError, match="not a wrk report"):
        wrk.parse_text("hello")


def test_script_carries_method_body_and_reporter():
    lua = wrk.script(SCENARIOS["echo"])
    assert 'wrk.method = "POST"' in lua
    assert "wrk.body = " in lua and "payload" in lua
    assert 'wrk.headers["Content-Type"] = "application/octet-stream"' in lua
    assert "done = function(summary, latency, requests)" in lua
    assert "wrk.method" not in wrk.script(SCENARIOS["hello"])


def test_a_pipelined_script_sends_its_depth_in_one_write_and_the_priming_does_not():
    from benchlab.running import warmup
    from benchlab.running.load import Load

    lua = wrk.script(SCENARIOS["hello"], pipeline=16)
    assert "for i = 1, 16 do batch[i] = wrk.format() end" in lua
    assert "request = function() return benchlab_batch end" in lua
    assert lua.index("benchlab_batch") < lua.index("done = function")
    assert "benchlab_batch" not in wrk.script(SCENARIOS["hello"])
    load = Load(connections=200, duration=10, pipeline=16)
    assert warmup._warming_load(load, 5.0).pipeline == 16, "the run's own load warms as it measures"
    assert warmup._warming_load(load, 5.0, connections=16).pipeline == 1, "a lighter priming load does not pipeline"


@pytest.mark.parametrize("options, message", [
    ({"pipeline": 0}, "pipeline must be a whole number of 1 or more, not 0"),
    ({"model": "rate", "rate": 100.0, "pipeline": 4}, "pipeline=4 pipelines a timed closed loop"),
])
def test_pipeline_is_checked_where_the_load_is_built(options, message):
    from benchlab.running.load import Load

    with pytest.raises(UsageError, match=message):
        Load(**options)


@pytest.mark.integration  # the argv names the tool's path: it needs the tool installed
def test_argv(tmp_path):
    from benchlab.running.load import Load

    argv = list(wrk.Wrk().command("http://127.0.0.1:9", SCENARIOS["hello"],
                                  Load(connections=200, threads=4, duration=30), phase="measure",
                                  workdir=tmp_path).argv)
    assert argv[1:6] == ["-t4", "-c200", "-d30s", "--timeout=10s", "--latency"]
    assert argv[-1] == "http://127.0.0.1:9/hello"
