"""compare() end to end with real servers and wrk: the matrix, storage, interruption and resume."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

import benchlab

from .conftest import benchlab_jvms

pytestmark = pytest.mark.integration

SERVERS = ["spring-tomcat", "spring-jetty", "spring-undertow"]


def test_three_servers_two_repeats(jars, tmp_path, no_jvm_left):
    suite = benchlab.compare(SERVERS, ["hello"], [16], repeats=2, duration="2s", warmup="1s", results_dir=tmp_path,
                             progress=False)
    # a window disturbed by anything else on the machine is kept as "retaken" and measured again: not counted here
    runs = suite.runs[suite.runs["status"] != "retaken"]
    assert len(runs) == 6 and (runs["status"] == "ok").all() and (runs["rps"] > 0).all()
    # interleaved: every server once per repeat, in the same order each time
    order = runs.sort_values("started_at")[["server", "repeat"]].values.tolist()
    assert [s for s, _ in order] == SERVERS * 2 and [r for _, r in order] == [1, 1, 1, 2, 2, 2]
    assert set(runs["server_impl"]) == {"tomcat", "jetty", "undertow"}
    summary = suite.summary(["rps", "p99"])
    assert len(summary) == 6
    # a 1 s warm-up leaves the JIT compiling in most windows: the one rule leaves those out, and a side left with no
    # clean fork is shown but not judged (no ratio); a judged side counts its clean forks
    judged = summary[summary["judged"]]
    assert (judged["n"] + judged["left_out"] == 2).all() and (summary.loc[~summary["judged"], "n"] == 2).all()
    base = summary[(summary.server == "spring-tomcat") & summary["judged"]]
    assert base["ratio"].tolist() == [1.0] * len(base)
    verdicts = suite.verdicts()
    assert len(verdicts) == 2 and verdicts["verdict"].str.contains(" vs spring-tomcat: ").all()
    table = suite.table("rps")
    assert list(table.index) == SERVERS and list(table.columns[:3]) == ["fork 1", "fork 2", "mean"]
    assert set(suite.samples["role"]) == {"server", "load", "benchlab"}  # benchlab: its own process
    assert len(kept(tmp_path)) == 6
    again = benchlab.load(tmp_path)
    assert sorted(again.runs["id"]) == sorted(suite.runs["id"])
    shown = subprocess.run([sys.executable, "-m", "benchlab", "show", str(tmp_path)], capture_output=True, text=True,
                           timeout=120)
    assert shown.returncode == 0 and "per-fork requests/s" in shown.stdout and " vs spring-tomcat" in shown.stdout


COMPARE = """
import benchlab
benchlab.compare(["spring-tomcat", "spring-undertow"], ["hello"], [8], repeats=1, duration="2s", warmup="0",
                 results_dir={results!r}, progress=False)
