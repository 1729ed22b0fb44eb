"""Files get the umask's mode and survive a crash; every command, Maven too, starts one way; a batch's
paths are the batch file's (unit tests: nothing but tiny Python children starts)."""

from __future__ import annotations

import inspect
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from benchlab import report
from benchlab.errors import BuildError, UsageError
from benchlab.running import jars, process
from benchlab.store import files

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600)])
def test_a_written_file_has_the_mode_the_umask_gives(tmp_path, umask, mode):
    code = (f"import os; os.umask({umask:#o}); from pathlib import Path; "
            "from benchlab.store.files import write_atomic; "
            f"write_atomic(Path({str(tmp_path / 'run.json')!r}), '{{}}')")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60)
    assert stat.S_IMODE((tmp_path / "run.json").stat().st_mode) == mode
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"], "no temporary file is left"


def test_the_folder_is_synced_after_the_rename(tmp_path, monkeypatch):
    synced = []
    real = os.fsync

    def fsync(fd):
        synced.append(stat.S_ISDIR(os.fstat(fd).st_mode))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    files.write_atomic(tmp_path / "run.json", "{}")
    assert synced == [False, True], "the file, then its folder"


def test_the_child_gets_its_parent_death_signal_without_loading_anything():
    assert "CDLL" not in inspect.getsource(process._die_with_parent), "libc is loaded at import, not in the child"
    read = ("import ctypes, ctypes.util; s = ctypes.c_int(); ctypes.CDLL('libc.so.6').prctl(2, ctypes.byref(s)); "
            "print(s.value)")
    done = process.run([sys.executable, "-c", read], timeout=30)
    assert done.stdout.strip() == "9"  # SIGKILL when benchlab dies


def _fake_servers(tmp_path, monkeypatch, mvn_body: str) -> Path:
    (tmp_path / "pom.xml").write_text("<project/>")
    mvn = tmp_path / "mvn"
    mvn.write_text(f"#!/bin/sh\n{mvn_body}\n")
    mvn.chmod(0o755)
    monkeypatch.setattr(jars.home, "servers_dir", lambda: tmp_path)
    monkeypatch.setattr(jars.process, "require", lambda tool, install: str(mvn) if tool == "mvn" else tool)
    return mvn


def test_maven_runs_through_process_run_with_a_timeout(tmp_path, monkeypatch):
    _fake_servers(tmp_path, monkeypatch, "echo building; exit 0")
    seen = {}
    real = process.run

    def run(argv, **kwargs):
        seen.update(kwargs)
        return real(argv, **kwargs)

    monkeypatch.setattr(jars.process, "run", run)
    with pytest.raises(BuildError, match="Maven finished but did not make"):
        jars.build(force=True)
    assert seen["timeout"] == jars.MAVEN_TIMEOUT == 1800
    assert "building" in (tmp_path / "target-build.log").read_text()


def test_a_maven_build_that_hangs_is_stopped_at_its_timeout(tmp_path, monkeypatch):
    _fake_servers(tmp_path, monkeypatch, "exec sleep 60")
    monkeypatch.setattr(jars, "MAVEN_TIMEOUT", 0.5)
    with pytest.raises(BuildError, match=r"did not finish within 0 s and was stopped"):
        jars.build(force=True)


def test_a_batch_output_is_relative_to_the_batch_file(tmp_path, monkeypatch):
    folder = tmp_path / "batches"
    folder.mkdir()
    (folder / "b.yaml").write_text(f"- notebook: {ROOT}/notebooks/compare.ipynb\n  output: out/first.ipynb\n"
                                   f"- notebook: {ROOT}/notebooks/compare.ipynb\n  output: /abs/second.ipynb\n")
    monkeypatch.chdir(tmp_path)
    first, second = report.read_batch("batches/b.yaml")
    assert Path(first["output"]).resolve() == folder / "out" / "first.ipynb"
    assert second["output"] == "/abs/second.ipynb"


@pytest.mark.parametrize("text, says", [
    ("- notebook: notebooks/compare.ipynb\n  parameters: [1, 2]\n", "report 1's parameters must be a mapping of "
     "name: value, not list [1, 2]"),
    ("defaults: [1]\nreports:\n  - notebook: notebooks/compare.ipynb\n", "defaults must be a mapping"),
])
def test_batch_parameters_that_are_not_a_mapping_are_refused_in_one_line(tmp_path, text, says):
    (tmp_path / "b.yaml").write_text(text)
    with pytest.raises(UsageError, match=re.escape(says)):
        report.read_batch(tmp_path / "b.yaml")


def test_a_server_tree_cpu_time_is_read_finer_than_a_clock_tick():
    """A window's cost is the difference of two readings; in 10 ms ticks two forks often cost the same, so the
    interval on CPU per request had no spread to scale by. A child that ends its busy threads keeps their time."""
    from benchlab.running.monitor import ProcessProbe

    code = ("import threading, time\n"
            "def spin():\n    end = time.thread_time() + 0.123\n    while time.thread_time() < end: pass\n"
            "threads = [threading.Thread(target=spin) for _ in range(2)]\n"
            "[t.start() for t in threads]; [t.join() for t in threads]\nprint('done', flush=True); time.sleep(30)")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "done\n"
        probe = ProcessProbe(child.pid)
        spent = probe.cpu_seconds()
        ticks = spent * os.sysconf("SC_CLK_TCK")
        assert spent >= 0.246 and abs(ticks - round(ticks)) > 1e-6, spent  # the ended threads' time, in ns steps
        assert probe.cpu_seconds() == pytest.approx(spent, abs=0.005)  # idle: the same reading again
    finally:
        child.kill()
        child.wait()


def test_the_look_before_a_window_counts_benchlabs_own_work_as_its_own_and_a_strangers_as_other():
    """benchlab sits on the load tool's core during the look where the machine has no spare core; its own work
    there (the last window's results) is not another process's (a re-held capacity window waited 1 s for it),
    while a process of no run's, pinned to that core, is."""
    import threading
    import time

    from benchlab.running import machine

    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs 2 cores: one for the server, one for the load")
    groups = {"server": (cpus[0],), "load": (cpus[1],)}
    before = machine.keep_off(groups["server"], groups["load"])
    try:
        stop = time.monotonic() + 0.8
        busy = threading.Thread(target=lambda: [None for _ in iter(lambda: time.monotonic() < stop, False)])
        busy.start()
        mine = machine.others_share(groups, {os.getpid()}, 0.5)
        busy.join()
        stranger = subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        try:
            os.sched_setaffinity(stranger.pid, {cpus[1]})
            time.sleep(0.2)
            theirs = machine.others_share(groups, {os.getpid()}, 0.5)
        finally:
            stranger.kill()
            stranger.wait()
    finally:
        machine.restore(before)
    assert mine["load"] < 0.2, mine
    assert theirs["load"] > 0.6, theirs
