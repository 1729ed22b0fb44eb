"""GET /info tells what the running server really uses: JDK, GC, heap, request thread and pool (integration).

The jars are started directly with a given ``java`` (JDK 17, the default, and Temurin 25), so these checks
depend on the servers alone, not on how benchlab asks for a setting. Each case gives a setting through
the server's own property or JVM flag and reads it back from /info, which takes it from the running server
objects: a value that did not take effect would show.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from benchlab.running import backends, servers

pytestmark = pytest.mark.integration

JAVA17 = "java"
JAVA25 = "temurin-25"  # found by the jdk25 fixture (update-alternatives, /usr/lib/jvm/*)

#: The keys benchlab reads to check a variant; their names are a contract with benchlab/.
KEYS = {"server": str, "server_version": str, "spring_boot_version": str, "java_version": str, "java_vendor": str,
        "gc": list, "heap_max_bytes": int, "available_processors": int, "virtual": bool, "thread_name": str,
        "pool_class": str, "pool_max": (int, type(None)), "spring_threads_virtual_enabled": bool}

# name: (java, server, JVM options, program arguments)
CASES = {
    # Java 17 with each server's own pool setting, and one GC and heap given as JVM flags.
    "tomcat-17": (JAVA17, "tomcat", [], ["--server.tomcat.threads.max=37"]),
    "jetty-17": (JAVA17, "jetty", ["-XX:+UseSerialGC", "-Xmx128m"], ["--server.jetty.threads.max=37"]),
    "undertow-17": (JAVA17, "undertow", ["-XX:+UseParallelGC"], ["--server.undertow.threads.worker=37"]),
    "webflux-17": (JAVA17, "webflux", ["-Dreactor.netty.ioWorkerCount=3"], []),
    # Java 25: virtual threads on every server, and Tomcat without them.
    "tomcat-25": (JAVA25, "tomcat", [], []),
    "tomcat-25-vt": (JAVA25, "tomcat", [], ["--spring.threads.virtual.enabled=true"]),
    "jetty-25-vt": (JAVA25, "jetty", [], ["--spring.threads.virtual.enabled=true"]),
    "undertow-25-vt": (JAVA25, "undertow", [], ["--spring.threads.virtual.enabled=true"]),
    "webflux-25-vt": (JAVA25, "webflux", [], ["--spring.threads.virtual.enabled=true"]),
}


def _answer(java: str, flavour: str, jvm: list[str], program: list[str], log: Path) -> dict:
    """Start the jar, read /info once it answers, stop the JVM by its pid."""
    port = backends.free_port()
    jar = servers.get(f"spring-{flavour}").jar
    # C1 only: a third less start-up CPU for nine JVMs on two cores; the GC, heap and pools it reports are the same
    argv = [java, "-XX:TieredStopAtLevel=1", *jvm, "-jar", jar, f"--server.port={port}", "--server.address=127.0.0.1",
            *program]
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240  # on a busy machine, beside two other starting JVMs
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"{argv} exited {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/info", timeout=5) as answer:
                    return json.load(answer)
            except OSError:
                time.sleep(0.5)
        raise AssertionError(f"{argv} did not answer /info within 240 s: {log.read_text()[-2000:]}")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def answers(jars, jdk25, tmp_path_factory):
    """Every case's /info, the JVMs started side by side (three at a time) to keep the wait short."""
    logs = tmp_path_factory.mktemp("info")
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {name: pool.submit(_answer, jdk25 if java == JAVA25 else java, *rest, logs / f"{name}.log")
                   for name, (java, *rest) in CASES.items()}
        return {name: future.result() for name, future in futures.items()}


@pytest.mark.parametrize("name", CASES)
def test_info_has_every_key_with_its_type(answers, name):
    info = answers[name]
    wrong = {key: info.get(key) for key, kind in KEYS.items() if not isinstance(info.get(key), kind)}
    assert not wrong, f"{name}: {wrong}"
    java, flavour = CASES[name][:2]
    assert info["server"] == {"webflux": "netty"}.get(flavour, flavour)
    assert info["java_version"].startswith("25." if java == JAVA25 else "17.")
    assert info["spring_boot_version"].startswith("3.5.") and info["server_version"]
    assert info["gc"] and info["heap_max_bytes"] > 0 and info["available_processors"] >= 1
    # What benchlab read before these keys, still there.
    assert {"web_server_class", "java_vm", "max_heap_bytes", "virtual_threads"} <= set(info)


@pytest.mark.parametrize("name", ["tomcat-17", "jetty-17", "undertow-17", "webflux-17", "tomcat-25"])
def test_no_virtual_thread_unless_asked(answers, name):
    info = answers[name]
    assert info["virtual"] is False and info["spring_threads_virtual_enabled"] is False
    assert "virtual" not in info["pool_class"].lower()


@pytest.mark.parametrize("name", ["tomcat-25-vt", "jetty-25-vt", "undertow-25-vt"])
def test_virtual_threads_on_java_25_run_servlet_requests(answers, name):
    info = answers[name]
    assert info["virtual"] is True and info["spring_threads_virtual_enabled"] is True
    # The request pool is then a virtual-thread executor, with no maximum.
    assert info["pool_max"] is None and info["pool_class"] in (
        "org.apache.tomcat.util.threads.VirtualThreadExecutor", "java.util.concurrent.ThreadPerTaskExecutor",
        "org.springframework.core.task.VirtualThreadTaskExecutor"), info["pool_class"]


def test_webflux_with_virtual_threads_runs_a_blocking_handler_on_one(answers):
    # Boot hands handlers with a non-reactive return type (as /info's) to virtual threads; the event loops stay.
    info = answers["webflux-25-vt"]
    assert info["virtual"] is True and not info["thread_name"].startswith("reactor-http")
    assert info["pool_class"].startswith("io.netty.channel.") and info["pool_max"] >= 1


def test_the_pool_is_read_from_the_running_server(answers):
    expected = {"tomcat-17": ("org.apache.tomcat.util.threads.ThreadPoolExecutor", 37),
                "jetty-17": ("org.eclipse.jetty.util.thread.QueuedThreadPool", 37),
                "undertow-17": ("org.xnio.nio.NioXnioWorker", 37),
                "webflux-17": ("EventLoopGroup", 3),
                "tomcat-25": ("org.apache.tomcat.util.threads.ThreadPoolExecutor", 200)}
    for name, (pool_class, pool_max) in expected.items():
        info = answers[name]
        assert info["pool_class"].endswith(pool_class) and info["pool_max"] == pool_max, (name, info)
    assert answers["webflux-17"]["thread_name"].startswith("reactor-http-"), "a reactive handler runs on a loop"


def test_the_gc_and_heap_flags_show(answers):
    assert answers["jetty-17"]["gc"] == ["Copy", "MarkSweepCompact"]
    assert 120 * 2**20 <= answers["jetty-17"]["heap_max_bytes"] <= 128 * 2**20
    assert sorted(answers["undertow-17"]["gc"]) == ["PS MarkSweep", "PS Scavenge"]
    assert {"G1 Young Generation", "G1 Old Generation"} <= set(answers["tomcat-17"]["gc"])
