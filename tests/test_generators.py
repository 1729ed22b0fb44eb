"""One load spread over two generators (``load_hosts``), against a real Spring server: the merged run is exactly theirs.

The truth is each generator's own output, kept in its folder ``generator-<k>``: wrk's every recorded latency and
its count (its Lua reporter's line), vegeta's every result (``vegeta encode``). The run's request count is the sum
of theirs; its p99 is the nearest-rank p99 of their latencies put together, within the histograms' 0.5%; its lowest
and highest latencies are theirs exactly. Short windows (2 s), a fixed 1 s warm-up and no retakes keep each test
to seconds. The splitting, pooling and flag rules are checked without any process first.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

import benchlab
from benchlab.analysis import flags
from benchlab.running import generators, process
from benchlab.running.drivers import latency, vegeta, wrk
from benchlab.running.load import Load
from benchlab.schema import SECONDS
from benchlab.store import histogram

PRECISION = 0.005  # a histogram's bucket stands for every latency within 0.5% of it
SHORT = {"duration": "2s", "warmup": "1s", "retakes": 0, "server_cpus": [0], "load_cpus": [1]}


# --- without a process -------------------------------------------------------------------------------------

def test_connections_and_rates_split_as_evenly_as_whole_numbers_allow():
    split = generators.plan(("local", "local", "unix:///x.sock"), Load(connections=10, threads=4), (1, 2, 3))
    assert [g.load.connections for g in split] == [4, 3, 3] and [g.load.threads for g in split] == [4, 3, 3]
    assert [g.cpus for g in split] == [(1, 2), (3,), (1, 2, 3)]  # the local ones share the cores out
    rated = generators.plan(("local",) * 3, Load(model="rate", rate=100.5), (1,))
    assert [g.load.rate for g in rated] == [34.5, 33.0, 33.0] and all(g.shared_cores for g in rated)


def test_the_pooled_deviation_is_that_of_the_values_together():
    values = [[0.001, 0.004, 0.002], [0.010, 0.003]]
    groups = [(len(v), sum(v) / len(v), latency.summary(v)["lat_stdev"]) for v in values]
    assert generators.pooled_stdev(groups) == pytest.approx(latency.summary(values[0] + values[1])["lat_stdev"])


def test_each_generator_is_judged_on_its_own_cores():
    # two generators on one core each, 50% and 95% busy: together 145% of "the load", the second one bound
    row = {"load_cpu_mean": 145.0, "threads": 1, "load_cores": 2, "generators": 2, "generator_busy": 0.95,
           "generator_cores": 1}
    found = dict(flags.run_flags(row))
    assert "95% busy on the 1 core(s)" in found["generator_bound"] and "busiest of 2" in found["generator_bound"]
    assert "generator_bound" not in dict(flags.run_flags({**row, "generator_busy": 0.5}))


# --- a real server, two generators ------------------------------------------------------------------------

def _wrk_truth(folder: Path) -> tuple[int, list[float], list[int]]:
    """A wrk generator's own request count, and its every recorded latency (s) with its count, from its output."""
    out = (folder / "wrk.out").read_text()
    report = json.loads(next(line for line in out.splitlines() if line.startswith(wrk.MARK))[len(wrk.MARK):])
    line = next(line for line in out.splitlines() if line.startswith(wrk.DISTRIBUTION))
    pairs = [pair.split(":") for pair in line[len(wrk.DISTRIBUTION):].split(",") if pair]
    return int(report["requests"]), [int(v) * SECONDS["us"] for v, _ in pairs], [int(c) for _, c in pairs]


def _vegeta_truth(folder: Path) -> tuple[int, list[float], list[int]]:
    """A vegeta generator's own request count, and its every result's latency (s), from its results file."""
    tool = vegeta.Vegeta().executable()
    report = json.loads(process.run([tool, "report", "-type=json", str(folder / "vegeta-measure.bin")],
                                    timeout=60).stdout)
    table = process.run([tool, "encode", "-to=csv", str(folder / "vegeta-measure.bin")], timeout=60).stdout
    seconds = [int(row.split(",")[2]) * SECONDS["ns"] for row in table.splitlines() if row]
    return int(report["requests"]), seconds, [1] * len(seconds)


def _nearest_rank(values: list[float], counts: list[int], q: float) -> float:
    ordered = sorted(zip(values, counts))
    rank, seen = max(1, math.ceil(round(q * sum(counts) / 100.0, 9))), 0
    for value, count in ordered:
        seen += count
        if seen >= rank:
            return value
    return ordered[-1][0]


