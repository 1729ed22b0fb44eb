"""The references and custom servers for real (integration): a Spring server beside nginx and go-nethttp with the
machine's ceiling and the report; a custom nginx on a fixed port, fork after fork; the Go server's build; a
custom server that exits or never listens, failed with its own log; each reference's answers and its facts."""

from __future__ import annotations

import shutil
import socket
import sys
from pathlib import Path

import pytest

import benchlab
from benchlab.errors import ServerError, ToolMissing
from benchlab.running import natives, servers
from benchlab.running.verify import verify

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not shutil.which("nginx"), reason="nginx is not installed: .ci/run installs it")]

ROOT = Path(__file__).resolve().parent.parent
SHORT = {"duration": "2s", "warmup": "1s", "server_cpus": "0", "load_cpus": "1"}


def test_spring_beside_the_references_with_the_ceiling_and_the_report(jars, tmp_path, no_jvm_left):
    from benchlab import report

    from .test_notebooks import errors, text_of

    trio = ["spring-undertow", "nginx", "go-nethttp"]
    # C1 only: the JIT is done within a 3 s warm-up, so the Spring server's windows are fit for the ceiling (with
    # both compilers it compiles for minutes, and a window measured while it does is left out)
    suite = benchlab.compare(trio, connections=[64], repeats=2, results_dir=tmp_path / "results", progress=False,
                             jvm_opts=["-XX:TieredStopAtLevel=1"], **{**SHORT, "warmup": "3s"})
    runs = suite.runs[suite.runs["status"] != "retaken"]  # a disturbed window measured again is kept beside
    assert len(runs) == 6 and (runs["status"] == "ok").all(), runs[["server", "status", "error"]]
    facts = {r.params["server"]: r.metadata["server"] for r in suite.records}
    assert facts["nginx"]["server"] == "nginx" and facts["nginx"]["server_version"].count(".") == 2
    assert facts["nginx"]["worker_processes"] == 1, "one worker per server core"
    assert facts["go-nethttp"]["gomaxprocs"] == 1, "GOMAXPROCS follows the core it is pinned to"
    summary = suite.summary(["rps"]).set_index("server")
    # the fastest reference with windows fit for a verdict (nginx on one core may be bound by wrk on the other)
    fit = summary[summary["judged"].astype(bool)]
    fastest = fit.loc[fit.index.isin(["nginx", "go-nethttp"]), "mean"].idxmax()
    assert (fit["reference"] == fastest).all() and summary.loc[fastest, "share"] == 1.0, summary
    share = summary.loc["spring-undertow"]
    assert 0 < share["share"] < 1 and share["share_low"] <= share["share"] <= share["share_high"]
    said = suite.ceiling().set_index("server").loc["spring-undertow", "text"]
    assert said.startswith("spring-undertow served ") and f"of {fastest}'s requests/s on 1 core" in said
    stored = {"measure": False, "results_dir": str(tmp_path / "results")}
    done = report.execute(ROOT / "notebooks" / "compare.ipynb", stored, output=tmp_path / "report.ipynb")
    assert errors(done.ipynb) == []
    text = text_of(done.ipynb)
    assert said in text and "share of the fastest reference [95% CI]" in text
    assert all(server in text for server in trio) and done.html.exists()


def _nginx_of_my_own(tmp_path: Path, port: int) -> benchlab.Server:
    """nginx as the issue's user ran it: their own configuration, a fixed port, benchlab told only the command."""
    folder = tmp_path / "my-nginx"
    folder.mkdir()
    (folder / "nginx.conf").write_text(
        f'worker_processes 1; daemon off; pid "{folder}/nginx.pid"; error_log stderr;\n'
        "events { worker_connections 1024; }\n"
        f'http {{ access_log off; client_body_temp_path "{folder}/body"; server {{ listen 127.0.0.1:{port}; '
        'location / { return 200 "Hello, World!\\n"; } } }\n')
    return benchlab.Server.from_command(["nginx", "-p", f"{folder}/", "-c", str(folder / "nginx.conf"), "-e", "stderr"],
                                        port=port, path="/", name="my-nginx")


