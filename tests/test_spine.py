"""run() end to end: real Spring Boot servers, real wrk, real processes (integration tests)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

import benchlab
from benchlab.errors import ServerError, ToolMissing, UsageError, VerifyError

from .conftest import benchlab_jvms

pytestmark = pytest.mark.integration

SHORT = dict(connections=16, duration="2s", warmup="1s")


@pytest.mark.parametrize("server, impl, version", [
    ("spring-tomcat", "tomcat", "10.1."), ("spring-jetty", "jetty", "12.0."), ("spring-undertow", "undertow", "2.3."),
])
def test_each_server_under_real_wrk(jars, tmp_path, no_jvm_left, server, impl, version):
    run = benchlab.run(server, "hello", results_dir=tmp_path, **SHORT)
    row = run.to_frame().iloc[0]
    assert row["status"] == "ok" and row["requests"] > 0 and row["rps"] > 0
    percentiles = [row[p] for p in ("p50", "p75", "p90", "p99", "p999", "p9999")]
    assert all(p > 0 for p in percentiles) and percentiles == sorted(percentiles)
    assert row["server_impl"] == impl and row["server_version"].startswith(version)
    assert row["errors_total"] == 0
    assert row["server_samples"] >= 2 and row["server_cpu_mean"] > 0 and row["server_rss_max"] > 50e6
    assert row["load_samples"] >= 2 and row["load_cpu_mean"] is not None
    assert row["startup_ms"] > 0
    directory = tmp_path / run.id
    assert {"run.json", "server.log", "wrk.out", "wrk.lua"} <= {p.name for p in directory.iterdir()}
    assert "Started BenchApplication" in (directory / "server.log").read_text()
    meta = run.metadata
    assert meta["cpu"]["model"] and meta["system"]["kernel"] and meta["java"]["version"]
    assert meta["server"]["spring_boot_version"].startswith("3.5.")
    assert meta["driver"]["version"].startswith("wrk")
    assert meta["benchlab"]["version"] == benchlab.__version__
    assert run.params["server_cpus"] != run.params["load_cpus"] or len(os.sched_getaffinity(0)) == 1


def test_hello_is_184_bytes_on_tomcat(jars, tmp_path):
    run = benchlab.run("spring-tomcat", "hello", results_dir=tmp_path, **SHORT)
    # wrk counts the bytes of responses still in flight when it stops, so allow a fraction of a byte.
    assert run.metrics["bytes_per_request"] == pytest.approx(184, abs=0.5)


@pytest.mark.parametrize("scenario", ["json", "reflect", "sleep", "echo"])
def test_every_endpoint_verifies(jars, tmp_path, scenario):
    run = benchlab.run("spring-undertow", scenario, results_dir=tmp_path, connections=4, duration="1s", warmup=0)
    assert run.metrics["requests"] > 0 and run.metrics["errors_status"] == 0


def test_a_bad_jvm_option_is_one_clear_error(jars, tmp_path, no_jvm_left):
    with pytest.raises(ServerError, match="bad JVM option") as info:
        benchlab.run("spring-jetty", results_dir=tmp_path, jvm_opts=["-XX:+NoSuchOption"], **SHORT)
    assert "Unrecognized VM option" in str(info.value)


def test_server_that_exits_during_start_shows_its_log(jars, tmp_path, no_jvm_left):
    with pytest.raises(ServerError, match="exited during start") as info:
        benchlab.run("spring-tomcat", results_dir=tmp_path, jvm_opts=["-Dserver.port=x", "-Xmx1m"], **SHORT)
    assert "last lines of" in str(info.value)


def test_port_in_use(jars, tmp_path, no_jvm_left):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(UsageError, match=f"port {port} on 127.0.0.1 is in use"):
            benchlab.run("spring-tomcat", results_dir=tmp_path, port=port, **SHORT)


def test_non_200_at_verify_names_what_came_back(tmp_path):
    server = benchlab.Server.from_command(
        [sys.executable, "-m", "http.server", "{port}", "--bind", "127.0.0.1"], path="/missing", name="py-http")
    with pytest.raises(VerifyError, match="status 404, expected 200; got 404"):
        benchlab.run(server, results_dir=tmp_path, **SHORT)


def test_custom_command_server(tmp_path):
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "index.txt").write_text("hi\n")
    server = benchlab.Server.from_command(
        [sys.executable, "-m", "http.server", "{port}", "--bind", "127.0.0.1", "--directory", str(tmp_path / "www")],
        path="/index.txt", name="py-http")
    run = benchlab.run(server, results_dir=tmp_path / "results", connections=2, duration="1s", warmup=0)
    assert run.metrics["requests"] > 0 and run.params["server"] == "py-http"
    assert run.metrics["server_cpu_mean"] is not None


def test_already_running_server_from_url(tmp_path):
    with subprocess.Popen([sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        try:
            line = proc.stdout.readline()
            port = int(line.split("port ")[1].split()[0])
            run = benchlab.run(f"http://127.0.0.1:{port}/", results_dir=tmp_path, connections=2, duration="1s",
                               warmup=0)
            assert run.metrics["requests"] > 0 and run.metrics["startup_ms"] is None
        finally:
            proc.terminate()
            proc.wait(10)


def test_missing_tools_say_how_to_install(jars, tmp_path, monkeypatch):
    with pytest.raises(ToolMissing, match="apt-get install openjdk"):
        benchlab.run("spring-tomcat", results_dir=tmp_path, java="/nonexistent/java", **SHORT)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolMissing, match="apt-get install wrk"):
        benchlab.run("spring-tomcat", results_dir=tmp_path, **SHORT)


def test_wrk_against_a_closed_port_is_a_clear_error(tmp_path):
    from benchlab.errors import LoadError
    from benchlab.running.drivers import execute, get
    from benchlab.running.load import Load
    from benchlab.running.servers import SCENARIOS

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(LoadError, match="Connection refused|could not connect"):
        execute(get("wrk"), f"http://127.0.0.1:{port}", SCENARIOS["hello"], Load(connections=1, duration=1),
                cpus=None, workdir=tmp_path)


def test_keyboard_interrupt_mid_run_leaves_no_jvm(jars, tmp_path, no_jvm_left):
    """A Ctrl-C during the measure phase stops the server and wrk before the exception leaves run()."""
    main = threading.main_thread().ident

    def interrupt_when_measuring():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if list(tmp_path.rglob("wrk.lua")) and benchlab_jvms():
                time.sleep(1.0)
                signal.pthread_kill(main, signal.SIGINT)
                return
            time.sleep(0.05)

    threading.Thread(target=interrupt_when_measuring, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        benchlab.run("spring-undertow", results_dir=tmp_path, connections=8, duration="20s", warmup=0)
    assert not list(tmp_path.rglob("run.json")), "an interrupted run is not a result"


def test_cli_run_prints_a_summary_and_bad_input_exits_2(jars, tmp_path):
    done = subprocess.run([sys.executable, "-m", "benchlab", "run", "--server", "spring-jetty", "--duration", "1s",
                           "--warmup", "0", "--connections", "8", "--results-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "requests/s" in done.stdout and "p99" in done.stdout and "startup" in done.stdout
    for argv, message in ((["--server", "lighttpd"], "unknown server"), (["--duration", "30x"], "bad duration"),
                          (["--connections", "2", "--threads", "4"], "connections (2) must be at least threads")):
        bad = subprocess.run([sys.executable, "-m", "benchlab", "run", *argv], capture_output=True, text=True,
                             timeout=60)
        assert bad.returncode == 2
        assert bad.stderr.startswith(f"benchlab: error: {message}") and "Traceback" not in bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1


def test_build_skips_when_nothing_changed(jars):
    outcome = benchlab.build()
    assert outcome["built"] is False and all(p.exists() for p in outcome["jars"].values())


def test_bad_inputs_start_nothing(tmp_path, no_jvm_left):
    with pytest.raises(UsageError, match="unknown scenario"):
        benchlab.run("spring-tomcat", "nope", results_dir=tmp_path)
    with pytest.raises(UsageError, match="server_cpus asks for core"):
        benchlab.run("spring-tomcat", server_cpus="64-65", results_dir=tmp_path)
    assert not list(tmp_path.iterdir())
