"""One writer per results_dir, one run per pinned core, and what else was busy on a run's cores: unit tests,
and two real writers on one results_dir (the fixture Python server, h2load for a few requests, no JVM)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from benchlab.errors import UsageError
from benchlab.store import locks

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
FAR_CORES = (9990, 9991)  # core numbers no real run pins: the locks are machine-wide


def _hold(code: str) -> subprocess.Popen:
    """A child that runs ``code`` (which prints 'held' once it holds its lock) and then sleeps."""
    child = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "held"
    return child


def test_a_second_writer_is_refused_naming_the_holder(tmp_path):
    child = _hold("from pathlib import Path; from benchlab.store import locks; "
                  f"w = locks.ResultsWriter(Path({str(tmp_path)!r})); "
                  "print('held', flush=True); import time; time.sleep(30)")
    try:
        with pytest.raises(UsageError) as info:
            locks.ResultsWriter(tmp_path)
        assert str(info.value) == (f"results_dir {tmp_path} is being written by benchlab PID {child.pid}: wait for it "
                                   "to finish, or give another results_dir")
    finally:
        child.kill()
        child.wait()
    with locks.ResultsWriter(tmp_path):  # the kernel dropped the dead holder's lock
        assert locks.results_lock(tmp_path).read_text() == f"{os.getpid()}\n"
    locks.ResultsWriter(tmp_path).release()


def test_a_run_waits_for_cores_another_process_holds_and_says_so_once(tmp_path):
    child = _hold(f"from benchlab.store import locks; c = locks.cores({FAR_CORES[1:]!r}); c.__enter__(); "
                  "print('held', flush=True); import time; time.sleep(0.5)")
    said = []
    try:
        with locks.cores(FAR_CORES, poll=0.05, echo=said.append) as waited:
            pass  # taken once the other process ended (its 0.5 s sleep), not before
    finally:
        child.kill()
        child.wait()
    assert said == [f"benchlab: waiting for cores {FAR_CORES[1]} held by PID {child.pid}"]
    assert waited > 0.25
    with locks.cores(FAR_CORES, echo=said.append) as waited:  # free now: no wait, nothing said
        assert waited < 0.5 and len(said) == 1


def test_cores_are_taken_all_or_none():
    child = _hold(f"from benchlab.store import locks; c = locks.cores({FAR_CORES[1:]!r}); c.__enter__(); "
                  "print('held', flush=True); import time; time.sleep(30)")
    try:
        import threading

        waiting = threading.Thread(target=lambda: locks.cores(FAR_CORES, poll=0.05, echo=lambda _: None).__enter__(),
                                   daemon=True)
        waiting.start()
        time.sleep(0.3)
        with locks.cores(FAR_CORES[:1], echo=lambda line: pytest.fail(line)):
            pass  # the core the other process does not hold is free: the waiter holds nothing while it waits
    finally:
        child.kill()
        child.wait()


def test_the_busy_seconds_of_the_cores_grow():
    before = locks.cpu_seconds([0])
    assert locks.cpu_seconds([0]) >= before > 0


FIRST = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import benchlab
    server = benchlab.Server.from_command([sys.executable, {server!r}, "{{port}}", "0"], name="warming")
    def on_run(run):
        Path({marker!r}).write_text(run.status)
        time.sleep(3)  # the comparison still holds results_dir while the second writer tries
    benchlab.compare([server], scenarios=["/"], repeats=2, load="count", users=[2], loops=[20], driver="h2load",
                     duration="1s", warmup=0, results_dir={results!r}, progress=False, on_run=on_run)
""")


@pytest.mark.integration
@pytest.mark.skipif(not shutil.which("h2load"), reason="h2load is not installed")
def test_two_compare_processes_on_one_results_dir_the_second_refuses_and_the_first_is_intact(tmp_path):
    import benchlab

    results, marker = tmp_path / "results", tmp_path / "first-run-done"
    first = subprocess.Popen([sys.executable, "-c", FIRST.format(server=str(FIXTURES / "warming_server.py"),
                                                                 marker=str(marker), results=str(results))],
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.05)
        second = subprocess.run([sys.executable, "-m", "benchlab", "compare", "--servers", "http://127.0.0.1:9/hello",
                                 "--scenarios", "/hello",
                                 "--load", "count", "--users", "2", "--loops", "20", "--driver", "h2load",
                                 "--repeats", "2", "--results-dir", str(results), "--no-progress"],
                                cwd=ROOT, capture_output=True, text=True, timeout=120)
        out, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert second.returncode == 2, second.stderr
    assert second.stderr.strip().splitlines() == [
        f"benchlab: error: results_dir {results} is being written by benchlab PID {first.pid}: wait for it to "
        "finish, or give another results_dir"]
    assert first.returncode == 0, err
    suite = benchlab.load(results)
    assert sorted(suite.runs["repeat"]) == [1, 2] and set(suite.runs["status"]) == {"ok"}
    for record in suite.records:
        cores = record.metadata["cores"]
        assert cores["cores"] and cores["busy_cpu_s"] >= 0 and cores["own_cpu_s"] is not None, cores
