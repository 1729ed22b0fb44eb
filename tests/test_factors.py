"""Server settings as factors: variant names, their launch, the refusals before start, the check against /info,
the crossing in compare(), the interaction chart; and real Tomcat runs on Java 25 with and without virtual threads."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

import benchlab
from benchlab.errors import UsageError
from benchlab.present import charts
from benchlab.running import factors, servers, variants
from benchlab.running.matrix import matrix
from benchlab.running.options import Comparison
from benchlab.store import results

ROOT = Path(__file__).resolve().parent.parent
JDK25 = "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java"
SHORT = {"duration": "2s", "warmup": "2s", "connections": 8, "cds": True}


# --- names and launch --------------------------------------------------------------------------------

@pytest.mark.parametrize("given, name", [
    ({}, "spring-tomcat"),
    ({"virtual_threads": False}, "spring-tomcat"),
    ({"virtual_threads": True, "java": 25}, "spring-tomcat+vt@java25"),
    ({"max_threads": 400}, "spring-tomcat+threads400"),
    ({"gc": "parallel", "heap": "512m"}, "spring-tomcat+parallelgc+heap512m"),
    ({"gc": "ZGC", "java": JDK25}, "spring-tomcat+zgc@java25"),
    ({"virtual_threads": True, "max_threads": 8, "gc": "g1", "heap": "1g", "java": "25"},
     "spring-tomcat+vt+threads8+g1gc+heap1g@java25"),
    ({"aot": True, "java": 25}, "spring-tomcat+aot@java25"),
])
def test_a_variant_is_named_after_its_settings_and_the_name_reads_back(given, name):
    server = benchlab.Server.spring("tomcat", **given)
    assert server.name == name
    assert servers.get(name).name == name
    if False not in given.values():  # virtual_threads=False is the default, said explicitly: its name is the plain one
        assert servers.get(name) == server, "the name is a way to write the same variant"


@pytest.mark.integration  # java=25 resolves to the installed Temurin 25, and prepare() checks wrk is there
def test_settings_become_jvm_options_and_spring_properties():
    server = benchlab.Server.spring("jetty", java=25, virtual_threads=True, max_threads=64, gc="parallel",
                                    heap="256m")
    argv = server.argv(8080, jvm_opts=["-Xss512k"], java=server.settings.java, cds=False)
    assert argv == [JDK25, "-XX:+UseParallelGC", "-Xmx256m", "-Xss512k", "-jar", server.jar,
                    "--spring.threads.virtual.enabled=true", "--server.jetty.threads.max=64",
                    "--server.port=8080", "--server.address=127.0.0.1"]
    assert benchlab.Server.spring("undertow", max_threads=3).settings.arguments("undertow") == [
        "--server.undertow.threads.worker=3"]
    spec = benchlab.running.spec.prepare(server, "hello")
    assert spec.server_java == JDK25 and spec.launch("r", Path("/tmp/x.log")).java == JDK25
    params = spec.params()
    assert (params["virtual_threads"], params["max_threads"], params["gc"], params["heap"], params["java_major"]) == (
        True, 64, "parallel", "256m", 25)
    assert "virtual_threads" not in benchlab.running.spec.prepare("spring-jetty", "hello").params(), \
        "a plain server's runs keep the parameters (and the cell keys) they had"


# --- refused before anything starts -----------------------------------------------------------------

def test_virtual_threads_on_java_17_is_one_usage_error_in_python():
    with pytest.raises(UsageError, match=r"^virtual threads need Java 21\+: give java=25"):
        benchlab.Server.spring("tomcat", virtual_threads=True, java=17)
    with pytest.raises(UsageError, match=r"^virtual threads need Java 21\+: give java=25"):
        benchlab.compare(["spring-tomcat"], factors={"virtual_threads": [False, True]},
                         java="/usr/lib/jvm/java-17-openjdk-amd64/bin/java", results_dir="/nonexistent/never")


def test_virtual_threads_on_java_17_exits_2_on_the_command_line(tmp_path):
    done = subprocess.run([sys.executable, "-m", "benchlab", "run", "--server", "spring-tomcat+vt@java17",
                           "--results-dir", str(tmp_path / "r")], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "benchlab: error: virtual threads need Java 21+: give java=25 (or a JDK of 21 or later), not java=17"]
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("call, says", [
    (lambda: benchlab.Server.spring("tomcat", gc="shenandoah"), "unknown gc 'shenandoah'"),
    (lambda: benchlab.Server.spring("tomcat", heap="512x"), "bad heap '512x'"),
    (lambda: benchlab.Server.spring("tomcat", max_threads=-1), "max_threads must be a whole number"),
    (lambda: benchlab.Server.spring("tomcat", java=8), "no Java 8 on this machine"),
    (lambda: benchlab.Server.from_command(["x", "{port}"]).with_settings(max_threads=4),
     "settings such as max_threads apply to the built-in Spring servers"),
    (lambda: servers.get("spring-tomcat+turbo"), "unknown setting '+turbo'"),
    (lambda: benchlab.Server.spring("tomcat", aot=True, java=17), "aot needs Java 25+ (its AOT cache with method "
                                                                  "profiles): give java=25, not java=17"),
    (lambda: benchlab.Server.spring("tomcat", aot="yes"), "aot is True or False, not 'yes'"),
    (lambda: factors.parse(["aot=maybe"]), "aot is true or false, not 'maybe'"),
    (lambda: factors.parse({"threads": [1]}), "unknown factor 'threads'"),
    (lambda: factors.parse(["virtual_threads"]), "bad factor 'virtual_threads': write name=value,value"),
    (lambda: matrix(Comparison.of(servers=["spring-tomcat+vt@java25"], factors={"virtual_threads": [False, True]})),
     "spring-tomcat+vt@java25 already sets virtual_threads"),
])
def test_a_setting_that_cannot_be_taken_is_refused(call, says):
    with pytest.raises(UsageError, match="^" + __import__("re").escape(says)):
        call()


# --- the check against /info --------------------------------------------------------------------------

def _statuses(asked, info):
    return {row["setting"]: row["status"] for row in variants.check(asked, info)}


def test_every_setting_is_checked_against_what_the_server_reports():
    asked = variants.settings("tomcat", java=25, virtual_threads=True, max_threads=400, gc="z", heap="512m")
    right = {"java_version": "25.0.1", "virtual": True, "pool_max": 400, "gc": ["ZGC Cycles", "ZGC Pauses"],
             "heap_max_bytes": 512 * 2**20}
    assert set(_statuses(asked, right).values()) == {"ok"}
    wrong = {"java_version": "17.0.15", "virtual": False, "pool_max": 200, "gc": ["G1 Young Generation"],
             "heap_max_bytes": 256 * 2**20}
    assert set(_statuses(asked, wrong).values()) == {"mismatch"}
    assert set(_statuses(asked, {}).values()) == {"not verified"}, "a missing key never passes"
    message = variants.mismatch("spring-tomcat+vt", variants.check(asked, wrong))
    assert "virtual_threads asked True, got False" in message and "max_threads asked 400, got 200" in message
    assert variants.mismatch("spring-tomcat", variants.check(asked, right)) is None


@pytest.mark.parametrize("gc, names, ok", [
    ("g1", ["G1 Young Generation", "G1 Concurrent GC", "G1 Old Generation"], True),
    ("parallel", ["PS Scavenge", "PS MarkSweep"], True),
    ("parallel", ["Copy", "MarkSweepCompact"], False),  # the serial collector a one-core JVM picks itself
    ("z", ["ZGC Minor Cycles", "ZGC Major Cycles"], True),
    ("z", "ZGC Cycles,ZGC Pauses", True),
    ("g1", [], False),
])
def test_the_gc_asked_is_the_collector_the_server_names(gc, names, ok):
    assert _statuses(variants.Settings(gc=gc), {"gc": names})["gc"] == ("ok" if ok else "mismatch")


@pytest.mark.parametrize("got, ok", [(512 * 2**20, True), (497 * 2**20, True), (440 * 2**20, False),
                                     (1024 * 2**20, False), ("536870912", True)])
def test_the_heap_is_within_a_survivor_space_of_xmx(got, ok):
    assert _statuses(variants.Settings(heap="512m"), {"heap_max_bytes": got})["heap"] == ("ok" if ok else "mismatch")


def test_virtual_false_is_checked_too_and_strings_read_as_json_does():
    assert _statuses(variants.Settings(virtual_threads=False), {"virtual": "false"}) == {"virtual_threads": "ok"}
    assert _statuses(variants.Settings(virtual_threads=False), {"virtual": True}) == {"virtual_threads": "mismatch"}


# --- crossing -------------------------------------------------------------------------------------------

def test_factors_cross_every_server_and_the_matrix_interleaves_them():
    runs = matrix(Comparison.of(servers=["spring-tomcat", "spring-jetty"], scenarios=["hello"], repeats=2,
                                factors=["virtual_threads=false,true", "java=25"]))
    names = [spec.server.name for _, spec in runs]
    first = ["spring-tomcat@java25", "spring-tomcat+vt@java25", "spring-jetty@java25", "spring-jetty+vt@java25"]
    assert names == first * 2
    assert [repeat for repeat, _ in runs] == [1] * 4 + [2] * 4


def test_server_cpus_as_a_factor_repeats_each_cell_per_core_set():
    runs = matrix(Comparison.of(servers=["spring-tomcat", "spring-jetty"], scenarios=["hello"], repeats=1,
                                factors={"server_cpus": ["0"]}))
    assert [(spec.server.name, spec.server_cpus) for _, spec in runs] == [("spring-tomcat", (0,)),
                                                                          ("spring-jetty", (0,))]
    with pytest.raises(UsageError, match="server_cpus is both an option and a factor"):
        matrix(Comparison.of(servers=["spring-tomcat"], factors={"server_cpus": ["0"]}, server_cpus="0"))


def _runs(table):
    made = []
    for server, setting, scenario, rps in table:
        for repeat in (1, 2, 3):
            params = {"server": server, "scenario": scenario, "driver": "wrk", "load": "duration",
                      "connections": 400, "repeat": repeat, "virtual_threads": setting}
            made.append(results.Run(id=f"{server}-{scenario}-{repeat}", params=params,
                                    metrics={"rps": rps * (1 + 0.01 * repeat)}, metadata={}))
    return results.frame(made)


def test_the_verdicts_pair_each_variant_with_its_own_server():
    runs = _runs([("spring-tomcat", False, "sleep:50", 1000), ("spring-tomcat+vt", True, "sleep:50", 3000),
                  ("spring-jetty", False, "sleep:50", 2000), ("spring-jetty+vt", True, "sleep:50", 2000 * 1.001)])
    found = factors.verdicts(runs)
    assert list(zip(found["server"], found["baseline"])) == [("spring-tomcat+vt", "spring-tomcat"),
                                                             ("spring-jetty+vt", "spring-jetty")]
    assert found["significant"].tolist() == [True, False]


def test_the_interaction_chart_draws_one_line_per_server_over_the_setting():
    from tests.test_charts import rendered

    servers = [("spring-tomcat", False, 1000), ("spring-tomcat+vt", True, 3000),
               ("spring-jetty", False, 900), ("spring-jetty+vt", True, 800)]
    runs = _runs([(s, vt, scenario, r) for s, vt, r in servers for scenario in ("sleep:50", "hello")])
    chart = charts.interaction(runs, "virtual_threads")
    spec = chart.to_dict()
    line = spec["spec"]["layer"][0]
    assert line["mark"]["type"] == "line"
    assert line["encoding"]["x"]["field"] == "setting" and line["encoding"]["x"]["sort"] == ["false", "true"]
    assert line["encoding"]["color"]["field"] == "base"
    assert spec["facet"]["column"]["field"] == "scenario"
    data = next(iter(spec["datasets"].values()))
    assert {(d["base"], d["setting"]) for d in data} == {("spring-tomcat", "false"), ("spring-tomcat", "true"),
                                                          ("spring-jetty", "false"), ("spring-jetty", "true")}
    rendered(chart)
    with pytest.raises(UsageError, match="unknown factor 'colour'"):
        charts.interaction(runs, "colour")


def test_the_verified_table_counts_what_each_server_said():
    run = results.Run(id="a", params={"server": "spring-tomcat+vt"}, metrics={"rps": 1.0}, metadata={
        "settings": [{"setting": "virtual_threads", "asked": True, "got": None, "status": "not verified"}]})
    table = factors.verified([run, dataclasses.replace(run, id="b")])
    assert table.to_dict("records") == [{"server": "spring-tomcat+vt", "setting": "virtual_threads", "asked": "True",
                                         "got": "-", "status": "not verified", "runs": 2}]


# --- real servers ------------------------------------------------------------------------------------------

@pytest.mark.integration
def test_a_java_setting_runs_that_jdk_and_the_server_confirms_it(tmp_path):
    run = benchlab.run("spring-jetty@java25", "hello", results_dir=tmp_path, **SHORT)
    assert run.metadata["backend"]["argv"][0] == JDK25
    assert run.metadata["settings"] == [{"setting": "java", "asked": 25, "got": run.metadata["server"]["java_version"],
                                         "status": "ok"}]
    assert run.to_frame()["java_major"].tolist() == [25]


@pytest.mark.integration
def test_tomcat_on_java_25_runs_requests_on_virtual_threads_only_when_asked(tmp_path):
    """Needs the /info of the java branch (key 'virtual'): without it this fails, it does not skip."""
    suite = benchlab.compare(["spring-tomcat"], ["hello"], repeats=1, factors={"virtual_threads": [False, True],
                                                                              "java": [25]},
                             results_dir=tmp_path, progress=False, **SHORT)
    assert (suite.runs["status"] == "ok").all(), suite.runs["error"].tolist()
    said = {}
    for run in suite.records:
        info = run.metadata["server"]
        assert "virtual" in info, f"GET /info of {run.params['server']} has no 'virtual' key: {sorted(info)}"
        said[run.params["server"]] = info["virtual"]
    assert said == {"spring-tomcat@java25": False, "spring-tomcat+vt@java25": True}
    checks = {run.params["server"]: {c["setting"]: c["status"] for c in run.metadata["settings"]}
              for run in suite.records}
    assert checks["spring-tomcat+vt@java25"] == {"java": "ok", "virtual_threads": "ok"}


@pytest.mark.integration
def test_aot_starts_from_a_cache_trained_with_requests_and_a_cache_it_cannot_use_fails_the_start(tmp_path):
    run = benchlab.run("spring-undertow+aot@java25", "hello", results_dir=tmp_path / "ok", **SHORT)
    argv = run.metadata["backend"]["argv"]
    cache = run.metadata["launch"]["aot_cache"]
    assert run.metadata["launch"]["launch"] == "aot" and f"-XX:AOTCache={cache}" in argv and "-XX:AOTMode=on" in argv
    assert not any(a.startswith("-XX:SharedArchiveFile=") for a in argv), "the AOT cache replaces the CDS archive"
    training = (Path(cache).parent / "training.log").read_text()
    assert "$ wrk /hello" in training and "Requests/sec" in training, \
        "trained with real requests, not the refresh alone"
    assert run.to_frame()["aot"].tolist() == [True]
    # AOTMode=on is the proof: a cache the JVM cannot map stops the start instead of being ignored.
    bogus = tmp_path / "bogus.aot"
    bogus.write_bytes(b"not an AOT cache" * 64)
    refused = subprocess.run([JDK25, f"-XX:AOTCache={bogus}", "-XX:AOTMode=on", "-version"], capture_output=True,
                             text=True, timeout=60)
    assert refused.returncode != 0, refused.stderr


@pytest.mark.integration
def test_a_setting_the_server_did_not_take_fails_the_run_naming_asked_and_got(tmp_path, monkeypatch):
    """_JAVA_OPTIONS is read after the command line, so it overrides -Xmx: what verification is for.
    Needs the /info of the java branch (key 'heap_max_bytes')."""
    monkeypatch.setenv("_JAVA_OPTIONS", "-Xmx64m")
    suite = benchlab.compare(["spring-undertow+heap256m"], ["hello"], repeats=1, results_dir=tmp_path,
                             progress=False, **SHORT)
    record = suite.records[0]
    assert record.status == "failed", "a heap of 64m was taken for the 256m asked"
    assert "did not take its settings (heap asked '256m', got " in record.error
    assert record.metadata["settings"][0]["status"] == "mismatch"


@pytest.mark.integration
def test_server_cpus_as_a_factor_runs_the_server_on_one_core_here(tmp_path):
    """This machine has 2 cores: one for the server, the other for the load (more in the README)."""
    suite = benchlab.compare(["spring-jetty"], ["hello"], repeats=1, factors={"server_cpus": ["0"]},
                             results_dir=tmp_path, progress=False, **SHORT)
    assert suite.runs[["status", "server", "server_cpus", "load_cpus"]].values.tolist() == [
        ["ok", "spring-jetty", "0", "1"]]
    assert suite.records[0].metadata["backend"]["cpus"] == [0]
