"""Shared fixtures. Integration tests use real servers, real load tools and real engines: nothing is mocked."""

from __future__ import annotations

import os
import time
from pathlib import Path

import psutil
import pytest

CAPTURES = Path(__file__).parent / "captures"


#: This checkout: its jars (and their CDS copies) live under servers/ here.
SERVERS = str(Path(__file__).resolve().parent.parent / "servers")


def benchlab_jvms() -> list[psutil.Process]:
    """Running JVMs started from a benchlab jar of this checkout (another checkout's tests may run beside)."""
    found = []
    for proc in psutil.process_iter(["pid", "name", "cmdline"]):
        cmdline = " ".join(proc.info.get("cmdline") or [])
        if ("java" in (proc.info.get("name") or "") and "benchlab-" in cmdline and ".jar" in cmdline
                and SERVERS in cmdline):
            found.append(proc)
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


@pytest.fixture
def capture():
    return lambda name: (CAPTURES / name).read_text()


def pytest_configure(config):
    os.environ.setdefault("BENCHLAB_RESULTS", str(Path(config.rootpath) / "data" / "results" / "tests"))
