"""Shared fixtures. Integration tests use real servers, real load tools and real engines: nothing is mocked."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

# jsonschema (under altair and nbformat) imports rfc3987_syntax when it is installed, only to check the
# "iri" string format, which no schema here uses; it builds a Lark grammar at import, 1.8 s of every test
# process. Blocked, the import fails and jsonschema goes on without that one format.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

# A test run started in the background by a shell without job control inherits SIGINT ignored, and so would
# every process it starts (an ignored signal stays ignored across exec): the Ctrl-C tests would then send a
# signal no child can see. Python's own handler is put back, so the children start with the default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

CAPTURES = Path(__file__).parent / "captures"

# Every process this test session starts inherits the marker, so a JVM left behind is found as ours by it;
# a JVM of another session on the same machine (a second checkout's tests, a Maven build) is not.
SESSION = os.environ.setdefault("BENCHLAB_TEST_SESSION", uuid.uuid4().hex)


def benchlab_jvms() -> list[psutil.Process]:
    """Running JVMs started from a benchlab jar by this test session."""
    found = []
    for proc in psutil.process_iter(["pid", "name", "cmdline"]):
        cmdline = " ".join(proc.info.get("cmdline") or [])
        if "java" in (proc.info.get("name") or "") and "benchlab-" in cmdline and ".jar" in cmdline:
            try:
                if proc.environ().get("BENCHLAB_TEST_SESSION") == SESSION:
                    found.append(proc)
            except psutil.Error:  # it ended, or is not ours to read
                continue
    return found


@pytest.fixture(scope="session")
def jars():
    """The three server jars, built once (skipped by Maven's stamp when servers/ is unchanged)."""
    import benchlab

    return benchlab.build()["jars"]


@pytest.fixture
def no_jvm_left():
    """Fails the test if a benchlab JVM it started is still running when it ends."""
    before = {p.pid for p in benchlab_jvms()}
    yield
    deadline = time.monotonic() + 10
    while True:
        left = [p for p in benchlab_jvms() if p.pid not in before]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not left, f"JVMs left running: {[p.pid for p in left]}"


@pytest.fixture(scope="session")
def docker_engine():
    """$DOCKER_HOST, or a private engine started through .ci/dockerd.sh and stopped at the end."""
    import subprocess

    if os.environ.get("DOCKER_HOST"):
        yield os.environ["DOCKER_HOST"]
        return
    script = Path(__file__).resolve().parent.parent / ".ci" / "dockerd.sh"
    started = subprocess.run(["bash", str(script), "start"], capture_output=True, text=True, timeout=600)
    if started.returncode != 0:
        pytest.fail(f"could not start a docker engine with `bash .ci/dockerd.sh start`:\n{started.stderr[-2000:]}")
    os.environ["DOCKER_HOST"] = started.stdout.strip().splitlines()[-1]
    yield os.environ["DOCKER_HOST"]
    os.environ.pop("DOCKER_HOST", None)
    subprocess.run(["bash", str(script), "stop"], capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def jdk25() -> str:
    """A second JDK, Temurin 25: from update-alternatives, else where the Temurin package installs it."""
    listed = subprocess.run(["update-alternatives", "--list", "java"], capture_output=True, text=True).stdout.split()
    for java in [*listed, *sorted(glob.glob("/usr/lib/jvm/*/bin/java"))]:
        version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
        if "Temurin" in version and '"25' in version:
            return java
    pytest.fail("no Temurin 25 JDK: install temurin-25-jdk (the CDS and /info tests need a second JDK)")


@pytest.fixture
def capture():
    return lambda name: (CAPTURES / name).read_text()


def pytest_configure(config):
    os.environ.setdefault("BENCHLAB_RESULTS", str(Path(config.rootpath) / "data" / "results" / "tests"))