"""


def kept(results) -> list:
    """The run.json of every window kept: not those of the disturbed windows measured again (``<id>-retaken<k>``)."""
    return [p for p in results.glob("*/run.json") if "-retaken" not in p.parent.name]


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "killed-kernel"])
def test_interrupted_compare_keeps_runs_and_resumes(jars, tmp_path, no_jvm_left, how):
    results = tmp_path / "results"
    child = subprocess.Popen([sys.executable, "-c", COMPARE.format(results=str(results))],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not kept(results) and time.monotonic() < deadline:
            assert child.poll() is None, child.stderr.read()
            time.sleep(0.1)
        while not (list(results.glob("*undertow*/server.log")) and benchlab_jvms()) and time.monotonic() < deadline:
            time.sleep(0.1)  # the second server is starting: interrupt it there
        child.send_signal(how)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    time.sleep(1.0)
    assert not benchlab_jvms(), "the interrupted compare left a JVM behind"
    finished = kept(results)
    assert len(finished) == 1
    first = json.loads(finished[0].read_text())
    assert first["status"] == "ok" and first["params"]["server"] == "spring-tomcat"

    suite = benchlab.compare(["spring-tomcat", "spring-undertow"], ["hello"], [8], repeats=1, duration="2s",
                             warmup="0", results_dir=results, progress=False)
    runs = suite.runs[suite.runs["status"] != "retaken"]
    assert (runs["status"] == "ok").all() and len(runs) == 2
    tomcat = runs.set_index("server").loc["spring-tomcat"]
    assert tomcat["started_at"] == first["started_at"], "the completed run was not run again"
    assert len(kept(results)) == 2


def test_a_cell_that_fails_every_repeat_is_reported_and_the_rest_go_on(jars, tmp_path, no_jvm_left):
    broken = benchlab.Server.from_command([sys.executable, "-c", "import sys; sys.exit(3)", "{port}"], name="broken")
    suite = benchlab.compare([broken, "spring-jetty"], ["/hello"], [4], repeats=1, duration="1s", warmup=0,
                             results_dir=tmp_path, progress=False, baseline="spring-jetty")
    status = suite.runs.set_index("server")["status"]
    assert status["broken"] == "failed" and status["spring-jetty"] == "ok"
    flags = suite.flags()
    assert {"failed", "all_failed"} <= set(flags.loc[flags.server == "broken", "flag"])
    assert "exited during start" in suite.runs.set_index("server").loc["broken", "error"]


def test_restart_never_keeps_one_server_for_its_runs(jars, tmp_path, no_jvm_left):
    suite = benchlab.compare(["spring-undertow"], ["hello"], [4], repeats=2, duration="1s", warmup=0,
                             restart="never", results_dir=tmp_path, progress=False)
    pids = {record.metadata["backend"]["pid"] for record in suite.records}
    assert len(suite.runs) == 2 and (suite.runs["status"] == "ok").all()
    assert len(pids) == 1, "both repeats ran against the same server process"


def test_rate_sweep_and_count_cells(jars, tmp_path, no_jvm_left):
    """A rate sweep (vegeta) and JMeter-style users x loops cells (h2load, named) through the same compare()."""
    rates = benchlab.compare(["spring-jetty"], ["hello"], load="rate", rates=[100, 300], repeats=1, duration="2s",
                             warmup="1s", results_dir=tmp_path / "rates", progress=False)
    runs = rates.runs.set_index("rate")
    assert sorted(runs.index) == [100.0, 300.0] and (runs["driver"] == "vegeta").all()
    assert runs.loc[300.0, "target_rps"] == 300 and runs.loc[300.0, "rps"] > 0.9 * 300
    counts = benchlab.compare(["spring-undertow"], ["hello"], load="count", users=[4, 8], loops=[50, 25], repeats=1,
                              warmup="1s", driver="h2load", results_dir=tmp_path / "counts", progress=False)
    kept = counts.runs[counts.runs["status"] != "retaken"]  # a window disturbed on a busy machine is measured again
    assert sorted(kept["users"]) == [4, 8] and (counts.runs["requests"] == 200).all()
    assert (counts.runs["driver"] == "h2load").all()
    assert all((tmp_path / "counts" / run_id / "wrk.lua").exists() for run_id in kept["id"]), \
        "wrk warmed the server before the count load"


def test_forks_of_several_windows_warm_once_and_the_statistics_take_fork_means(jars, tmp_path, no_jvm_left):
    # 2 forks of each server, 3 windows each: one JVM a fork (the same PID in its windows, warmed once, the
    # curve kept in its first window), 12 runs stored, and every figure over forks, not windows.
    servers = ["spring-tomcat", "spring-jetty"]
    suite = benchlab.compare(servers, ["hello"], [16], repeats=2, windows=3, duration="2s", warmup="1s",
                             results_dir=tmp_path, progress=False)
    runs = suite.runs[suite.runs["status"] != "retaken"]  # a window disturbed on a busy machine is measured again
    assert len(runs) == 12 and (runs["status"] == "ok").all()
    forks = runs.groupby("fork")
    assert forks.ngroups == 4 and (forks.size() == 3).all()
    assert all(sorted(group["window"]) == [1, 2, 3] for _, group in forks)
    for _, group in forks:
        records = [r for r in suite.records if r.params["fork"] == group["fork"].iloc[0] and r.status != "retaken"]
        assert len({r.metadata["backend"]["pid"] for r in records}) == 1, "one server process a fork"
        assert len({r.params["repeat"] for r in records}) == 1
        first = next(r for r in records if r.params["window"] == 1)
        assert "slices" in first.metadata["warmup"] and all(
            "slices" not in r.metadata["warmup"] for r in records if r is not first)
    pids = {r.metadata["backend"]["pid"] for r in suite.records}
    assert len(pids) == 4, "a fresh server for each fork"
    summary = suite.summary(["rps"]).set_index("server")
    assert (summary["n"] == 2).all() and (summary["windows"] == 6).all()
    assert summary["within_cv"].notna().all() and summary["between_cv"].notna().all()
    means = runs.groupby(["server", "fork"], sort=False)["rps"].mean()
    assert summary.loc["spring-tomcat", "mean"] == pytest.approx(means["spring-tomcat"].mean())
    table = suite.table("rps")
    from benchlab.analysis import validity

    # the every-run table counts the windows the one rule lets in (a 1 s warm-up leaves a JIT compiling: maybe none)
    standing = suite.runs.assign(standing=validity.standing(suite.runs))
    used = standing[standing["standing"] == "used"].groupby("server").size()
    assert list(table.columns[:2]) == ["fork 1", "fork 2"]
    assert all(table.loc[server, "windows"] == used.get(server, 0) for server in servers), (table, used)
    from benchlab.present import header

    assert "2 per server and setup, each a fork of 3 measured windows" in str(header.measured(suite))
    assert suite.wall_s is not None and suite.wall_s > 12
    # resumed: everything is found, nothing runs
    again = benchlab.compare(servers, ["hello"], [16], repeats=2, windows=3, duration="2s", warmup="1s",
                             results_dir=tmp_path, progress=False)
    assert sorted(again.runs["id"]) == sorted(runs["id"])
    assert sorted(again.runs["started_at"]) == sorted(runs["started_at"])


def test_a_fork_whose_server_dies_keeps_its_finished_windows_and_fails_the_rest(tmp_path):
    # The server dies 6 s after its start: its first window (1 s warm-up, 2 s) is done, a later one is not.
    from pathlib import Path

    fixture = Path(__file__).parent / "fixtures" / "warming_server.py"
    dying = benchlab.Server.from_command([sys.executable, str(fixture), "{port}", "0", "6"], name="dying", path="/")
    suite = benchlab.compare([dying], ["/"], [4], repeats=1, windows=5, duration="2s", warmup="1s",
                             results_dir=tmp_path, progress=False)
    runs = suite.runs.sort_values("window")
    ok, failed = runs[runs["status"] == "ok"], runs[runs["status"] == "failed"]
    assert len(ok) >= 1 and len(failed) == 1 and len(runs) == len(ok) + 1 <= 5
    assert "died" in failed["error"].iloc[0]
    assert list(ok["window"]) == list(range(1, len(ok) + 1)), "the windows before the death are kept"
    assert "failed" in set(suite.flags()["flag"]) and suite.summary(["rps"])["n"].tolist() == [1]


def test_interleaved_windows_keep_a_rounds_forks_running_and_take_their_windows_in_turn(jars, tmp_path, no_jvm_left):
    # One round of two servers, 3 windows each: both JVMs run at once, their windows alternate (Tomcat, Jetty;
    # Jetty, Tomcat; Tomcat, Jetty), the fork warmed first is resumed before its first window, and each fork
    # says what it cost before it could measure. No retakes: the order of the windows is the subject here, and a
    # window measured again on a busy machine would add to it (retakes have their own tests in test_machine.py).
    servers = ["spring-tomcat", "spring-jetty"]
    slices, stages = [], []
    suite = benchlab.compare(servers, ["hello"], [16], repeats=1, windows=3, interleave="windows", duration="2s",
                             warmup="1s", retakes=0, results_dir=tmp_path, progress=False, on_slice=slices.append,
                             on_progress=lambda bar: stages.append(bar.stage))
    runs = suite.runs.sort_values("started_at")
    # what a live view and the panel are fed: the resumed slice as it ended, then the windows' seconds as they are
    # measured, each named by its run and window; each phase as said
    assert [(s["run"], s["phase"]) for s in slices if s["phase"] == "resume"] == [("spring-tomcat hello c16 r1",
                                                                                  "resume")], slices
    assert [s["phase"] for s in slices if s["phase"] == "fixed"] == ["fixed", "fixed"], "each fixed warm-up's slice"
    windows = [s for s in slices if s["phase"] not in ("resume", "fixed")]
    assert all(s["phase"] in ("window 1", "window 2", "window 3") and s["rps"] > 0 for s in windows), windows
    assert {s["run"] for s in windows} <= {f"{server} hello c16 r1" for server in servers}
    assert {"spring-tomcat warm-up", "spring-jetty window 3 of 3", "spring-tomcat stop"} <= set(stages), stages
    assert len(runs) == 6 and (runs["status"] == "ok").all()
    assert runs["server"].tolist() == ["spring-tomcat", "spring-jetty", "spring-jetty", "spring-tomcat",
                                       "spring-tomcat", "spring-jetty"]
    assert runs["window"].tolist() == [1, 1, 2, 2, 3, 3]
    pids = {server: {r.metadata["backend"]["pid"] for r in suite.records if r.params["server"] == server}
            for server in servers}
    assert all(len(p) == 1 for p in pids.values()) and pids["spring-tomcat"] != pids["spring-jetty"]
    firsts = {r.params["server"]: r for r in suite.records if r.params["window"] == 1}
    tomcat_warmup = firsts["spring-tomcat"].metadata["warmup"]
    # a fixed warm-up of 1 s resumes for 1 s: one slice
    assert tomcat_warmup["resumed_s"] >= 1.0 and [s["phase"] for s in tomcat_warmup["slices"]] == ["resume"]
    assert "resumed_s" not in firsts["spring-jetty"].metadata["warmup"], "the fork warmed last goes straight on"
    assert (runs["fork_s"] > runs["warmup_s"]).all(), "a fork cost its start and warm-up before it measured"
    assert firsts["spring-tomcat"].metrics["fork_s"] >= tomcat_warmup["resumed_s"] + 1.0
    # started_at is each window's own: a window's span is its load, not its fork's warm-up
    from benchlab.analysis.wall import span

    # (and the wait for quiet cores before it, at most 10 s, said in quiet_wait_s)
    assert max(span([r]) - r.metrics["quiet_wait_s"] for r in suite.records) < 10
    # and the suite's wall time runs from the first fork's start: both forks warmed before any window began
    assert suite.wall_s >= span(suite.records) + firsts["spring-tomcat"].metrics["fork_s"], suite.wall_s
    summary = suite.summary(["rps"]).set_index("server")
    assert (summary["n"] == 1).all() and (summary["windows"] == 3).all()
    again = benchlab.compare(servers, ["hello"], [16], repeats=1, windows=3, interleave="windows", duration="2s",
                             warmup="1s", retakes=0, results_dir=tmp_path, progress=False)
    assert sorted(again.runs["started_at"]) == sorted(runs["started_at"]), "resumed: all found, nothing ran"


def test_a_fork_that_dies_in_a_round_fails_alone(tmp_path):
    # Two servers of one round, windows in turn: the one that dies 6 s after its start (its first window comes
    # after the other's 1 s resume) keeps its finished windows and records its next as failed; the other measures
    # all of its own.
    from pathlib import Path

    fixture = Path(__file__).parent / "fixtures" / "warming_server.py"
    dying = benchlab.Server.from_command([sys.executable, str(fixture), "{port}", "0", "6"], name="dying", path="/")
    steady = benchlab.Server.from_command([sys.executable, str(fixture), "{port}", "0"], name="steady", path="/")
    # no retakes: a window measured again on a busy machine would move the death into an earlier window
    suite = benchlab.compare([steady, dying], ["/"], [4], repeats=1, windows=4, interleave="windows",
                             duration="1s", warmup="1s", retakes=0, results_dir=tmp_path, progress=False)
    runs = suite.runs[suite.runs["status"] != "retaken"]  # a window disturbed on a busy machine is measured again
    mine = runs[runs["server"] == "steady"]
    assert len(mine) == 4 and (mine["status"] == "ok").all()
    died = runs[runs["server"] == "dying"].sort_values("window")
    assert died["status"].tolist()[-1] == "failed" and "died" in died["error"].iloc[-1]
    assert (died["status"].iloc[:-1] == "ok").all() and 2 <= len(died) < 4
