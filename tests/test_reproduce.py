"""The replay behind reproduce.ipynb (:mod:`benchlab.reproduce`), read back from stored runs: which experiments
it takes, where each is stored, how each ran in words, and the published setups beside ours, read from the
claims table."""

from __future__ import annotations

from benchlab import reproduce
from benchlab.analysis import claims
from benchlab.present import replay
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


def test_a_replay_read_back_finds_each_experiments_folder_and_says_how_it_ran(tmp_path, capsys, caplog):
    table = claims.read()
    chosen = replay.replayable(replay.select(table, ["wrk write-up", "jhipster"]))
    for server in SERVERS:
        for repeat in (1, 2):
            store(tmp_path / "wrk", server, repeat)
    seeds = reproduce.Seeds(duration="2s", users=[100], loops=[1000], count_drivers=["jmeter"])
    done = reproduce.experiments(chosen, table, ["wrk", "h2load-count"], seeds, servers=SERVERS,
                                 baseline="spring-tomcat", base=tmp_path, run=False)
    said = caplog.text  # a warning of the benchlab log: in a notebook, its stderr
    # jhipster compares Jetty with Undertow, and Undertow is not asked for: its experiment does not run
    assert "h2load-count: each of its claims compares a server that is not in servers, so it does not run" in said
    assert list(done.by_run) == [("ours", "controlled")]
    assert list(done.suites) == ["wrk"] and done.count_suites == {} and list(done.everything) == ["wrk"]
    assert len(done.suites["wrk"].records) == len(done.records) == 4
    assert done.said[("ours", "controlled")]["wrk"] == ("the default java, the JVM's own GC and heap; warm-up auto, "
                                                        "3 fresh servers each, interleaved")
    header = done.show()
    assert "wrk: 4 runs, 4 ok, stored in" in capsys.readouterr().out
    assert "the published experiments, re-run: wrk" in str(header)


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
