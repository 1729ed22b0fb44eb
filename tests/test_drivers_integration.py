"""h2load, JMeter and vegeta against a real Spring Boot server, and the open model seeing what a closed one hides.

Nothing is mocked: real servers, real tools, a few seconds each. Most tests share one Jetty server that
the module starts (benchlab.run attaches to it through Server.from_url), so the suite pays for one JVM
start; one test goes the whole way, with benchlab starting its own server.
"""

from __future__ import annotations

import os
import signal
import threading

import pytest

import benchlab
from benchlab.errors import LoadError, ToolMissing, UsageError
from benchlab.running import backends, drivers, servers
from benchlab.running.backends.local import LocalBackend
from benchlab.running.drivers import jmeter
from benchlab.running.load import Load
from benchlab.running.servers import SCENARIOS

pytestmark = pytest.mark.integration

PERCENTILES = ("p50", "p75", "p90", "p99", "p999", "p9999")


def assert_real(run, driver: str) -> None:
    m = run.metrics
    assert run.status == "ok" and run.params["driver"] == driver
    assert run.metadata["driver"]["name"] == driver and run.metadata["driver"]["version"] not in (None, "unknown")
    assert m["requests"] > 0 and m["rps"] > 0 and m["bytes"] > 0
    values = [m["lat_min"], *(m[p] for p in PERCENTILES), m["lat_max"]]
    assert None not in values and values == sorted(values), values
    assert sum(m[f"errors_{k}"] for k in ("connect", "read", "write", "status", "timeout")) == 0


@pytest.fixture(scope="module")
def jetty(jars, tmp_path_factory):
    """A Spring Boot Jetty server on core 0, started once for the module and stopped by its pid."""
    log = tmp_path_factory.mktemp("jetty") / "server.log"
    launch = backends.Launch(run_id="drivers", port=backends.free_port(), cpus=(0,), log_path=log)
    instance = LocalBackend().start(servers.get("spring-jetty"), launch)
    yield instance
    instance.stop()


def attached(instance) -> benchlab.Server:
    return benchlab.Server.from_url(instance.url + "/hello", name="jetty")


# --- each driver, for real ----------------------------------------------------------------------------

def test_h2load_count_with_a_server_benchlab_starts(tmp_path, no_jvm_left):
    run = benchlab.run("spring-undertow", "hello", load="count", warmup="1s", users=16, loops=250, driver="h2load",
                       results_dir=tmp_path)
    assert_real(run, "h2load")
    assert run.metrics["requests"] == 4000 and run.params["users"] == 16 and run.params["loops"] == 250
    assert run.metrics["server_samples"] > 0 and run.metadata["server"]["server"] == "undertow"
    assert "h2load-measure.log" in run.files and "h2load.out" in run.files


def test_wrk_count_checks_every_status_on_tomcat(tmp_path):
    """h2load cannot read Tomcat's status lines (no reason phrase); wrk's count mode counts every 4xx."""
    missing = servers.Scenario("nope", "/nope", expect_status=404)
    run = benchlab.run("spring-tomcat", missing, load="count", warmup="0s", users=4, loops=50, results_dir=tmp_path)
    m = run.metrics
    assert run.params["driver"] == "wrk" and m["requests"] >= 200 and not m.get("note")
    assert m["errors_status"] == m["requests"], "every 404 under load is counted as an error"
    ok = benchlab.run("spring-tomcat", "hello", load="count", warmup="0s", users=4, loops=50, results_dir=tmp_path)
    assert ok.metrics["errors_status"] == 0 and ok.metrics["requests"] >= 200 and ok.metrics["rps"] > 0
    assert ok.metrics["elapsed_s"] < 30, "the count, not wrk's time limit, ended the run"
    assert "wrk-count.lua" in ok.files and ok.metadata["accept_queue"] == {
        "setting": "server.tomcat.accept-count", "value": 100, "source": "default"}
    assert ok.metadata["network"]["somaxconn"] == int(open("/proc/sys/net/core/somaxconn").read())


def test_h2load_post(jetty, tmp_path):
    run = benchlab.run(attached(jetty), SCENARIOS["echo"], load="count", warmup="1s", users=4, loops=100,
                       driver="h2load", results_dir=tmp_path)
    assert_real(run, "h2load")
    assert run.metrics["requests"] == 400