def test_a_custom_server_on_a_fixed_port_serves_three_forks_back_to_back(tmp_path):
    # 64 connections leave their sockets in TIME-WAIT on the port as each fork's nginx stops; the next fork starts
    # at once. Without scenarios, it is measured at its own path.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    suite = benchlab.compare([_nginx_of_my_own(tmp_path, port)], connections=[64], repeats=3, port=port,
                             results_dir=tmp_path / "results", progress=False, **SHORT)
    runs = suite.runs[suite.runs["status"] != "retaken"]  # a disturbed window measured again is kept beside
    assert len(runs) == 3 and (runs["status"] == "ok").all(), runs[["status", "error"]]
    assert {r.params["path"] for r in suite.records} == {"/"} and set(runs["scenario"]) == {"hello"}
    assert len({r.metadata["backend"]["pid"] for r in suite.records}) == 3, "three forks, three processes"


def test_a_custom_server_that_exits_at_once_fails_its_run_with_its_own_log(tmp_path):
    quits = benchlab.Server.from_command(["sh", "-c", "echo 'nginx: [emerg] unknown directive \"lsten\"' >&2; exit 1",
                                          "{port}"], name="quits", path="/")
    with pytest.raises(ServerError, match="quits exited during start") as info:
        benchlab.run(quits, results_dir=tmp_path, **SHORT)
    assert 'unknown directive "lsten"' in str(info.value)


def test_a_custom_server_that_never_listens_fails_its_run_with_its_own_log(tmp_path):
    mute = benchlab.Server.from_command(["sh", "-c", "echo 'bound to the wrong port, 9' ; exec sleep 60", "{port}"],
                                        name="mute", path="/")
    with pytest.raises(ServerError, match="did not answer within 2 s; the server is stopped") as info:
        benchlab.run(mute, results_dir=tmp_path, startup_timeout="2s", **SHORT)
    assert "bound to the wrong port, 9" in str(info.value)


@pytest.mark.parametrize("name", ["nginx", "go-nethttp"])
def test_each_reference_answers_every_scenario_with_its_body(name, tmp_path):
    from benchlab.running import backends

    server = servers.get(name)
    server.build()
    launch = backends.Launch(run_id="r", port=backends.free_port(), cpus=(0,), log_path=tmp_path / "server.log")
    instance = backends.get("local").start(server, launch)
    try:
        for scenario in ("hello", "json", "sleep", "sleep:25", "echo"):
            answer = verify(instance.url, server.scenario(scenario))
            assert answer.status == 200
            body = answer.body
        assert body == servers.ECHO_BODY
        json_body = verify(instance.url, server.scenario("json")).body
        assert json_body == servers.JSON_BODY, "the same user object as Spring's"
    finally:
        instance.stop()
    assert not backends.port_in_use(launch.port), "stopped with its whole tree: nothing listens"


# --- the Go server's build ---------------------------------------------------------------------------------

@pytest.fixture
def go_checkout(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "servers" / "go", tmp_path / "servers" / "go", ignore=shutil.ignore_patterns("target"))
    monkeypatch.setenv("BENCHLAB_HOME", str(tmp_path))
    return tmp_path / "servers" / "go"


def test_the_go_server_is_built_static_and_only_when_its_sources_change(go_checkout):
    built = natives.build_go()
    binary = built["binary"]
    assert built["built"] and binary == go_checkout / "target" / "go-nethttp" and binary.stat().st_size > 1e6
    assert b"/lib64/ld-linux" not in binary.read_bytes()[:4096], "static: no loader to find FROM scratch"
    assert natives.build_go()["built"] is False, "unchanged: skipped"
    main = go_checkout / "main.go"
    main.write_text(main.read_text().replace("listening on %s", "listening at %s"))
    assert natives.build_go()["built"] is True, "a source changed: built again"
    main.write_text(main.read_text().replace("func main() {", "func main() { undefined()"))
    with pytest.raises(benchlab.BuildError, match=r"(?s)the Go build failed .*main.go:\d+:\d+: undefined"):
        natives.build_go()


def test_benchlab_build_builds_the_go_server(jars):
    import subprocess

    done = subprocess.run([sys.executable, "-m", "benchlab", "build"], capture_output=True, text=True, timeout=900,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if "go-nethttp" in line)
    assert str(natives.go_binary()) in line and natives.go_current()


def test_a_missing_go_toolchain_is_named_with_its_install(go_checkout, monkeypatch):
    monkeypatch.setenv("GO", "/nonexistent/go")
    with pytest.raises(ToolMissing, match="apt-get install golang-go"):
        natives.build_go()
    assert not natives.go_binary().exists()
