"""A run's cell, named once (:func:`benchlab.schema.cell`): the summary, the verdicts, the flags, the precision
rule and the spec's key all split runs into the same cells, and every parameter of a run is in its cell or
said why not."""

from __future__ import annotations

import json

import pytest

import benchlab
from benchlab import schema
from benchlab.analysis import precision, stats
from benchlab.running.options import RunOptions
from benchlab.store.files import slug
from benchlab.store.results import Run, frame, save

BASE = {"scenario": "hello", "driver": "wrk", "load": "duration", "connections": 64, "threads": 1, "rate": None,
        "users": None, "loops": None, "duration": 2.0, "warmup": 1.0, "timeout": 10.0, "ramp_up": 0.0, "plan": None,
        "backend": "local", "server_cpus": [0], "load_cpus": [1], "load_cores": 1, "memory": None, "jvm_opts": [],
        "java": "java", "cds": True, "path": "/hello", "method": "GET", "backend_options": {}}


def stored(tmp_path, server: str, repeat: int, rps: float, **params) -> Run:
    name = slug(f"{server}-{repeat}-{'-'.join(f'{k}{v}' for k, v in params.items())}")
    run = Run(id=name, params={**BASE, "server": server, "repeat": repeat, "fork": name, "window": 1, **params},
              metrics={"rps": rps, "p50": 0.001, "p99": 0.004, "requests": int(rps * 2), "elapsed_s": 2.0},
              metadata={}, suite="s", started_at=f"2026-01-01T00:00:0{repeat}+00:00")
    folder = tmp_path / name
    folder.mkdir()
    save(run, folder)
    return run


def test_two_stored_runs_of_one_server_differing_only_in_pipeline_are_two_cells(tmp_path):
    # runs stored before pipelining (no pipeline key) and pipelined runs 16 deep, of two servers, 3 repeats
    for repeat in (1, 2, 3):
        for server, rps in (("spring-tomcat", 1000.0), ("spring-jetty", 1100.0)):
            stored(tmp_path, server, repeat, rps + repeat)
            stored(tmp_path, server, repeat, 8 * rps + repeat, pipeline=16)
    suite = benchlab.load(tmp_path)

    summary = suite.summary(["rps"])
    tomcat = summary[summary["server"] == "spring-tomcat"]
    assert len(tomcat) == 2, "one row a cell: pipelined 16 deep, and not"
    assert sorted(tomcat["pipeline"]) == [1, 16]
    assert sorted(tomcat["n"]) == [3, 3]
    assert sorted(tomcat["mean"].round()) == [1002.0, 8002.0]  # never one mean of both depths

    verdicts = suite.verdicts(baseline="spring-tomcat")
    assert len(verdicts) == 2, "jetty against tomcat in each cell"
    assert sorted(verdicts["pipeline"]) == [1, 16]
    assert all(abs(c - 0.1) < 0.01 for c in verdicts["change"])

    cell_flags = suite.flags()
    assert "high_cv" not in set(cell_flags["flag"])  # pooled, 1000 and 8000 would vary by far more than 5%


def test_a_run_stored_without_a_newer_parameter_is_in_the_cell_of_a_new_run_at_its_old_value(tmp_path):
    old = {k: v for k, v in BASE.items() if k not in ("ramp_up", "plan", "backend_options")}
    for repeat in (1, 2):
        run = Run(id=f"old-{repeat}", params={**old, "server": "spring-tomcat", "repeat": repeat}, metadata={},
                  metrics={"rps": 1000.0 + repeat}, started_at=f"2026-01-01T00:00:0{repeat}+00:00")
        (tmp_path / run.id).mkdir()
        save(run, tmp_path / run.id)
    stored(tmp_path, "spring-tomcat", 3, 1003.0, pipeline=1, keepalive=True,
           backend_options={"docker_host": "unix:///elsewhere.sock"})
    summary = benchlab.load(tmp_path).summary(["rps"])
    assert len(summary) == 1 and summary["n"].iloc[0] == 3
    assert schema.cell({}) == schema.cell({"pipeline": 1, "keepalive": True, "ramp_up": 0.0})


def test_the_precision_rule_splits_runs_into_the_summarys_cells(tmp_path):
    records = [stored(tmp_path, server, repeat, rps * (1 + 0.01 * repeat), **params)
               for repeat in (1, 2, 3) for server, rps in (("spring-tomcat", 1000.0), ("spring-jetty", 1200.0))
               for params in ({}, {"pipeline": 16}, {"keepalive": False}, {"threads": 2},
                              {"backend_options": {"docker_host": "unix:///other.sock"}})]
    summary = stats.summary(frame(records), ["rps"])
    windows = precision._windows(records)
    assert len(windows) == len(summary) // 2 == 4  # the docker host is where an engine is reached, not a setup
    assert {len(servers) for servers in windows.values()} == {2}


def test_every_parameter_a_run_stores_is_in_its_cell_or_said_why_not():
    import dataclasses

    from benchlab.running import spec as specs
    from benchlab.running.options import DOCKER_OPTIONS

    spec = specs.prepare("spring-tomcat", "hello", RunOptions(server_cpus=[0], load_cpus=[1], pipeline=4,
                                                              keepalive=True, load_hosts=["local", "local"]),
                          tools=False)
    spec = dataclasses.replace(spec, host="unix:///b.sock")  # a run of compare(hosts=...) stores its host
    stored_keys = {*spec.params(), "window", "fork"} - {"backend_options"} | set(DOCKER_OPTIONS)
    in_cell = set(schema.CELL) - {"label"}
    said = set(schema.NOT_CELL)
    assert not in_cell & said, "a parameter is either in the cell or not"
    assert stored_keys <= in_cell | said, f"decide: {sorted(stored_keys - in_cell - said)}"
    assert said <= stored_keys | set(schema.SETTINGS), f"no longer stored: {sorted(said - stored_keys)}"


@pytest.mark.parametrize("change, same", [({"server": "spring-jetty"}, True), ({"pipeline": 16}, False),
                                           ({"threads": 2}, False), ({"connections": 32}, False)])
def test_the_specs_cell_key_is_the_cell(change, same):
    from benchlab.running import spec as specs

    options = {"server_cpus": [0], "load_cpus": [1], "threads": 1, "connections": 64}
    server = change.pop("server", "spring-tomcat")
    one = specs.prepare("spring-tomcat", "hello", RunOptions.of(**options), tools=False)
    other = specs.prepare(server, "hello", RunOptions.of(**{**options, **change}), tools=False)
    assert (one.cell_key() == other.cell_key()) is same
    assert json.loads(json.dumps(schema.cell(one.params()))) == schema.cell(one.params())