def test_jmeter_generated_plan_records_its_own_cpu(jetty, tmp_path):
    run = benchlab.run(attached(jetty), load="count", warmup="1s", users=10, loops=100, ramp_up=1, driver="jmeter",
                       results_dir=tmp_path)
    assert_real(run, "jmeter")
    assert run.metrics["requests"] == 1000
    assert run.metrics["load_samples"] > 0 and run.metrics["load_cpu_mean"] is not None
    assert {"jmeter-plan.jmx", "jmeter-measure.jtl", "jmeter-measure.log"} <= set(run.files)
    assert jmeter.check_plan(tmp_path / run.id / "jmeter-plan.jmx")


def test_jmeter_post(jetty, tmp_path):
    run = benchlab.run(attached(jetty), SCENARIOS["echo"], load="count", warmup="1s", users=2, loops=50,
                       driver="jmeter", results_dir=tmp_path)
    assert_real(run, "jmeter")
    assert run.metrics["requests"] == 100


def test_jmeter_runs_a_users_own_plan(jetty, tmp_path):
    # A plan of the user's own, reading the target and its size from the properties benchlab passes.
    xml = jmeter.plan("http://127.0.0.1:9", SCENARIOS["hello"], Load.count(users=1, loops=1))
    xml = (xml.replace('<intProp name="ThreadGroup.num_threads">1</intProp>',
                       '<stringProp name="ThreadGroup.num_threads">${__P(benchlab.users)}</stringProp>')
              .replace('<stringProp name="LoopController.loops">1</stringProp>',
                       '<stringProp name="LoopController.loops">${__P(benchlab.loops)}</stringProp>')
              .replace(">127.0.0.1<", ">${__P(benchlab.host)}<").replace(">9<", ">${__P(benchlab.port)}<"))
    plan = tmp_path / "mine.jmx"
    plan.write_text(xml)
    run = benchlab.run(attached(jetty), load="count", warmup="1s", users=3, loops=40, driver="jmeter", plan=str(plan),
                       results_dir=tmp_path)
    assert_real(run, "jmeter")
    assert run.metrics["requests"] == 120 and run.params["plan"] == str(plan)


def test_wrk_pipelines_its_depth_in_one_write(tmp_path):
    # A server that answers every request it finds in a read, and keeps the most requests one read held: wrk
    # writes 16 requests at once, so a read holds 16 (the kernel may split or join writes; 16 is what it gives
    # on loopback).
    import socket
    import threading

    most = [0]
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            while not stop.is_set():
                try:
                    data = conn.recv(65536)
                except OSError:
                    return
                if not data:
                    return
                count = data.count(b"GET /hello")
                most[0] = max(most[0], count)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok" * count)

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:  # closed at the test's end
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/hello"
    try:
        run = benchlab.run(benchlab.Server.from_url(url, name="counting"), connections=2, duration="1s",
                           warmup="1s", pipeline=16, results_dir=tmp_path)
    finally:
        stop.set()
        listener.close()
    assert run.status == "ok" and run.params["pipeline"] == 16 and run.metrics["requests"] >= 16
    assert most[0] == 16, f"the most requests one read held: {most[0]}"
    m = run.metrics  # read off wrk's recorded latencies: wrk's own percentiles of a pipelined run are 0
    assert all(m[p] > 0 for p in PERCENTILES) and [m[p] for p in PERCENTILES] == sorted(m[p] for p in PERCENTILES)


def _passive_opens() -> int:
    """The connections this machine's TCP has accepted so far (/proc/net/snmp, Tcp: PassiveOpens)."""
    rows = [line.split() for line in open("/proc/net/snmp") if line.startswith("Tcp:")]
    return int(rows[1][rows[0].index("PassiveOpens")])


def test_vegeta_without_keepalive_opens_a_connection_a_request(jetty, tmp_path):
    before = _passive_opens()
    # connections=4: the 1 s warm-up (wrk, keep-alive) opens 4 of the connections counted
    run = benchlab.run(attached(jetty), load="rate", rate=200, connections=4, duration="2s", warmup="1s",
                       keepalive=False, results_dir=tmp_path)
    opened = _passive_opens() - before
    assert_real(run, "vegeta")
    assert run.params["keepalive"] is False and run.metrics["requests"] == 400
    assert opened >= 400, f"{opened} connections accepted for 400 requests: each request had its own"
    before = _passive_opens()
    kept = benchlab.run(attached(jetty), load="rate", rate=200, connections=4, duration="2s", warmup="1s",
                        results_dir=tmp_path)
    assert "keepalive" not in kept.params and _passive_opens() - before < 200, "keep-alive reuses connections"


