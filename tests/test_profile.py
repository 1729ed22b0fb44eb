"""Profiles of measured windows, end to end: each fork of two real Spring servers ends with one window under
async-profiler, loaded into its JVM through the attach mechanism when the load starts and stopped when it ends; the
stacks are stored beside the run, read back, and show the server's own request handling; the window enters no
statistic; the terminal, the export and the report (compare.ipynb re-rendered, charts drawn offline) say where
each server's CPU went."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

import benchlab
from benchlab.analysis import profiles, validity
from benchlab.running import profiler

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
SERVERS = ["spring-tomcat", "spring-undertow"]


@pytest.fixture(scope="module")
def profiled_runs(tmp_path_factory, jars) -> Path:
    results = tmp_path_factory.mktemp("profiled")
    benchlab.compare(SERVERS, ["hello"], connections=[16], repeats=1, windows=2, duration="3s", warmup="15s",
                     profile=True, results_dir=results, progress=False)
    return results


def _stacks(run) -> dict[str, int]:
    found: dict[str, int] = {}
    with gzip.open(f"{run.directory}/{profiler.FILE}", "rt") as text:
        for stack, _, count in (line.rpartition(" ") for line in text if line.strip()):
            found[stack] = found.get(stack, 0) + int(count)  # async-profiler may write one stack on two lines
    return found


def test_a_fork_ends_with_a_profiled_window_of_the_server_s_own_work(profiled_runs):
    again = benchlab.load(profiled_runs)  # stored and read back
    mine = [r for r in again.records if r.params["server"] == "spring-undertow"]
    profiled = [r for r in mine if r.metrics.get("profiled") and r.status == "ok"]  # retakes aside
    plain = [r for r in mine if not r.metrics.get("profiled") and r.status == "ok"]
    assert len(profiled) == 1 and len(plain) >= 2, [r.id for r in again.records]
    run = profiled[0]
    assert run.id.endswith("-profile") and run.params["window"] == 3 and run.params["fork"] == plain[0].params["fork"]
    assert profiler.FILE in run.files and not any(profiler.FILE in r.files for r in plain), \
        "only the profiled window carries stacks: the profiler was not running in the others"
    record = run.metadata["profile"]
    assert record["tool"] == "async-profiler" and record["event"] == "cpu" and record["format"] == profiler.FORMAT
    stacks = _stacks(run)
    samples = sum(stacks.values())
    assert samples == record["samples"] == run.metrics["profile_samples"]
    # one sample a millisecond of the server's CPU: the samples are the window's CPU, not the warm-up's as well
    assert 0.6 < samples / (run.metrics["server_cpu_s"] * 1000) < 1.3, (samples, run.metrics["server_cpu_s"])
    assert record["seconds"] < 3 + 2, "started at the load's start, stopped at its end"
    handling = sum(n for stack, n in stacks.items() if "io/undertow/server" in stack)
    assert handling / samples > 0.2, "Undertow's own request handling is a large part of a hello window's CPU"
    kernel = sum(n for stack, n in stacks.items() if stack.split(";")[-1].endswith("_[k]"))
    assert kernel / samples > 0.05, "the socket's system calls are sampled with their kernel frames"
    # it enters no statistic, and says why
    standing = dict(zip(again.runs["id"], validity.standing(again.runs)))
    assert standing[run.id].startswith("left out (") and "profiled" in standing[run.id]
    assert "profiled" in set(again.flags()["flag"])


def test_the_profiles_are_read_by_layer_shown_and_exported(profiled_runs, tmp_path, capsys):
    from benchlab import cli

    suite = benchlab.load(profiled_runs)
    stacks = suite.profiles
    assert set(stacks["server"]) == set(SERVERS)
    assert ((stacks.groupby("server")["share"].sum() - 1).abs() < 1e-9).all()
    tomcat = stacks[stacks["server"] == "spring-tomcat"]
    assert tomcat[tomcat["stack"].str.contains("org/apache/coyote")]["share"].sum() > 0.1
    assert ((profiles.layers(stacks).groupby("server")["share"].sum() - 1).abs() < 1e-9).all()
    difference = suite.layers()
    assert set(difference["server"]) == {"spring-undertow"} and difference["difference"].map(math.isfinite).all()
    assert difference["difference"].sum() == pytest.approx(
        difference["us_per_request"].sum() - difference["baseline_us_per_request"].sum())
    slowed = profiles.slowdown(suite.runs)
    assert slowed["ratio"].dropna().between(0.3, 1.5).all()
    assert cli.main(["show", str(profiled_runs), "--profiles", str(tmp_path / "out")]) == 0
    shown = capsys.readouterr().out
    assert "where the CPU went" in shown and "spring-undertow vs spring-tomcat:" in shown
    speedscope = json.loads((tmp_path / "out" / "spring-tomcat.speedscope.json").read_text())
    assert sum(speedscope["profiles"][0]["weights"]) == tomcat["samples"].sum()
    assert (tmp_path / "out" / "spring-undertow.collapsed").stat().st_size > 0


def test_the_report_draws_each_server_s_icicle_and_the_layers_offline(profiled_runs, tmp_path):
    import nbformat

    from benchlab import report

    done = report.execute(ROOT / "notebooks" / "compare.ipynb", {"measure": False, "results_dir": str(profiled_runs)},
                          output=tmp_path / "why.ipynb")
    assert "Why one server is faster" in done.html.read_text()
    notebook = nbformat.read(str(done.ipynb), as_version=4)
    outputs = [o for cell in notebook.cells for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o["output_type"] == "error"]
    assert not any("no profile:" in json.dumps(o) for o in outputs), "the section drew the profiles"
    charts = [json.dumps(o["data"][report.VEGALITE_MIMETYPE]) for o in outputs
              if report.VEGALITE_MIMETYPE in o.get("data", {})]
    drawn = [c for c in charts if "us_per_request" in c]
    assert len(drawn) >= 2, "the layers' differences and the icicles, drawn as interactive charts"
    assert any("kernel and syscalls" in c and "spring-undertow" in c for c in drawn)
