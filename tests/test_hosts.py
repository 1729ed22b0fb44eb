"""compare(hosts=[a, b]) on two real docker engines started by .ci/dockerd.sh, standing for two machines.

The first engine is the session's (``$DOCKER_HOST``, or one the conftest starts); the second, ``benchlab-remote``, is
started here and stopped here by its own command. The server images reach it offline, saved from the first engine
and loaded into the second (``images.copy``: ``docker save | docker load`` through the SDK). Real servers, real
wrk, short windows.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import pytest

import benchlab
from benchlab.errors import UsageError
from benchlab.running import servers
from benchlab.running.backends.docker import engine, images, native_images

pytestmark = [pytest.mark.integration, pytest.mark.docker]

ROOT = Path(__file__).resolve().parent.parent
SERVERS = ["spring-jetty", "spring-undertow"]
DESIGN = dict(scenarios=["hello"], connections=[16], repeats=4, duration="2s", warmup="2s", progress=False)


def dockerd(action: str, name: str) -> str:
    done = subprocess.run(["bash", str(ROOT / ".ci" / "dockerd.sh"), action, name], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


@pytest.fixture(scope="module")
def engines(docker_engine, jars):
    """(a, b): the session's engine, holding the servers' images, and a second one started here."""
    a = docker_engine
    first = engine.connect(a)
    for server in SERVERS:
        native_images.build(first, server)  # built only if its inputs changed
    b = dockerd("start", "benchlab-remote")
    yield a, b
    dockerd("stop", "benchlab-remote")


def test_a_host_without_the_images_is_refused_then_given_them_offline(engines, tmp_path):
    a, b = engines
    first, second = engine.connect(a), engine.connect(b)
    tags = [images.base_tag(), *(images.server_tag_on(first, servers.get(s)) for s in SERVERS)]
    for tag in reversed(tags):  # servers first: the base has them as children
        if images._find(second, tag) is not None:
            second.images.remove(tag, force=True)
    results = tmp_path / "refused"
    with pytest.raises(UsageError, match=rf"^host {b} lacks the image .* of spring-jetty: build it there .*"
                                         rf"docker -H {b} load\)$"):
        benchlab.compare(SERVERS, hosts=[a, b], results_dir=str(results), **DESIGN)
    assert not results.exists(), "nothing is written before every host is checked"
    images.copy(first, second, tags)
    assert all(native_images.lacking(second, s) == [] for s in SERVERS)
    assert [second.images.get(t).id for t in tags] == [first.images.get(t).id for t in tags], "the same images"


def _whole_rounds(suite) -> dict[int, str]:
    """Each round's host; fails if a round ran on two hosts or a run names none."""
    runs = suite.runs
    assert runs["host"].notna().all(), "every run names its host"
    hosts = runs.groupby("repeat")["host"].agg(set).to_dict()
    assert all(len(h) == 1 for h in hosts.values()), f"a round ran across hosts: {hosts}"
    return {int(r): next(iter(h)) for r, h in hosts.items()}


def test_two_hosts_run_whole_rounds_and_the_verdict_pairs_by_round(engines, tmp_path):
    a, b = engines
    suite = benchlab.compare(SERVERS, hosts=[a, b], results_dir=str(tmp_path), **DESIGN)
    assert len(suite.runs) == 8 and (suite.runs["status"] == "ok").all()
    by_round = _whole_rounds(suite)
    assert sorted(by_round) == [1, 2, 3, 4] and set(by_round.values()) == {a, b}, by_round
    ran = suite.hosts().set_index("host")
    assert ran["rounds"].to_dict() == {h: list(by_round.values()).count(h) for h in (a, b)}
    assert ran.loc[b, "runs"] == 2 * ran.loc[b, "rounds"]
    assert all(r.metadata["backend"]["docker_host"] == r.params["host"] for r in suite.records), "ran where it says"
    verdict = suite.verdicts(alpha=0.2).iloc[0]  # 4 rounds reach a paired test at 0.2 (6 are needed at 0.05)
    assert verdict["judged"] and verdict["test"] == "Wilcoxon signed-rank", verdict["verdict"]
    assert "rounds by host" in str(suite)


def test_pairs_run_the_load_in_a_container_on_each_hosts_load_engine(engines, tmp_path):
    a, b = engines
    first, second = engine.connect(a), engine.connect(b)
    wrk = images.build_wrk(first).tag
    if images._find(second, wrk) is None:
        images.copy(first, second, [wrk])
    pairs = [f"{a}+{a}", f"{b}+{b}"]
    suite = benchlab.compare(SERVERS[:1], hosts=pairs, results_dir=str(tmp_path), **{**DESIGN, "repeats": 2})
    assert set(_whole_rounds(suite).values()) == set(pairs) and (suite.runs["status"] == "ok").all()
    assert suite.runs["load_in_container"].all()
    for record in suite.records:
        backend = record.metadata["backend"]
        assert backend["load_docker_host"] == record.params["host"].split("+")[1] and record.metrics["load_samples"]


def test_a_host_stopped_mid_way_has_its_round_run_on_the_other(engines, tmp_path, caplog):
    a, b = engines
    stopping: list[threading.Thread] = []

    def on_run(record) -> None:  # called as each whole round is kept: b's first one stops b's engine
        if record.params.get("host") == b and not stopping:
            stopping.append(threading.Thread(target=dockerd, args=("stop", "benchlab-remote")))
            stopping[0].start()

    suite = benchlab.compare(SERVERS, hosts=[a, b], results_dir=str(tmp_path), on_run=on_run, **DESIGN)
    stopping[0].join(120)
    said = caplog.text  # the benchlab log's warning (the command line writes it to stderr)
    assert f"benchlab: host {b} stopped answering during round" in said, said[-2000:]
    lost = int(said.split("stopped answering during round ")[1].split(":")[0])
    by_round = _whole_rounds(suite)
    assert sorted(by_round) == [1, 2, 3, 4] and (suite.runs["status"] == "ok").all()
    assert by_round[lost] == a, "b's unfinished round ran again on a"
    assert list(by_round.values()).count(b) >= 1, "b's finished round is kept"
    stored = benchlab.load(str(tmp_path)).runs
    assert len(stored) == 8 and set(stored["host"]) == {a, b}, "on disk: every round once, b's finished one too"
