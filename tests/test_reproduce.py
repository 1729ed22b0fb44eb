"""The replay behind reproduce.ipynb (:mod:`benchlab.reproduce`), read back from stored runs: which experiments
it takes, where each is stored, how each ran in words, and the published setups beside ours, read from the
claims table."""

from __future__ import annotations

import pytest

from benchlab import reproduce
from benchlab.analysis import claims
from benchlab.errors import ResultsError
from benchlab.present import replay
from benchlab.running.options import Comparison
from benchlab.store.results import Run, save

SERVERS = ["spring-tomcat", "spring-jetty"]


def store(folder, server: str, repeat: int, **params) -> None:
    run_id = f"{server}-{repeat}"
    run = Run(id=run_id, params={"server": server, "scenario": "hello", "driver": "wrk", "load": "duration",
                                 "connections": 200, "threads": 1, "duration": 2.0, "warmup": 1.0, "repeat": repeat,
                                 **params},
              metrics={"rps": 1000.0 * repeat}, metadata={"server": {"spring_boot_version": "3.5.7"},
                                                          "java": {"version": "17.0.15"}}, suite="s")
    (folder / run_id).mkdir(parents=True)
    save(run, folder / run_id)


@pytest.fixture(autouse=True)
def jdks(monkeypatch):
    """The JDKs "theirs" chooses from, without asking each installed java its version (a JVM start each)."""
    from benchlab.running import variants

    monkeypatch.setattr(variants, "installed", lambda: {"/jdk17/bin/java": 17, "/jdk25/bin/java": 25})


def test_a_replay_read_back_finds_each_experiments_folder_and_says_how_it_ran(tmp_path, capsys, caplog):
    table = claims.read()
    chosen = replay.replayable(replay.select(table, ["wrk write-up", "jhipster"]))
    for server in SERVERS:
        for repeat in (1, 2):
            store(tmp_path / "wrk", server, repeat)
    seeds = reproduce.Seeds(duration="2s", users=[100], loops=[1000], count_drivers=["jmeter"])
    template = Comparison.of(servers=SERVERS, baseline="spring-tomcat")
    done = reproduce.experiments(chosen, table, ["wrk", "h2load-count"], seeds, template, base=tmp_path, measure=False)
    said = caplog.text  # a warning of the benchlab log: in a notebook, its stderr
    # jhipster compares Jetty with Undertow, and Undertow is not asked for: its experiment does not run
    assert "h2load-count: each of its claims compares a server that is not in servers, so it does not run" in said
    assert list(done.by_replay) == [("ours", "controlled")]
    assert list(done.suites) == ["wrk"] and done.count_suites == {} and list(done.everything) == ["wrk"]
    assert len(done.suites["wrk"].records) == len(done.records) == 4
    assert done.said[("ours", "controlled")]["wrk"] == ("the default java, the JVM's own GC and heap; warm-up auto, "
                                                        "3 fresh servers each, interleaved")
    header = done.show()
    assert "wrk: 4 runs, 4 ok, stored in" in capsys.readouterr().out
    assert "the published experiments, re-run: wrk" in str(header)


def test_runs_stored_under_the_older_word_their_protocol_are_read_back_where_they_are(tmp_path):
    table = claims.read()
    chosen = replay.replayable(replay.select(table, ["wrk write-up"]))
    for server in SERVERS:
        store(tmp_path / "their-protocol" / "wrk", server, 1)  # stored before the source's procedure had that name
    seeds = reproduce.Seeds(duration="2s", users=[100], loops=[1000], count_drivers=["jmeter"])
    template = Comparison.of(servers=SERVERS, baseline="spring-tomcat")
    done = reproduce.experiments(chosen, table, ["wrk"], seeds, template, base=tmp_path, procedure="theirs",
                                 measure=False)
    assert len(done.by_replay[("ours", "theirs")][0]["wrk"].records) == 2
    (tmp_path / "their-procedure").mkdir()  # once runs are stored under the new word, those are the ones read
    with pytest.raises(ResultsError, match="their-procedure/wrk"):
        reproduce.experiments(chosen, table, ["wrk"], seeds, template, base=tmp_path, procedure="theirs", measure=False)