def _check_merged(run, truth) -> list[dict]:
    """The run's counts are the sum of its generators' own, its latency their concatenated latencies'."""
    folder = Path(run.directory)
    found = run.metadata["generators"]
    assert run.status == "ok" and run.params["generators"] == 2 and [g["folder"] for g in found] == [
        "generator-1", "generator-2"]
    own = [truth(folder / g["folder"]) for g in found]
    assert all(requests > 0 for requests, _, _ in own)
    assert run.metrics["requests"] == sum(requests for requests, _, _ in own) == sum(g["requests"] for g in found)
    values = [v for _, vs, _ in own for v in vs]
    counts = [c for _, _, cs in own for c in cs]
    assert histogram.read(folder).count == sum(counts)  # the merged histogram holds every latency of both
    for name, q in (("p50", 50.0), ("p99", 99.0)):
        exact = _nearest_rank(values, counts, q)
        assert abs(run.metrics[name] - exact) <= PRECISION * exact, (name, run.metrics[name], exact)
    assert run.metrics["lat_max"] == pytest.approx(max(values)) and run.metrics["lat_min"] == pytest.approx(min(values))
    assert all(g["cpu_samples"] > 0 and g["busy"] is not None for g in found), found  # each watched on its own
    assert run.metrics["generator_busy"] == pytest.approx(max(g["busy"] for g in found), abs=1e-4)
    return found


@pytest.mark.integration
def test_two_wrk_generators_make_one_run(jars, tmp_path, no_jvm_left):
    run = benchlab.run("spring-undertow", "hello", connections=16, load_hosts=["local", "local"],
                       results_dir=tmp_path, **SHORT)
    found = _check_merged(run, _wrk_truth)
    assert [g["connections"] for g in found] == [8, 8] and all(g["shared_cores"] for g in found)  # one load core


@pytest.mark.integration
def test_two_vegeta_generators_make_one_run(jars, tmp_path, no_jvm_left):
    run = benchlab.run("spring-undertow", "hello", load="rate", rate=401, load_hosts="local,local",
                       results_dir=tmp_path, **SHORT)
    found = _check_merged(run, _vegeta_truth)
    assert [g["rate"] for g in found] == [201.0, 200.0] and run.metrics["target_rps"] == 401.0


@pytest.mark.integration
@pytest.mark.docker
def test_a_generator_in_a_container_beside_a_local_one(jars, docker_engine, tmp_path, no_jvm_left):
    run = benchlab.run("spring-undertow", "hello", connections=16, load_hosts=["local", docker_engine],
                       results_dir=tmp_path, **SHORT)
    found = _check_merged(run, _wrk_truth)
    assert [g["host"] for g in found] == ["local", docker_engine]
    import docker

    client = docker.DockerClient(base_url=docker_engine)
    assert not client.containers.list(all=True, filters={"label": f"benchlab.run={Path(run.directory).name}"})


@pytest.mark.integration
def test_an_interrupt_while_two_generators_load_leaves_nothing_behind(jars, tmp_path, monkeypatch):
    mark = uuid.uuid4().hex
    monkeypatch.setenv("BENCHLAB_TEST_MARK", mark)

    def ours(name: str | None = None) -> list[psutil.Process]:
        found = []
        for proc in psutil.process_iter(["pid", "name"]):
            try:
                if proc.environ().get("BENCHLAB_TEST_MARK") == mark and proc.pid != os.getpid():
                    if name is None or proc.name() == name:
                        found.append(proc)
            except (psutil.Error, OSError):
                continue
        return found

    argv = [sys.executable, "-m", "benchlab", "run", "--server", "spring-undertow", "--connections", "8",
            "--duration", "30s", "--warmup", "0", "--load-hosts", "local,local", "--server-cpus", "0",
            "--load-cpus", "1", "--results-dir", str(tmp_path / "results")]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=Path(__file__).resolve().parent.parent, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(ours("wrk")) < 2:  # both generators loading: the measured window (no warm-up)
            assert child.poll() is None and time.monotonic() < deadline, child.stderr.read() if child.stderr else ""
            time.sleep(0.1)
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 130 and "Traceback" not in stderr, stderr
    deadline = time.monotonic() + 15
    while ours() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not ours(), [(p.pid, p.name()) for p in ours()]
    assert not list((tmp_path / "results").glob("*/run.json")), "an interrupted run is not a result"
