"""Durations, load settings, cores, storage and the public face (unit tests)."""

from __future__ import annotations

import json
import math

import pytest

import benchlab
from benchlab import cores
from benchlab.errors import ResultsError, UsageError
from benchlab.running.load import Load, parse_duration
from benchlab.store.results import FORMAT_VERSION, Run, load_runs, read, save


@pytest.mark.parametrize("text, seconds", [("30s", 30), ("2m", 120), ("500ms", 0.5), ("1h", 3600), (15, 15),
                                           ("1.5s", 1.5), ("7", 7)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["30x", "", "s", "-1s", True])
def test_bad_duration_is_one_line(bad):
    with pytest.raises(UsageError) as info:
        parse_duration(bad)
    assert "\n" not in str(info.value) and "30s" in str(info.value)


def test_connections_fewer_than_threads():
    with pytest.raises(UsageError, match="at least threads"):
        Load(connections=2, threads=4)


def test_count_and_rate_models():
    assert Load.count(users=100, loops=1000).requests == 100_000
    assert Load.count(users=100, loops=1000).connections == 100
    with pytest.raises(UsageError, match="users x loops"):
        Load.count(users=0, loops=10)
    with pytest.raises(UsageError, match="rate must be more than 0"):
        Load.constant_rate(0)
    with pytest.raises(UsageError, match="unknown load model"):
        Load(model="spike")


def test_cores_parse_and_format():
    assert cores.format_cpus([0, 1, 2, 5]) == "0-2,5"
    assert cores.parse_cpus("0") == (0,)
    with pytest.raises(UsageError, match="does not have"):
        cores.parse_cpus("999")
    with pytest.raises(UsageError, match="give cores"):
        cores.parse_cpus("a-b")


def test_default_split_gives_each_side_its_own_cores():
    server, load = cores.default_split()
    if len(cores.available()) > 1:
        assert not set(server) & set(load)
        assert set(server) | set(load) == set(cores.available())


def _run(run_id="r1", **metrics) -> Run:
    return Run(id=run_id, params={"server": "spring-tomcat", "scenario": "hello", "connections": 10,
                                  "server_cpus": [0], "load_cpus": [1], "jvm_opts": ["-Xmx1g"]},
               metrics={"rps": 100.0, "p99": 0.01, **metrics}, metadata={"server": {"server": "tomcat"}},
               samples=((0.25, "server", 95.0, 1e8),), started_at="2026-01-01T00:00:00+00:00")


def test_run_round_trip(tmp_path):
    run = _run()
    save(run, tmp_path)
    again = read(tmp_path / "run.json")
    assert again == run
    row = again.to_frame().iloc[0]
    assert row["server_cpus"] == "0" and row["jvm_opts"] == "-Xmx1g" and row["server_impl"] == "tomcat"
    samples = again.samples_frame()
    assert list(samples.columns) == ["id", "server", "t", "role", "cpu", "rss", "io"]
    assert samples["io"].isna().all(), "a sample stored before io was sampled reads as no byte count"
    assert not list(tmp_path.glob(".*tmp")), "the atomic write leaves no temporary file"


def test_samples_are_stored_beside_the_run_and_read_when_asked_for(tmp_path):
    run = _run()
    save(run, tmp_path)
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["version"] == 4 and doc["samples"] == "samples.json"
    again = read(tmp_path / "run.json")
    (tmp_path / "samples.json").write_text("{}")  # damaged after the load: the samples are read only now
    with pytest.raises(ResultsError, match="not a benchlab samples file"):
        list(again.samples)
    (tmp_path / "samples.json").write_text(json.dumps({"format": "benchlab-samples", "version": 99, "rows": []}))
    with pytest.raises(ResultsError, match="newer benchlab"):
        list(read(tmp_path / "run.json").samples)


def test_a_version_1_run_with_its_samples_inline_is_still_read(tmp_path):
    doc = _run().to_json()
    doc.update(version=1, samples=[[0.25, "server", 95.0, 1e8]])
    (tmp_path / "run.json").write_text(json.dumps(doc))
    again = read(tmp_path / "run.json")
    assert again.samples == ((0.25, "server", 95.0, 1e8),) and again == _run()


def test_run_checks_its_fields():
    with pytest.raises(ValueError):
        Run(id="x", params={}, metrics={"rps": -1}, metadata={})
    with pytest.raises(ValueError):
        Run(id="x", params={}, metrics={}, metadata={}, status="maybe")


def test_newer_format_is_refused(tmp_path):
    doc = _run().to_json()
    doc["version"] = FORMAT_VERSION + 1
    (tmp_path / "run.json").write_text(json.dumps(doc))
    with pytest.raises(ResultsError, match="newer benchlab"):
        read(tmp_path / "run.json")


def test_runs_are_found_in_path_order_without_following_links(tmp_path):
    # find() walks with os.walk for speed; it must list what Path.rglob listed, in the same order.
    from benchlab.store.results import find

    for name in ("a/b", "a-b", ".hidden", "Z", "a/b/c"):
        save(_run(name.replace("/", "_")), tmp_path / name)
    save(_run("top"), tmp_path)
    (tmp_path / "link").symlink_to(tmp_path / "a", target_is_directory=True)
    assert find([tmp_path]) == sorted(tmp_path.rglob("run.json"))
    assert [p.parent.name for p in find([tmp_path])][:4] == [".hidden", "Z", "c", "b"]  # by parts: a/b/c first


def test_a_value_only_json_can_write_is_read_back(tmp_path):
    # orjson, where installed, parses run.json; NaN and huge integers are json's, and json reads them.
    run = _run(p50=float("nan"), requests=2**70)
    save(run, tmp_path)
    again = read(tmp_path / "run.json")
    assert math.isnan(again.metrics["p50"]) and again.metrics["requests"] == 2**70 and again.samples == run.samples


def test_empty_results_directory(tmp_path):
    with pytest.raises(ResultsError, match="no runs under"):
        load_runs(tmp_path)
    with pytest.raises(ResultsError, match="no results at"):
        load_runs(tmp_path / "missing")


def test_unfinished_run_directory_is_ignored(tmp_path):
    save(_run("done"), tmp_path / "done")
    (tmp_path / "unfinished").mkdir()
    (tmp_path / "unfinished" / "server.log").write_text("killed")
    assert [r.id for r in load_runs(tmp_path)] == ["done"]


def test_import_wrk_compares_alongside(capture, tmp_path):
    run = benchlab.import_wrk(capture("wrk_text_jetty.txt"), server="spring-jetty", label="old logs",
                              results_dir=tmp_path)
    assert run.params["connections"] == 50 and run.params["threads"] == 2 and run.params["duration"] == 3
    suite = benchlab.load(tmp_path)
    assert suite.runs.loc[0, "rps"] == pytest.approx(281.19)
    assert (tmp_path / run.id / "wrk.out").exists()


def test_published_figures():
    wrk = benchlab.running.importers.published("wrk")
    jetty = wrk[(wrk.server == "spring-jetty") & (wrk.metric == "p99")]["value"].tolist()
    assert jetty == [22.40, 234.01, 6.04]
    jmeter = benchlab.running.importers.published("jmeter")
    assert len(jmeter[(jmeter.users == 1000) & (jmeter.run == "mean")]) == 3


def test_public_names_are_exported():
    for name in benchlab.__all__:
        assert hasattr(benchlab, name), name
    assert {"run", "compare", "load", "Server", "Load", "Suite", "BenchlabError"} <= set(benchlab.__all__)
    assert all(issubclass(getattr(benchlab, n), benchlab.BenchlabError) for n in benchlab.__all__
               if n.endswith("Error") or n == "ToolMissing")


def test_loopback_guard():
    from benchlab.running.servers import check_loopback

    check_loopback("http://127.0.0.1:80/")
    check_loopback("http://127.5.5.5:80/")
    check_loopback("http://[::1]:80/")
    for url in ("http://10.0.0.1:80/", "http://192.168.1.1:80/", "http://example.com/"):
        with pytest.raises(UsageError, match="allow_remote=True"):
            check_loopback(url)
    check_loopback("http://10.0.0.1:80/", allow_remote=True)  # allowed, and nothing is sent here


def test_unknown_server_and_scenario_name_the_choices():
    with pytest.raises(UsageError, match="spring-tomcat, spring-jetty, spring-undertow"):
        benchlab.running.servers.get("lighttpd")
    with pytest.raises(UsageError, match="hello, json, reflect, sleep, echo"):
        benchlab.running.servers.scenario("hi")


def test_from_url_refuses_remote_without_permission():
    with pytest.raises(UsageError, match="allow_remote"):
        benchlab.api.prepare(benchlab.Server.from_url("http://192.168.0.10:8080/hello"))


def test_from_command_needs_a_port():
    with pytest.raises(UsageError, match="port"):
        benchlab.Server.from_command(["./server"])
    assert benchlab.Server.from_command(["./server", "--port", "{port}"]).argv(81) == ["./server", "--port", "81"]




def test_import_jtl(tmp_path):
    from .conftest import CAPTURES

    run = benchlab.import_jtl(CAPTURES / "jmeter-hello.jtl", server="spring-tomcat", users=4, loops=50,
                              results_dir=tmp_path)
    assert run.metrics["requests"] > 0 and run.params["driver"] == "jmeter" and run.params["users"] == 4
    assert benchlab.load(tmp_path).runs.loc[0, "rps"] == pytest.approx(run.metrics["rps"])


def test_progress_eta_comes_from_the_plan_and_a_log_gets_one_line_a_run(capsys):
    from benchlab.running.progress import FIRST_GUESS_OVERHEAD, Progress

    bar = Progress([10.0, 20.0], enabled=True)  # stderr is captured, not a terminal: plain lines
    bar.start("spring-jetty r1")
    assert 30.0 + 2 * FIRST_GUESS_OVERHEAD - 1 < bar.eta() <= 30.0 + 2 * FIRST_GUESS_OVERHEAD
    bar.phase("measure")
    bar.finish(ran=False)
    bar.start("spring-tomcat r1")
    bar.finish()
    bar.close()
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" - ")[0] for line in lines] == ["[1/2] spring-jetty r1", "[2/2] spring-tomcat r1"]
    assert bar.eta() == 0.0 and len(bar.overheads) == 1


