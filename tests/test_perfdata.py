"""The JVM's own counters, read from its hsperfdata file, against jcmd; and the warm-up rule on a real JVM."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import benchlab
from benchlab.running import backends, drivers, perfdata, warmup
from benchlab.running.options import RunOptions
from benchlab.running.spec import prepare

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _started(tmp_path, server="spring-undertow", **options):
    spec = prepare(server, "hello", RunOptions.of(connections=50, duration="2s", **options))
    benchlab.running.jars.ensure_built(spec.server, java=spec.server_java, cds=spec.cds)
    instance = backends.get("local").start(spec.server, spec.launch("perfdata-test", tmp_path / "server.log"))
    return spec, instance


def _jcmd(pid: int) -> dict[str, int]:
    out = subprocess.run(["jcmd", str(pid), "PerfCounter.print"], capture_output=True, text=True, timeout=60).stdout
    return {m[1]: int(m[2]) for m in re.finditer(r"^([\w.]+)=(-?\d+)$", out, re.M)}


@pytest.mark.integration
def test_the_reader_agrees_with_jcmd_on_compile_time_and_gc_counts(tmp_path, jars, no_jvm_left):
    spec, instance = _started(tmp_path)
    jvm = instance.counters()
    try:
        assert jvm is not None, "a HotSpot server has a perfdata file"
        # Some load, so that the JIT compiles and the young generation collects.
        drivers.execute(drivers.tool("wrk"), instance.url, spec.scenario, warmup._warming_load(spec.load, 3.0),
                        cpus=spec.load_cpus, workdir=tmp_path, phase="warmup")
        # A collection for sure: the young generation of a 24 GiB machine's default heap may not fill in 3 s.
        subprocess.run(["jcmd", str(instance.process.pid), "GC.run"], capture_output=True, timeout=60)
        before = jvm.read()
        theirs = _jcmd(instance.process.pid)
        after = jvm.read()
    finally:
        jvm.close()
        instance.stop()
    ticks = theirs["sun.os.hrt.frequency"]
    compile_s = theirs["java.ci.totalTime"] / ticks
    assert before["compile_s"] * 0.99 <= compile_s <= after["compile_s"] * 1.01, (before, compile_s, after)
    assert before["compile_s"] > 1.0, "the JIT compiled for more than a second under load"
    collections = sum(v for k, v in theirs.items() if re.fullmatch(r"sun\.gc\.collector\.\d+\.invocations", k))
    assert before["gc_count"] <= collections <= after["gc_count"], (before["gc_count"], collections)
    assert before["gc_count"] >= 1, "the collection asked for is counted"
    assert before["compiles"] <= theirs["sun.ci.totalCompiles"] <= after["compiles"]
    assert jvm.collectors and jvm.collectors[0].startswith("Serial"), "one pinned core: the JVM picks SerialGC"
    # The compiler's CPU, as the kernel counts it, is part of its wall time and more than nothing.
    assert 0.05 < after["jit_cpu_s"] <= after["compile_s"] + 5.0, (after["jit_cpu_s"], after["compile_s"])


# A process whose threads call themselves what HotSpot's do: a compiler thread that spins for 0.6 x its argument in
# CPU seconds, idles, and ends when told (as HotSpot stops an idle extra compiler thread), one that sleeps, and a
# request thread that spins for its argument and is no compiler.
_NAMED_THREADS = r"""
import ctypes, sys, threading, time
SPUN = float(sys.argv[1])
libc = ctypes.CDLL(None)
end = threading.Event()
def named(name, work):
    def body():
        libc.prctl(15, name.encode(), 0, 0, 0)  # PR_SET_NAME: the thread's comm
        work()
    return threading.Thread(target=body)
def spin(seconds):
    stop = time.thread_time() + seconds
    while time.thread_time() < stop:
        pass
