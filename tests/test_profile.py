"""Profiles of measured windows, end to end: a real Spring server's fork ends with one window under async-profiler,
loaded into its JVM through the attach mechanism when the load starts and stopped when it ends; the stacks are
stored beside the run, read back, and show the server's own request handling; the window enters no statistic."""

from __future__ import annotations

import gzip

import pytest

import benchlab
from benchlab.analysis import validity
from benchlab.running import profiler

pytestmark = pytest.mark.integration


def _stacks(run) -> dict[str, int]:
    found: dict[str, int] = {}
    with gzip.open(f"{run.directory}/{profiler.FILE}", "rt") as text:
        for stack, _, count in (line.rpartition(" ") for line in text if line.strip()):
            found[stack] = found.get(stack, 0) + int(count)  # async-profiler may write one stack on two lines
    return found


def test_a_fork_ends_with_a_profiled_window_of_the_server_s_own_work(jars, tmp_path, no_jvm_left):
    suite = benchlab.compare(["spring-undertow"], ["hello"], connections=[16], repeats=1, windows=2, duration="3s",
                             warmup="15s", profile=True, results_dir=tmp_path, progress=False)
    again = benchlab.load(tmp_path)  # stored and read back
    profiled = [r for r in again.records if r.metrics.get("profiled") and r.status == "ok"]  # retakes aside
    plain = [r for r in again.records if not r.metrics.get("profiled") and r.status == "ok"]
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
    assert suite.summary(metrics=("rps",))["windows"].iloc[0] >= 1