def test_each_run_records_the_accept_queue_and_somaxconn():
    from benchlab.running import metadata

    assert metadata.collect_accept_queue({"server": "tomcat"}) == {
        "setting": "server.tomcat.accept-count", "value": 100, "source": "default"}
    given = metadata.collect_accept_queue({"server": "tomcat"}, ["-Dserver.tomcat.accept-count=2000"])
    assert given["source"] == "jvm_opts"
    assert metadata.collect_accept_queue({"server": "undertow", "accept_queue": 64}) == {
        "setting": "Undertow socket option BACKLOG", "value": 64, "source": "/info"}
    assert metadata.collect_accept_queue({"server": "custom"}) == {}
    network = metadata.collect_network()
    assert network["somaxconn"] == int(open("/proc/sys/net/core/somaxconn").read())
    assert network["tcp_max_syn_backlog"] == int(open("/proc/sys/net/ipv4/tcp_max_syn_backlog").read())
    run = Run(id="q", params={"server": "spring-jetty"}, metrics={"rps": 1.0},
              metadata={"accept_queue": metadata.collect_accept_queue({"server": "jetty"}), "network": network})
    row = run.to_frame().iloc[0]
    assert (row["accept_queue"], row["somaxconn"]) == (50, network["somaxconn"])


def test_a_run_stored_with_the_old_word_iteration_reads_as_window(tmp_path):
    from benchlab.store.results import read

    run = Run(id="old", params={"server": "s", "repeat": 1, "window": 2, "fork": "f"}, metrics={"rps": 1.0},
              metadata={})
    save(run, tmp_path)
    doc = json.loads((tmp_path / "run.json").read_text())
    doc["version"], doc["params"] = 3, {"server": "s", "repeat": 1, "iteration": 2, "fork": "f"}
    (tmp_path / "run.json").write_text(json.dumps(doc))
    assert read(tmp_path / "run.json").params["window"] == 2



