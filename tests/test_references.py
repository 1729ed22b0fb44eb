"""The native references (nginx, go-nethttp) as built-in servers, and custom servers on a fixed port: names,
scenarios, refusals, nginx's configuration, the port probe and a stopped server's whole process tree (fast tier:
sockets and a shell, no server)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

import benchlab
from benchlab.errors import ServerError, ToolMissing, UsageError
from benchlab.running import backends, natives, process, servers
from benchlab.running.matrix import matrix
from benchlab.running.options import Comparison, RunOptions
from benchlab.running.spec import prepare

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", ["nginx", "go-nethttp"])
def test_a_reference_is_built_in_and_serves_the_scenarios_with_their_bodies(name):
    server = servers.get(name)
    assert name in servers.BUILTINS and server.builtin and server.reference and not server.jvm
    assert server.name == name and server.image == f"benchlab/{name}"
    for scenario in ("hello", "json", "sleep", "sleep:50", "echo"):
        assert server.scenario(scenario) == servers.scenario(scenario)
    assert server.scenario(None).expect_body == servers.HELLO_BODY
    with pytest.raises(UsageError, match=f"reflect is Java-only .*: {name} serves hello, json, sleep"):
        server.scenario("reflect")


@pytest.mark.parametrize("name", ["nginx", "go-nethttp"])
def test_a_reference_takes_no_jvm_option_and_no_setting(name):
    with pytest.raises(UsageError, match=f"jvm_opts apply to the built-in Spring servers, not to {name}"):
        prepare(name, None, RunOptions(jvm_opts=("-Xmx64m",)), tools=False)
    with pytest.raises(UsageError, match=f"settings such as virtual_threads apply to the built-in Spring servers, "
                                         f"not to {name}"):
        matrix(Comparison.of(servers=[name], factors={"virtual_threads": [False, True]}))
    with pytest.raises(UsageError, match=f"{name} is not a JVM: settings such as \\+vt"):
        servers.get(f"{name}+vt")


def test_nginx_is_configured_for_the_fork_in_its_folder():
    text = natives.nginx_config(port=18080, address="127.0.0.1", workers=3, folder="/runs/a b/", echo_module="/m/e.so")
    assert "worker_processes 3;" in text and "listen 127.0.0.1:18080;" in text and "daemon off;" in text
    assert 'pid "/runs/a b/nginx.pid";' in text and "access_log off;" in text and 'load_module "/m/e.so";' in text
    assert servers.HELLO_BODY.decode() in text and servers.JSON_BODY.decode() in text
    assert natives.nginx_argv("/runs/a b") == ["nginx", "-p", "/runs/a b/", "-c", "/runs/a b/nginx.conf", "-e",
                                               "stderr"]
    server = servers.get("nginx")
    if shutil.which("nginx"):
        files = server.files(18080, address="127.0.0.1", cpus=(0, 1), folder="/x")
        assert list(files) == ["nginx.conf"] and "worker_processes 2;" in files["nginx.conf"]


def test_the_go_server_listens_where_it_is_told():
    server = servers.get("go-nethttp")
    assert server.argv(18080, address="127.0.0.1") == [str(natives.go_binary()), "-addr", "127.0.0.1:18080"]
    assert server.container_argv(18080, address="127.0.0.1", folder="/bench") == ["/go-nethttp", "-addr",
                                                                              "127.0.0.1:18080"]
    assert server.files(18080, address="127.0.0.1", cpus=(0,), folder="/x") == {}


def test_no_go_toolchain_is_refused_in_one_line_naming_the_install(tmp_path, monkeypatch):
    # A checkout whose Go server was never built, and no Go toolchain: refused before anything starts.
    shutil.copytree(ROOT / "servers" / "go", tmp_path / "servers" / "go", ignore=shutil.ignore_patterns("target"))
    (tmp_path / "servers" / "pom.xml").write_text("<project/>")
    monkeypatch.setenv("BENCHLAB_HOME", str(tmp_path))
    monkeypatch.setenv("GO", "/nonexistent/go")
    with pytest.raises(ToolMissing, match="apt-get install golang-go") as info:
        benchlab.run("go-nethttp", results_dir=tmp_path / "results", duration="1s", warmup=0)
    assert "\n" not in str(info.value) and not (tmp_path / "results").exists()


@pytest.mark.skipif(not shutil.which("nginx") or not shutil.which("wrk"), reason="nginx or wrk is not installed")
def test_no_nginx_on_path_is_refused_in_one_line_naming_the_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", os.pathsep.join(str(Path(shutil.which(t)).parent) for t in ("wrk", "taskset")))
    assert not shutil.which("nginx"), "nginx lives beside wrk here: this test cannot hide it"
    with pytest.raises(ToolMissing, match="nginx is not installed or not on PATH: apt-get install nginx "
                                          "libnginx-mod-http-echo") as info:
        benchlab.compare(["spring-undertow", "nginx"], results_dir=tmp_path / "results", progress=False)
    assert "\n" not in str(info.value) and not (tmp_path / "results").exists()


def test_without_scenarios_a_custom_server_is_measured_at_its_own_path_in_the_one_cell():
    mine = benchlab.Server.from_command(["./srv", "{port}"], path="/plain", name="mine")
    specs = [spec for _, spec in matrix(Comparison.of(servers=["spring-undertow", "nginx", mine], repeats=1))]
    assert [(s.server.name, s.scenario.name, s.scenario.path) for s in specs] == [
        ("spring-undertow", "hello", "/hello"), ("nginx", "hello", "/hello"), ("mine", "hello", "/plain")]
    assert len({s.params()["scenario"] for s in specs}) == 1, "one cell: the servers are compared"
    with pytest.raises(UsageError, match="server mine is not a built-in: give scenario as a path"):
        matrix(Comparison.of(servers=["spring-undertow", mine], scenarios=["json"], repeats=1))


# --- a fixed port: what listens, not what lingers -----------------------------------------------------------

def _time_wait_port() -> int:
    """A port whose server (bound as servers bind, with SO_REUSEADDR) closed a connection first and stopped
    listening: its socket lingers in TIME-WAIT, as 64 connections of a stopped nginx do."""
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = server.accept()
        accepted.close()  # the server closes first: its side goes to TIME-WAIT
        time.sleep(0.05)
        client.close()
    return port


def test_a_port_whose_last_connections_linger_in_time_wait_is_free():
    port = _time_wait_port()
    with socket.socket() as plain, pytest.raises(OSError):
        plain.bind(("127.0.0.1", port))  # what the old probe did, and why every other fork failed
    assert not backends.port_in_use(port), "a server binds with SO_REUSEADDR: TIME-WAIT does not stop it"
    backends.check_port_free(port, wait=0)


def test_a_port_something_listens_on_is_named_with_its_holder():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert backends.port_in_use(port)
        assert backends.holder(port).startswith(f"PID {os.getpid()} (")
        began = time.monotonic()
        with pytest.raises(ServerError, match=f"port {port} on 127.0.0.1 is held by PID {os.getpid()} .*still after "
                                              "0 s"):
            backends.check_port_free(port, wait=0.3)
        assert time.monotonic() - began >= 0.3, "it waits for the last fork's server to let go first"
        with pytest.raises(UsageError, match=f"port {port} on 127.0.0.1 is in use by PID {os.getpid()}"):
            prepare("spring-tomcat", None, RunOptions(port=port), tools=False)


def test_stopping_a_server_stops_its_whole_tree():
    # A leader that leaves a child behind in its group, as nginx's master leaves its workers for a moment.
    started = process.start(["sh", "-c", "sleep 30 & sleep 30 & wait"], stdout=subprocess.DEVNULL)
    time.sleep(0.2)
    assert len(process.group(started.pid)) == 3
    process.stop(started, grace=2.0)
    assert process.group(started.pid) == []
    ignoring = process.start([sys.executable, "-c", "import signal, subprocess, time; "
                              "signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                              "subprocess.Popen(['sleep', '30']); time.sleep(30)"])
    time.sleep(0.3)
    process.stop(ignoring, grace=0.5)
    assert process.group(ignoring.pid) == [], "what ignores SIGTERM is killed after the grace"


# --- what a comparison says of the user's own servers -------------------------------------------------------

def _run(server: str, repeat: int, rps: float, *, attached: bool, path: str = "/hello") -> benchlab.Run:
    backend = {"backend": "local", "attached": True} if attached else {"backend": "local", "pid": 100 + repeat}
    return benchlab.Run(id=f"{server}-r{repeat}", params={"server": server, "scenario": "hello", "path": path,
                        "load": "duration", "driver": "wrk", "connections": 64, "repeat": repeat, "window": 1},
                        metrics={"rps": rps}, metadata={"backend": backend}, suite="s")


def test_a_running_servers_repeats_are_called_windows_of_one_process():
    from benchlab.analysis import precision
    from benchlab.analysis.suite import Suite
    from benchlab.present import header

    records = [_run(s, r, v * (1 + 0.01 * r), attached=s.startswith("127."), path="/" if s.startswith("127.") else
                    "/hello") for r in (1, 2, 3) for s, v in (("spring-undertow", 20000.0), ("127.0.0.1:8080", 9000.0))]
    summary = Suite(records).summary(["rps"]).set_index("server")
    assert summary.loc["127.0.0.1:8080", "unit"] == "windows of one process"
    assert summary.loc["spring-undertow", "unit"] == "forks"
    design = precision.design(records)
    assert "127.0.0.1:8080 was already running (Server.from_url): its repeats are windows of one process" in \
        design["why"]
    said = dict(header.measured(records).rows)
    assert "windows of one process, which benchlab cannot restart" in said["repeats"]
    assert said["paths"] == "spring-undertow at /hello, 127.0.0.1:8080 at /"
    plain = Suite([r for r in records if r.params["server"] == "spring-undertow"])
    assert "unit" not in plain.summary(["rps"]) and "paths" not in dict(header.measured(plain).rows)
