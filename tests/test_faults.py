"""Faults cost nothing: signals to a running compare, a server or a load tool killed mid-run, a notebook
kernel interrupted. Real servers, real wrk, real papermill (integration tests).

Every process a test starts inherits a marker in its environment; orphans are the marked processes still
alive afterwards, found by PID, whatever their names.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest

import benchlab

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
TWO = ["spring-tomcat", "spring-undertow"]


def marked(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["pid", "name"]):
        try:
            if proc.environ().get("BENCHLAB_TEST_MARK") == marker and proc.pid != os.getpid():
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


def assert_no_orphans(marker: str, *, keep: set[int] = frozenset()) -> None:
    deadline = time.monotonic() + 15
    while True:
        left = [p for p in marked(marker) if p.pid not in keep]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not left, f"left running: {[(p.pid, p.name()) for p in left]}"


@pytest.fixture
def marker(monkeypatch):
    value = uuid.uuid4().hex
    monkeypatch.setenv("BENCHLAB_TEST_MARK", value)
    before = {p.pid for p in marked(value)}  # this process itself, only
    yield value
    assert_no_orphans(value, keep=before)


def _ok_runs(results: Path) -> list[dict]:
    docs = [json.loads(p.read_text()) for p in results.glob("*/run.json")]
    return [d for d in docs if d["status"] == "ok"]


def _wait(predicate, timeout: float = 300.0, child: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if child is not None and child.poll() is not None:
            raise AssertionError(f"exited early ({child.returncode}): {child.stderr.read()}")
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.1)


def _load_tool_running(marker: str, name: str = "wrk") -> list[psutil.Process]:
    return [p for p in marked(marker) if p.name() == name]


@pytest.mark.parametrize("how, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["sigterm", "sigint"])
def test_a_signal_to_the_compare_command_stops_everything_and_resume_runs_the_rest(jars, tmp_path, marker, how, code):
    results = tmp_path / "results"
    argv = [sys.executable, "-m", "benchlab", "compare", "--servers", ",".join(TWO), "--connections", "8",
            "--repeats", "1", "--duration", "3s", "--warmup", "0", "--results-dir", str(results), "--no-progress"]
    # Its own session, as a terminal would start it: SIGINT is not ignored there, and reaches it alone.
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                             start_new_session=True)
    try:
        _wait(lambda: len(_ok_runs(results)) == 1 and _load_tool_running(marker), child=child)  # run 2 is loading
        child.send_signal(how)
        _, stderr = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == code, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert_no_orphans(marker)
    first = _ok_runs(results)
    assert len(first) == 1 and first[0]["params"]["server"] == "spring-tomcat"

    suite = benchlab.compare(TWO, ["hello"], [8], repeats=1, duration="3s", warmup=0, results_dir=results,
                             progress=False)
    assert (suite.runs["status"] == "ok").all() and len(suite.runs) == 2
    kept = suite.runs.set_index("server").loc["spring-tomcat"]
    assert kept["started_at"] == first[0]["started_at"], "the completed run was run again"


def _kill_during_load(marker: str, victim: str, after: float = 1.5) -> threading.Thread:
    """Kill (SIGKILL) the first ``victim`` ("java" or "wrk") once the first measured load has run ``after`` s."""

    def watch():
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            # The measured phase: a wrk with no warm-up before it (warmup=0) is the measurement.
            if _load_tool_running(marker):
                time.sleep(after)
                for proc in marked(marker):
                    if proc.name() == victim:
                        proc.kill()
                        return
            time.sleep(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("victim, says", [("java", "died during the load"), ("wrk", "killed by signal 9")],
                         ids=["server-killed", "load-tool-killed"])
def test_a_run_whose_server_or_load_tool_is_killed_is_failed_and_resumed(jars, tmp_path, marker, victim, says):
    results = tmp_path / "results"
    watcher = _kill_during_load(marker, victim)
    suite = benchlab.compare(TWO, ["hello"], [8], repeats=1, duration="4s", warmup=0, results_dir=results,
                             progress=False)
    watcher.join(timeout=5)
    runs = suite.runs.set_index("server")
    assert runs.loc["spring-tomcat", "status"] == "failed", "a broken run was counted as a good one"
    error = runs.loc["spring-tomcat", "error"]
    assert says in error
    if victim == "java":
        assert "last lines of" in error and "Tomcat" in error, "the error shows the server's last log lines"
    assert runs.loc["spring-undertow", "status"] == "ok", "the comparison went on"
    assert "failed" in set(suite.flags()["flag"])
    assert len(suite.summary(["rps"]).query("server == 'spring-tomcat'")) == 0, "a failed run entered the summary"
    undertow_started = runs.loc["spring-undertow", "started_at"]

    again = benchlab.compare(TWO, ["hello"], [8], repeats=1, duration="4s", warmup=0, results_dir=results,
                             progress=False).runs.set_index("server")
    assert (again["status"] == "ok").all()
    assert again.loc["spring-undertow", "started_at"] == undertow_started, "only the failed run ran again"


def test_an_interrupted_notebook_kernel_stops_its_servers_and_resumes(jars, tmp_path, marker):
    results = tmp_path / "results"
    output = tmp_path / "compare.ipynb"
    argv = [sys.executable, "-m", "benchlab", "report", "notebooks/compare.ipynb", "-o", str(output),
            "-p", "servers", ",".join(TWO), "-p", "connections", "8", "-p", "repeats", "1",
            "-p", "duration", "3s", "-p", "warmup", "0", "-p", "results_dir", str(results)]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                             start_new_session=True)
    try:
        _wait(lambda: len(_ok_runs(results)) == 1 and _load_tool_running(marker), child=child)
        kernels = [p for p in marked(marker) if "ipykernel" in " ".join(p.cmdline())]
        assert len(kernels) == 1
        kernels[0].send_signal(signal.SIGINT)  # what Jupyter's "interrupt the kernel" sends
        _, stderr = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 1 and "KeyboardInterrupt" in stderr, stderr
    assert output.exists(), "the executed notebook is saved with the error"
    assert_no_orphans(marker)
    first = _ok_runs(results)
    assert len(first) == 1

    suite = benchlab.compare(TWO, ["hello"], [8], repeats=1, duration="3s", warmup=0, results_dir=results,
                             progress=False)
    assert (suite.runs["status"] == "ok").all() and len(suite.runs) == 2
    assert first[0]["started_at"] in set(suite.runs["started_at"]), "the completed run was run again"