def test_a_load_refuses_streams_or_pipelining_on_the_wrong_protocol():
    from benchlab.running.load import Load

    assert Load(protocol="h2c", streams=10).streams == 10
    for given in ({"protocol": "http1", "streams": 2}, {"protocol": "h2c", "pipeline": 4}, {"protocol": "h3"},
                  {"protocol": "h2", "streams": 0}):
        with pytest.raises(UsageError):
            Load(**given)


def test_a_runs_cell_holds_its_protocol_and_the_facet_names_it():
    from benchlab.present.charts.frames import load_point
    from benchlab.schema import cell

    assert cell({}) == cell({"protocol": "http1", "streams": 1}), "runs stored before the protocol are HTTP/1.1 ones"
    assert cell({"protocol": "h2c"}) != cell({})
    assert load_point({"load": "duration", "connections": 16, "protocol": "h2c", "streams": 10}) == \
        "16 connections, h2c x 10 streams"
    assert load_point({"load": "duration", "connections": 16, "protocol": "http1"}) == "16 connections"


def test_the_throwaway_certificate_is_private_and_named_by_its_fingerprint():
    import hashlib
    import os
    import ssl

    from benchlab.running import protocols

    cert, key, fingerprint = protocols.certificate()
    assert os.stat(key).st_mode & 0o077 == 0, "the key is readable by its owner only"
    der = ssl.PEM_cert_to_DER_cert(open(cert).read())
    assert hashlib.sha256(der).hexdigest() == fingerprint
    listener = protocols.listener("h2")
    assert listener.tls and listener.cert == cert and listener.record()["certificate_sha256"] == fingerprint
    assert "--server.http2.enabled=true" in listener.spring_arguments()
    assert protocols.listener("h2c").spring_arguments() == ["--server.http2.enabled=true"]
    assert protocols.listener("http1").spring_arguments() == []