def test_the_published_setups_beside_ours_come_from_the_claims_table():
    seeds = reproduce.Seeds(threads=None, users=[100, 1000], loops=[1000, 100], count_scale=0.1)
    table = reproduce.Replayed().differences(claims.read(), seeds, warmup="auto")
    published = table["published"].to_dict()
    assert published["Spring Boot"] == "3.4.4 (wrk), 2.2.2 (JMeter)"
    assert published["Java"] == "wrk: 24; JMeter: not stated"
    assert published["machine"] == "not stated"
    assert published["wrk load"] == "wrk -t4 -c200 -d30s --latency, /hello"
    assert published["JMeter load"] == "100 x 1000 and 1000 x 100 users x loops, /reflect"
    assert published["runs per server"].startswith("wrk: 3 per server (Undertow 2); JMeter: 3 per server and load")
    here = table["here"].to_dict()
    assert here["wrk load"] == "one thread per load core, 200 connections, 10s after auto warm-up, hello"
    assert here["JMeter load"] == "100 x 100 and 1000 x 10 users x loops, reflect, with jmeter and wrk"


def test_each_experiment_is_the_template_changed_by_its_plan_and_takes_compares_one_path(tmp_path, monkeypatch):
    """The replay builds a Comparison per experiment and hands it to api.carry_out, compare()'s own path: the same
    comparison compare() built from the keywords the replay merged into it before."""
    from benchlab import api

    table = claims.read()
    chosen = replay.replayable(replay.select(table, ["wrk write-up", "JMeter write-up", "jhipster"]))
    taken = {}
    monkeypatch.setattr(api, "carry_out", lambda comparison, *, results_dir: taken.setdefault(results_dir, comparison))
    monkeypatch.setattr(reproduce, "load", lambda *a, **k: None)
    seeds = reproduce.Seeds(duration="2s", users=[100], loops=[1000], count_drivers=["jmeter", "wrk"])
    template = Comparison.of(servers=[*SERVERS, "spring-undertow"], baseline="spring-jetty", repeats=2,
                             warmup="5s", backend="local", server_cpus="0", load_cpus="1")
    reproduce.experiments(chosen, table, ["wrk", "jmeter", "h2load-count"], seeds, template, base=tmp_path,
                          stack="both", procedure="both")
    machine = {"backend": "local", "server_cpus": "0", "load_cpus": "1"}
    assert taken[tmp_path / "wrk"] == Comparison.of(
        servers=[*SERVERS, "spring-undertow"], scenarios=["hello"], connections=[200], threads=None, duration="2s",
        repeats=2, warmup="5s", baseline="spring-jetty", driver=None, **machine)
    theirs = taken[tmp_path / "their-procedure" / "wrk"]
    assert (theirs.repeats, theirs.windows, theirs.run.warmup) == (1, 3, 0.0)
    plan = replay.plan(chosen, "h2load-count", duration=2.0, count_scale=0.1, servers=template.servers)["options"]
    assert taken[tmp_path / "h2load-count"] == Comparison.of(**plan, repeats=2, warmup="5s", baseline="spring-jetty",
                                                             **machine)
    assert sorted(p.name for p in taken if p.parent == tmp_path) == ["count-jmeter", "count-wrk", "h2load-count", "wrk"]
    assert taken[tmp_path / "count-wrk"].run.driver == "wrk" and taken[tmp_path / "count-wrk"].run.load == "count"
    on_theirs = taken[tmp_path / "their-stack" / "wrk"].run
    assert (on_theirs.java, on_theirs.backend, on_theirs.server_cpus) == ("/jdk25/bin/java", "local", "0")