def test_wrk_without_keepalive_opens_a_connection_a_request_and_so_does_its_warm_up(jetty, tmp_path):
    # a run that opens a connection a request is warmed the same way: the accept and close paths are code the
    # JIT compiles, and a keep-alive warm-up would leave them cold for the measured window
    before = _passive_opens()
    run = benchlab.run(attached(jetty), connections=4, duration="2s", warmup="1s", keepalive=False,
                       results_dir=tmp_path)
    opened = _passive_opens() - before
    assert_real(run, "wrk")
    assert run.params["keepalive"] is False
    # each measured request had its own connection, and the 1 s warm-up's requests theirs (hundreds more)
    assert opened > run.metrics["requests"] + 100, f"{opened} connections for {run.metrics['requests']} requests"


def test_vegeta_keeps_its_rate_against_a_slow_server_and_says_so_honestly(jetty, tmp_path):
    # Every answer takes 400 ms: 200 requests are sent in 2 s, on schedule, and all answered 0.4 s later.
    # The rate was kept (vegeta's own "throughput", which adds that wait, said 83/s and raised a false
    # shortfall); the slowness shows where it belongs, in the latency.
    run = benchlab.run(attached(jetty), benchlab.Scenario("slow", "/sleep?ms=400"), load="rate", rate=100,
                       duration="2s", warmup="0s", results_dir=tmp_path)
    m = run.metrics
    assert m["target_rps"] == 100 and m["requests"] == 200
    assert m["sent_rps"] == pytest.approx(100, rel=0.05) and m["rps"] == pytest.approx(100, rel=0.05)
    assert "note" not in m or not m["note"], "no shortfall: the rate was sent"
    assert m["p50"] >= 0.4


# --- bad input ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("rate", [0, -5])
def test_rate_must_be_positive(rate, tmp_path):
    with pytest.raises(UsageError, match="rate must be more than 0"):
        benchlab.run("spring-jetty", load="rate", rate=rate, results_dir=tmp_path)


@pytest.mark.parametrize("users, loops", [(0, 10), (10, 0)])
def test_count_needs_requests(users, loops, tmp_path):
    with pytest.raises(UsageError, match="whole number of 1 or more"):
        benchlab.run("spring-jetty", load="count", users=users, loops=loops, results_dir=tmp_path)


def test_an_invalid_plan_is_refused(jetty, tmp_path):
    plan = tmp_path / "broken.jmx"
    plan.write_text("<jmeterTestPlan><hashTree>")
    with pytest.raises(UsageError, match="not a JMeter plan"):
        benchlab.run(attached(jetty), load="count", users=2, loops=2, driver="jmeter", plan=str(plan),
                     results_dir=tmp_path)


def test_a_jmeter_run_that_writes_no_jtl_is_an_error(tmp_path):
    # A real plan with a thread group but no sampler: JMeter runs it, exits 0 and records nothing.
    xml = jmeter.plan("http://127.0.0.1:9", SCENARIOS["hello"], Load.count(users=1, loops=1))
    start, end = xml.index("<HTTPSamplerProxy"), xml.index("</HTTPSamplerProxy>") + len("</HTTPSamplerProxy>")
    plan = tmp_path / "nothing.jmx"
    plan.write_text(xml[:start] + xml[end:].replace("<hashTree/>", "", 1))
    load = Load.count(users=1, loops=1, plan=str(plan))
    with pytest.raises(LoadError, match="no JTL|no rows"):
        drivers.execute(drivers.tool("jmeter"), "http://127.0.0.1:9", SCENARIOS["hello"], load, cpus=(1,),
                        workdir=tmp_path / "run")


@pytest.mark.parametrize("name, install", [("vegeta", "go install github.com/tsenart/vegeta"),
                                           ("jmeter", "install-drivers.sh"),
                                           ("h2load", "apt-get install nghttp2-client")])
def test_a_missing_tool_names_its_install(name, install, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))        # no tool on PATH
    monkeypatch.setenv("BENCHLAB_HOME", str(tmp_path))  # and no .tools beside it
    options = {"vegeta": dict(load="rate", rate=10), "jmeter": dict(load="count", users=1, loops=1, driver="jmeter"),
               "h2load": dict(load="count", users=1, loops=1, driver="h2load")}[name]
    with pytest.raises(ToolMissing, match=install.replace(".", r"\.")):
        benchlab.run(benchlab.Server.from_url("http://127.0.0.1:9/hello"), results_dir=tmp_path, **options)