compiler = named("C2 CompilerThre", lambda: (spin(SPUN * 0.6), end.wait()))
idle = named("C1 CompilerThre", lambda: end.wait())
request = named("qtp-1", lambda: spin(SPUN))
for t in (compiler, idle, request): t.start()
request.join(); time.sleep(0.1)
print("spun", flush=True)
sys.stdin.readline(); end.set(); compiler.join()
print("ended", flush=True)
time.sleep(30)
"""


def test_the_compiler_threads_cpu_is_what_the_kernel_counts_for_them_by_name():
    child = subprocess.Popen([sys.executable, "-c", _NAMED_THREADS, "0.25"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        compilers = perfdata.CompilerThreads(child.pid)
        assert child.stdout.readline().strip() == "spun"
        spun = compilers.seconds()
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "ended"
        ended = compilers.seconds()
    finally:
        child.kill()
        child.wait()
    assert 0.14 <= spun <= 0.2, f"{spun:.3f} s: the spinning compiler thread's 0.15 s, not the request thread's 0.25"
    assert ended >= spun, "a compiler thread that ended keeps what it used in the total"
    assert compilers.seconds() is None, "the process is gone"


def test_jit_first_favours_the_compiler_threads_alone_and_puts_them_back():
    from benchlab.running import warming

    child = subprocess.Popen([sys.executable, "-c", _NAMED_THREADS, "0"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)  # names alone: no thread needs to spin
    try:
        assert child.stdout.readline().strip() == "spun"
        tids = [int(t) for t in os.listdir(f"/proc/{child.pid}/task")]
        names = {t: open(f"/proc/{child.pid}/task/{t}/comm").read().strip() for t in tids}
        favour = warming.Favour(perfdata.CompilerThreads(child.pid))
        favour.apply()
        if favour.refused:  # not root: the warm-up says so and warms "shared"
            pytest.skip(favour.refused)
        nice = {t: os.getpriority(os.PRIO_PROCESS, t) for t in tids}
        assert {names[t] for t in tids if nice[t] == warming.NICE} == {"C2 CompilerThre", "C1 CompilerThre"}
        assert all(nice[t] == 0 for t in tids if "CompilerThre" not in names[t]), "request threads as they were"
        favour.apply()  # again: nothing new to favour, and what it had is still to put back
        assert favour.threads == 2
        favour.restore()
        assert all(os.getpriority(os.PRIO_PROCESS, t) == 0 for t in tids), "every thread at its own nice again"
    finally:
        child.kill()
        child.wait()


@pytest.mark.integration
@pytest.mark.parametrize("warming, limit", [("shared", 20.0), ("jit-first", 8.0)])
def test_a_jvm_whose_compiler_is_busy_is_not_called_warm(tmp_path, jars, no_jvm_left, warming, limit):
    spec, instance = _started(tmp_path, server="spring-jetty")
    jvm = instance.counters()
    load = dataclasses.replace(spec.load, warming=warming)
    try:
        # A cold Jetty compiles for 35-80 s under load here when its compiler shares the core (35 s in one CI run,
        # where 30 s of it ended in a window the compiler had gone quiet in), and about 10 s when it runs first:
        # 20 s of the one, and 8 s of the other, end in the middle of it.
        warmed = warmup.warm_up(instance.url, spec.scenario, load, cpus=spec.load_cpus, workdir=tmp_path,
                                perfdata=jvm, limit=limit)
        after = [os.getpriority(os.PRIO_PROCESS, tid) for tid in jvm.compilers.tids()]
    finally:
        jvm.close()
        instance.stop()
    slices = warmed["slices"]
    busy = (slices[-1]["compile_s"] - slices[0]["compile_s"]) / (slices[-1]["t"] - slices[0]["t"])
    assert busy > warmup.QUIET_SHARE, f"the JIT compiled {busy:.2f} s per second: it was busy"
    assert warmed["steady"] is False and warmed["rule"] == "jit+throughput"
    assert warmed["class"] in ("no steady state", "warm-up", "flat", "slowdown")
    assert warmed["jit_quiet_s"] is None, f"the compiler never went quiet in {limit:g} s"
    assert warmed["warming"] == warming
    if warming == "jit-first":
        assert warmed["favoured_threads"] >= 2, "C1's and C2's threads ran first"
    # primed at a light load first, favoured or not: unprimed at 64 connections one Undertow fork in 5 was called
    # warm cold (docs/warm-up.md, "Unprimed at 64 connections")
    assert slices[0]["phase"] == "prime" and slices[0]["connections"] == warmup.PRIME_CONNECTIONS, slices[0]
    assert after and set(after) == {0}, "the compiler threads are back at their own nice once the warm-up ends"


@pytest.mark.integration
def test_a_jvm_that_keeps_compiling_is_never_called_warm(tmp_path, no_jvm_left):
    """The rule's 15 s of a quiet compiler are the judge, however steady the throughput: a JVM given a new class to
    compile by every request (tests/fixtures/KeepsCompiling.java) is still not warm after twice the time a Spring
    fork takes here, and its warm-up says the compiler never went quiet."""
    server = benchlab.Server.from_command(["java", str(FIXTURES / "KeepsCompiling.java"), "{port}"],
                                          name="keeps-compiling", path="/")
    spec = prepare(server, "/", RunOptions.of(connections=4, duration="2s"))
    instance = backends.get("local").start(spec.server, spec.launch("keeps-compiling", tmp_path / "server.log"))
    jvm = instance.counters()
    try:
        assert jvm is not None, "a JVM's counters are read from its hsperfdata file"
        warmed = warmup.warm_up(instance.url, spec.scenario, spec.load, cpus=spec.load_cpus, workdir=tmp_path,
                                perfdata=jvm, limit=50.0)
    finally:
        jvm.close()
        instance.stop()
    slices = [s for s in warmed["slices"] if s["t"] >= warmed["slices"][-1]["t"] - warmup.QUIET_SPAN - 1]
    busy = (slices[-1]["compile_s"] - slices[0]["compile_s"]) / (slices[-1]["t"] - slices[0]["t"])
    assert busy > warmup.QUIET_SHARE, f"the JIT compiled {busy:.2f} s a second over the last window: it was busy"
    assert all(s["rps"] > 0 for s in warmed["slices"]), "the server answered throughout"
    assert warmed["steady"] is False and warmed["rule"] == "jit+throughput", warmed["rule"]
    assert warmed["jit_quiet_s"] is None and warmed["seconds"] >= 50.0


@pytest.mark.integration
def test_a_run_stores_the_jvm_counters_and_flags_a_compiling_measurement(tmp_path, jars, no_jvm_left):
    run = benchlab.run("spring-undertow", "hello", connections=50, duration="3s", warmup="2s", results_dir=tmp_path)
    assert run.metrics["jit_share"] > 0.05, "a JVM 2 s into its load still compiles"
    assert run.metrics["gc_share"] is not None and run.metrics["safepoint_share"] is not None
    assert run.metadata["jvm"]["collectors"][0].startswith("Serial")
    again = benchlab.load(tmp_path)
    stored = again.records[0]
    assert len(stored.counters) >= 10 and list(stored.counters) == [tuple(c) for c in run.counters]
    flags = again.flags()
    assert "jit_active" in flags["flag"].tolist()
    from benchlab.analysis import validity

    assert {"jit_active", "gc_heavy", "server_idle"} <= set(validity.INVALID), "no verdict is built on them"


@pytest.mark.integration
def test_a_server_that_is_not_a_jvm_has_no_counters_and_says_so(tmp_path):
    server = benchlab.Server.from_command([sys.executable, str(FIXTURES / "warming_server.py"), "{port}", "0"],
                                          name="plain", path="/")
    run = benchlab.run(server, "/", connections=4, duration="1s", warmup="1s", results_dir=tmp_path)
    assert run.metrics["jit_share"] is None and run.metadata["jvm"] is None and not run.counters
    assert perfdata.PerfData.find(run.metadata["backend"]["pid"]) is None, "the server has ended, and was no JVM"
