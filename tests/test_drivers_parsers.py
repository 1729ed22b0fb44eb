"""The h2load, JMeter and vegeta parsers on output captured from real runs (tests/captures/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchlab.errors import LoadError, UsageError
from benchlab.running.drivers import h2load, jmeter, latency, vegeta
from benchlab.running.drivers.base import error_kind
from benchlab.running.load import Load
from benchlab.running.servers import SCENARIOS
from benchlab.schema import METRICS

CAPTURES = Path(__file__).parent / "captures"
PERCENTILES = ("p50", "p75", "p90", "p99", "p999", "p9999")


def text(name: str) -> str:
    return (CAPTURES / name).read_text()


def assert_sane(metrics: dict) -> None:
    # a note where a tool has something to say; sent_rps and achieved_rps from an open loop
    assert set(METRICS) - {"note", "sent_rps", "achieved_rps"} <= set(metrics)
    assert metrics["requests"] > 0 and metrics["rps"] > 0 and metrics["elapsed_s"] > 0
    values = [metrics["lat_min"], *(metrics[p] for p in PERCENTILES), metrics["lat_max"]]
    assert values == sorted(values), values
    assert metrics["lat_min"] <= metrics["lat_mean"] <= metrics["lat_max"]


# --- latency ------------------------------------------------------------------------------------------

def test_percentiles_are_nearest_rank():
    seconds = [i / 1000 for i in range(1, 1001)]  # 1 ms .. 1000 ms
    s = latency.summary(seconds)
    assert s["p50"] == 0.5 and s["p99"] == 0.99 and s["p999"] == 0.999 and s["p9999"] == 1.0
    assert s["lat_min"] == 0.001 and s["lat_max"] == 1.0 and s["lat_mean"] == pytest.approx(0.5005)
    assert latency.summary([0.002])["lat_stdev"] == 0.0


# --- h2load -------------------------------------------------------------------------------------------

def test_h2load_counts_bytes_and_log_percentiles():
    m = h2load.parse(text("h2load-hello.out"), text("h2load-hello.log"))
    assert_sane(m)
    assert m["requests"] == 1000 and m["bytes"] == 186000 and m["bytes_per_request"] == 186
    assert m["errors_status"] == m["errors_connect"] == m["errors_timeout"] == 0
    assert 2.0e-3 <= m["lat_min"] and m["lat_max"] <= 111.5e-3  # the summary said 2.15 ms .. 111.49 ms
    assert m["lat_mean"] == pytest.approx(31.35e-3, rel=0.01)
    assert m["rps"] == pytest.approx(1000 / m["elapsed_s"])


def test_h2load_post():
    m = h2load.parse(text("h2load-echo.out"), text("h2load-echo.log"))
    assert_sane(m)
    assert m["requests"] == 100


def test_h2load_refused_everywhere_is_an_error_though_it_exits_0():
    with pytest.raises(LoadError, match="connection refused"):
        h2load.parse(text("h2load-refused.out"), "")


def test_h2load_incomplete_log_and_no_summary():
    with pytest.raises(LoadError, match="log has 10 rows for 1000"):
        h2load.parse(text("h2load-hello.out"), "\n".join(text("h2load-hello.log").splitlines()[:10]))
    with pytest.raises(LoadError, match="no 'requests"):
        h2load.parse("starting benchmark...\n", "")


def test_h2load_failed_requests_count_as_errors():
    out = text("h2load-hello.out").replace("1000 succeeded, 0 failed", "990 succeeded, 10 failed")
    m = h2load.parse(out, text("h2load-hello.log"))
    assert m["errors_status"] == 10


@pytest.mark.integration  # the argv names the tool's path: it needs the tool installed
def test_h2load_argv(tmp_path):
    invocation = h2load.H2load().command("http://127.0.0.1:8080", SCENARIOS["echo"],
                                         Load.count(users=8, loops=10, threads=2), phase="measure", workdir=tmp_path)
    argv = list(invocation.argv)
    assert invocation.files["log"] == tmp_path / "h2load-measure.log" and invocation.planned_requests == 80
    assert argv[1:8] == ["--h1", "-n", "80", "-c", "8", "-t", "2"]
    assert "-d" in argv and (tmp_path / "h2load-body.bin").read_bytes() == SCENARIOS["echo"].body
    assert "Content-Type: application/octet-stream" in argv and argv[-1] == "http://127.0.0.1:8080/echo"
    assert not any(a.startswith("--warm-up-time") for a in argv)


# --- JMeter -------------------------------------------------------------------------------------------

def test_jmeter_jtl():
    m = jmeter.parse(text("jmeter-hello.jtl"))
    assert_sane(m)
    assert m["requests"] == 500 and m["bytes_per_request"] == 186
    assert sum(m[f"errors_{k}"] for k in ("connect", "read", "write", "status", "timeout")) == 0


def test_jmeter_post_jtl():
    assert jmeter.parse(text("jmeter-echo.jtl"))["requests"] == 100


def test_jmeter_refused_is_an_error():
    with pytest.raises(LoadError, match="no good answer to 10 requests"):
        jmeter.parse(text("jmeter-refused.jtl"))


def test_jmeter_errors_by_kind():
    lines = text("jmeter-hello.jtl").splitlines()
    refused = text("jmeter-refused.jtl").splitlines()[1]
    timed_out = lines[2].replace(",200,OK,", ",Non HTTP response code: java.net.SocketTimeoutException,"
                                           "Non HTTP response message: Read timed out,").replace(",true,", ",false,")
    not_found = lines[3].replace(",200,OK,", ",404,Not Found,").replace(",true,", ",false,")
    m = jmeter.parse("\n".join([lines[0], lines[1], refused, timed_out, not_found]))
    assert (m["errors_connect"], m["errors_timeout"], m["errors_status"], m["requests"]) == (1, 1, 1, 4)


def test_jmeter_empty_or_foreign_jtl():
    with pytest.raises(LoadError, match="no rows"):
        jmeter.parse(text("jmeter-hello.jtl").splitlines()[0] + "\n")
    with pytest.raises(LoadError, match="lacks the columns"):
        jmeter.parse("a,b\n1,2\n")


def test_jmeter_plan_is_valid_and_carries_the_scenario(tmp_path):
    xml = jmeter.plan("http://127.0.0.1:8080", SCENARIOS["echo"], Load.count(users=100, loops=1000, ramp_up=5))
    path = tmp_path / "plan.jmx"
    path.write_text(xml)
    assert jmeter.check_plan(path) == path
    assert '<intProp name="ThreadGroup.num_threads">100</intProp>' in xml
    assert '<stringProp name="LoopController.loops">1000</stringProp>' in xml
    assert '<intProp name="ThreadGroup.ramp_time">5</intProp>' in xml
    assert "&quot;" not in xml and '"payload":"xxxx' in xml and ">POST<" in xml


def test_jmeter_refuses_a_bad_plan(tmp_path):
    for name, content, message in [
        ("not-xml.jmx", "threads=100", "not XML"),
        ("other.jmx", "<project/>", "not <jmeterTestPlan>"),
        ("empty.jmx", "<jmeterTestPlan><hashTree/></jmeterTestPlan>", "no thread group"),
    ]:
        (tmp_path / name).write_text(content)
        with pytest.raises(UsageError, match=message):
            jmeter.check_plan(tmp_path / name)
    with pytest.raises(UsageError, match="no JMeter plan"):
        jmeter.check_plan(tmp_path / "missing.jmx")


@pytest.mark.integration  # the argv names the tool's path: it needs the tool installed
def test_jmeter_checks_its_jtl_exists(tmp_path):
    driver = jmeter.JMeter()
    invocation = driver.command("http://127.0.0.1:9", SCENARIOS["hello"], Load.count(users=2, loops=3),
                                phase="measure", workdir=tmp_path)
    assert invocation.planned_requests == 6 and invocation.files["jtl"] == tmp_path / "jmeter-measure.jtl"
    with pytest.raises(LoadError, match="wrote no JTL"):
        driver.parse("", invocation)


# --- wrk's count mode ----------------------------------------------------------------------------------

@pytest.mark.integration  # the argv names the tool's path: it needs the tool installed
def test_wrk_count_argv_script_and_a_run_cut_short(tmp_path):
    from benchlab.running.drivers import wrk

    load = Load.count(users=8, loops=10, threads=3)
    invocation = wrk.Wrk().command("http://127.0.0.1:8080", SCENARIOS["hello"], load, phase="measure", workdir=tmp_path)
    argv = list(invocation.argv)
    assert argv[1:3] == ["-t3", "-c8"] and invocation.planned_requests == 80
    lua = invocation.files["script"].read_text()
    assert invocation.files["script"].name == "wrk-count.lua"
    assert "local planned, threads, made = 80, 3, 0" in lua and "wrk.thread:stop()" in lua and "done = function" in lua
    report = ('BENCHLAB_JSON {"requests":%d,"bytes":14720,"duration_us":1000000,"errors":{"connect":0,"read":0,'
              '"write":0,"status":0,"timeout":0},"latency_us":{"min":1,"mean":2,"stdev":1,"max":9},'
              '"percentiles_us":{"50":2,"75":2,"90":3,"99":5,"99.9":9,"99.99":9}}')
    assert wrk.Wrk().parse(report % 80, invocation)["requests"] == 80
    with pytest.raises(LoadError, match="answered 79 of the 80 requests"):
        wrk.Wrk().parse(report % 79, invocation)
    warm = wrk.Wrk().command("http://127.0.0.1:8080", SCENARIOS["hello"], Load.count(users=8, loops=10, warmup=2),
                             phase="warmup", workdir=tmp_path)
    assert warm.planned_requests is None and "-d2s" in warm.argv, "a count load warms for a time, as before"


# --- vegeta -------------------------------------------------------------------------------------------

def test_vegeta_report_and_results():
    m = vegeta.parse(text("vegeta-hello.json"), text("vegeta-hello.csv"), target_rps=200)
    assert_sane(m)
    assert m["requests"] == 400 and m["target_rps"] == 200 and m["rps"] == pytest.approx(400 / 1.995561292, abs=0.01)
    assert m["bytes"] == 28000 and "note" not in m
    # the answers over the attack and the wait for the last one beyond a typical answer (HttpArena's achieved rate):
    # the last came 2.27 ms after the attack, sooner than the median answer (8.2 ms), so the rate was kept
    assert m["achieved_rps"] == pytest.approx(400 / 1.995561292, abs=0.01)
    # vegeta's own JSON quantiles (a t-digest estimate) agree with the exact ones from each result.
    assert m["p50"] == pytest.approx(8.217891e-3, rel=0.1) and m["lat_max"] == pytest.approx(38.497979e-3)


def test_vegeta_achieved_rate_counts_only_the_wait_beyond_a_typical_answer():
    """A slow endpoint that keeps its rate is not short for its own latency; a server that fell behind, whose last
    answers came long after a typical one, is."""
    import json

    report, table = json.loads(text("vegeta-hello.json")), text("vegeta-hello.csv")
    rows = [line.split(",") for line in table.splitlines()]
    slow = "\n".join(",".join([r[0], r[1], str(50_000_000), *r[3:]]) for r in rows)  # every answer in 50 ms
    kept = vegeta.parse(json.dumps({**report, "wait": 50_400_000}), slow, target_rps=200)
    assert kept["p50"] == pytest.approx(0.05) and kept["achieved_rps"] == pytest.approx(400 / 1.995561292, rel=1e-3)
    behind = vegeta.parse(json.dumps({**report, "wait": 500_000_000}), slow, target_rps=200)  # 0.5 s to drain
    assert behind["achieved_rps"] == pytest.approx(400 / (1.995561292 + 0.45), rel=1e-3)
    assert behind["achieved_rps"] < 0.99 * 200 <= kept["achieved_rps"]


def test_vegeta_post():
    m = vegeta.parse(text("vegeta-echo.json"), text("vegeta-echo.csv"), target_rps=50)
    assert m["requests"] == 50 and m["errors_status"] == 0


def test_vegeta_unreached_rate_is_flagged():
    m = vegeta.parse(text("vegeta-hello.json"), text("vegeta-hello.csv"), target_rps=1000)
    assert "below 95%" in m["note"] and m["target_rps"] == 1000


def test_vegeta_timeouts_and_refusals():
    with pytest.raises(LoadError, match="no good answer to 20 requests .*deadline exceeded"):
        vegeta.parse(text("vegeta-timeout.json"), text("vegeta-timeout.csv"))
    with pytest.raises(LoadError, match="connection refused"):
        vegeta.parse(text("vegeta-refused.json"), text("vegeta-refused.csv"))
    assert error_kind(0, 'Get "x": context deadline exceeded (Client.Timeout exceeded)') == "timeout"
    assert error_kind(0, "dial tcp: connect: connection refused") == "connect"
    assert error_kind(503, "503 Service Unavailable") == "status"
    assert error_kind(200, "") is None
    # JMeter's texts, classed by the same words as vegeta's: a reset is a read, as wrk counts it
    assert error_kind(None, "Non HTTP response code: java.net.SocketException Connection reset") == "read"
    assert error_kind(None, "Non HTTP response code: org.apache.http.conn.HttpHostConnectException "
                            "Connect to 127.0.0.1:1 failed: Connection refused") == "connect"
    assert error_kind(None, "Non HTTP response code: java.net.SocketTimeoutException Read timed out") == "timeout"


def test_vegeta_mixed_results_count_errors_by_kind():
    good = text("vegeta-hello.csv").splitlines()
    bad = text("vegeta-timeout.csv").splitlines()[:3] + text("vegeta-refused.csv").splitlines()[:2]
    report = text("vegeta-hello.json").replace('"requests":400', '"requests":405')
    m = vegeta.parse(report, "\n".join(good + bad))
    assert (m["errors_timeout"], m["errors_connect"], m["requests"]) == (3, 2, 405)


@pytest.mark.integration  # the argv names vegeta's path: it needs vegeta installed (.ci/install-drivers.sh)
def test_vegeta_argv(tmp_path):
    driver = vegeta.Vegeta()
    load = Load.constant_rate(12.5, duration="3s", warmup="1s")
    invocation = driver.command("http://127.0.0.1:8080", SCENARIOS["echo"], load, phase="warmup", workdir=tmp_path)
    argv = list(invocation.argv)
    assert (invocation.phase, invocation.target_rps) == ("warmup", 12.5)
    assert argv[1:4] == ["attack", "-rate=12500/1000s", "-duration=1s"]
    assert argv[-1] == f"-output={tmp_path / 'vegeta-warmup.bin'}"
    targets = (tmp_path / "vegeta-targets.txt").read_text().splitlines()
    assert targets == ["POST http://127.0.0.1:8080/echo", "Content-Type: application/octet-stream",
                       f"@{tmp_path / 'vegeta-body.bin'}"]
    assert vegeta._rate_flag(500) == "500/1s"


def test_h2load_against_tomcat_keeps_the_run_and_says_statuses_are_unchecked():
    """Tomcat sends "HTTP/1.1 200 " with no reason phrase; h2load then counts every answer as failed."""
    from benchlab.running.drivers import h2load

    out = (CAPTURES / "h2load-tomcat.out").read_text()
    assert "0 succeeded, 40 failed" in out
    metrics = h2load.parse(out, (CAPTURES / "h2load-tomcat.log").read_text())
    assert metrics["requests"] == 40 and metrics["errors_status"] is None
    assert "reason phrase" in metrics["note"] and metrics["bytes_per_request"] == 184


# --- the driver protocol ------------------------------------------------------------------------------

@pytest.mark.integration  # the argv names the tool's path: it needs the tool installed
def test_drivers_keep_no_state_between_command_and_parse(tmp_path):
    """command() returns what parse() needs; the driver object itself is left as it was."""
    from benchlab.running import drivers

    loads = {"wrk": Load(connections=2, duration=1, warmup=1), "h2load": Load.count(users=2, loops=2, warmup=1),
             "vegeta": Load.constant_rate(10, duration=1, warmup=1)}
    for name, load in loads.items():
        driver = drivers.tool(name)
        assert isinstance(driver, drivers.Driver)
        driver.check(load)  # the base class's no-op, or the driver's own check
        invocation = driver.command("http://127.0.0.1:9", SCENARIOS["hello"], load, phase="warmup", workdir=tmp_path)
        assert isinstance(invocation, drivers.Invocation) and invocation.phase == "warmup"
        assert vars(driver) == {}, f"{name} stored {vars(driver)} between command() and parse()"


# --- h2load over HTTP/2: a timed closed loop, the protocol it negotiated ------------------------------

def test_h2load_over_h2_reads_its_log_and_the_protocol_it_negotiated(tmp_path):
    out = text("h2load-h2-jetty.out")  # Jetty over h2, 4 connections x 10 streams, 2 s (-D 2)
    m = h2load.parse(out, text("h2load-h2-jetty.log"))
    assert_sane(m)
    assert m["requests"] == 3191 and 1500 < m["rps"] < 1700, m["rps"]
    assert m["p99"] >= m["p50"] > 0 and m["errors_status"] == 0
    # 3,231 started and 3,191 done: the 40 in flight when the time ran out are no error (they were once stored as
    # errors_connect -40, and every such run read back as damaged)
    assert m["errors_connect"] == 0 and m["errors_read"] == 0
    assert h2load.negotiated(out, "h2") == "h2"
    with pytest.raises(LoadError, match="asked h2c, but h2load negotiated h2"):
        h2load.negotiated(out, "h2c")
    invocation = h2load.H2load().command("https://127.0.0.1:8443", SCENARIOS["hello"],
                                         Load(protocol="h2", streams=10, connections=4, duration=2, warmup=1),
                                         phase="measure", workdir=tmp_path)
    argv = list(invocation.argv)
    assert invocation.protocol == "h2" and invocation.planned_requests is None
    assert ["-D", "2", "-c", "4"] == argv[argv.index("-D"):argv.index("-D") + 4]
    assert ["-m", "10", "-w16", "-W16"] == argv[argv.index("-m"):argv.index("-m") + 4], "the protocol's windows"
    assert "--npn-list=h2" in argv and "--tls13-ciphers=TLS_AES_128_GCM_SHA256" in argv and "--h1" not in argv
    warm = h2load.H2load().command("http://127.0.0.1:8080", SCENARIOS["hello"],
                                   Load(protocol="h2c", streams=4, connections=2, duration=5, warmup=3),
                                   phase="warmup", workdir=tmp_path)
    assert ["-D", "3"] == list(warm.argv)[list(warm.argv).index("-D"):][:2] and "--npn-list=h2" not in warm.argv


def test_each_driver_speaks_its_protocols_and_says_which_to_use():
    from benchlab.running import drivers

    assert drivers.get(None, "duration", "h2c").name == "h2load"
    assert drivers.get(None, "duration", "https").name == "wrk"
    assert drivers.get(None, "rate", "h2").name == "vegeta"
    for driver, load in (("wrk", Load(protocol="h2")), ("jmeter", Load.count(2, 2, protocol="https")),
                         ("vegeta", Load.constant_rate(10, protocol="h2c", streams=2))):
        with pytest.raises(UsageError, match=r"cannot speak|sets no streams"):
            drivers.check_protocol(drivers.tool(driver), load)
    drivers.check_protocol(drivers.tool("h2load"), Load(protocol="h2c", streams=100))
    assert drivers.warmer(Load(protocol="h2", streams=2)).name == "h2load", "a JVM warms over the protocol it serves"


def test_vegeta_is_told_each_protocol(tmp_path, monkeypatch):
    monkeypatch.setattr(vegeta.Vegeta, "executable", lambda self: "vegeta")  # the argv only: no vegeta needed
    argvs = {p: vegeta.Vegeta().command("http://127.0.0.1:8080", SCENARIOS["hello"],
                                        Load.constant_rate(100, 1, protocol=p), phase="measure", workdir=tmp_path).argv
             for p in ("http1", "h2c", "h2", "https")}
    assert "-h2c" in argvs["h2c"] and "-insecure" in argvs["h2"] and "-http2=false" in argvs["https"]
    assert not {"-h2c", "-insecure", "-http2=false"} & set(argvs["http1"])