# --- coordinated omission -------------------------------------------------------------------------------

def stalled(pid: int, *, after: float, pause: float) -> threading.Thread:
    """A timer thread that stops the server (SIGSTOP) ``after`` seconds, for ``pause`` seconds."""

    def stall() -> None:
        threading.Event().wait(after)
        os.kill(pid, signal.SIGSTOP)
        try:
            threading.Event().wait(pause)
        finally:
            os.kill(pid, signal.SIGCONT)

    thread = threading.Thread(target=stall, daemon=True)
    thread.start()
    return thread


def test_the_open_model_sees_a_stall_the_closed_loop_hides(jetty, tmp_path):
    """A one-second SIGSTOP of the server, mid-run, under a closed loop (h2load) and an open one (vegeta).

    h2load is the closed loop because its log holds every request's own latency. (Debian's wrk 4.1 is
    no clean closed loop here: it adds latency samples of its own for the requests a stall kept it from
    sending, so its p99 shows much of the stall too.)
    """
    pid = jetty.process.pid
    server = attached(jetty)
    # Size the closed loop to last about 3 s on this machine, so the stall at 1 s falls inside it.
    probe = benchlab.run(server, load="count", users=10, loops=500, warmup="3s", driver="h2load", results_dir=tmp_path)
    loops = max(300, round(probe.metrics["rps"] * 3 / 10))  # 3000 requests or more: 10 stalled are < 1%
    try:
        timer = stalled(pid, after=1.0, pause=1.0)
        closed = benchlab.run(server, load="count", users=10, loops=loops, warmup="0s", driver="h2load",
                              results_dir=tmp_path)
        timer.join()
        timer = stalled(pid, after=1.0, pause=1.0)
        open_ = benchlab.run(server, load="rate", rate=200, duration="3s", warmup="0s", results_dir=tmp_path)
        timer.join()
    finally:
        os.kill(pid, signal.SIGCONT)
    c, o = closed.metrics, open_.metrics
    print(f"closed loop (h2load, 10 users): p99 {c['p99'] * 1000:.1f} ms, max {c['lat_max'] * 1000:.0f} ms, "
          f"{c['requests']} requests in {c['elapsed_s']:.1f} s; open loop (vegeta, 200/s): "
          f"p99 {o['p99'] * 1000:.1f} ms, max {o['lat_max'] * 1000:.0f} ms, {o['requests']} requests")
    # Both saw the one-second stall ...
    assert c["elapsed_s"] > 2.0 and c["lat_max"] > 0.8 and o["lat_max"] > 0.8
    # ... but the closed loop stopped sending during it, so only its 10 in-flight requests waited: its p99
    # stays low. The open loop kept sending 200/s, so a third of its requests waited: its p99 is the stall.
    assert o["p99"] > 0.6
    assert c["p99"] < o["p99"] / 3


# --- doctor ---------------------------------------------------------------------------------------------

def test_doctor_lists_every_driver_and_runtime(capsys):
    from benchlab.cli import main
    from benchlab.running.doctor import doctor

    rows = {row["tool"]: row for row in doctor()}
    assert list(rows) == ["wrk", "h2load", "jmeter", "vegeta", "java", "mvn", "docker", "nginx", "go", "async-profiler"]
    for name in ("wrk", "h2load", "jmeter", "vegeta", "java", "mvn", "nginx", "go", "async-profiler"):
        assert rows[name]["installed"] and rows[name]["version"] not in (None, "unknown"), rows[name]
    assert rows["jmeter"]["version"].startswith("Apache JMeter 5.6")
    assert rows["vegeta"]["version"] == "vegeta v12.13.0" and rows["vegeta"]["models"] == ["rate"]
    assert main(["doctor"]) == 0
    assert "h2load" in capsys.readouterr().out


def test_doctor_says_how_to_install_what_is_missing(tmp_path, monkeypatch):
    from benchlab.running.doctor import doctor

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("BENCHLAB_HOME", str(tmp_path))
    rows = {row["tool"]: row for row in doctor()}
    assert not any(row["installed"] for row in rows.values())
    assert "go install" in rows["vegeta"]["install"] and "install-drivers.sh" in rows["jmeter"]["install"]
    assert "nghttp2-client" in rows["h2load"]["install"] and "openjdk-17" in rows["java"]["install"]
    assert "install-drivers.sh" in rows["async-profiler"]["install"]
