"""Class Data Sharing for the built-in servers: one archive per jar and JDK, reused, really used (integration)."""

from __future__ import annotations

import shutil
import urllib.request
import zipfile
from pathlib import Path

import pytest

import benchlab
from benchlab.running import backends, servers
from benchlab.running import jars as building
from benchlab.running.backends.local import LocalBackend

pytestmark = pytest.mark.integration


def _copy(jars, tmp_path: Path) -> servers.Server:
    """The undertow jar in a folder of its own, so its archive is certainly made by this test."""
    shutil.copy2(jars["spring-undertow"], tmp_path / "benchlab-undertow.jar")
    return servers.SpringServer(name="spring-undertow", jar=str(tmp_path / "benchlab-undertow.jar"),
                          path="/hello", ready_path="/info", flavour="undertow")


def test_the_archive_is_made_once_per_jar_and_jdk_and_reused(jars, tmp_path, no_jvm_left):
    server = _copy(jars, tmp_path)
    first = building.prepare_cds(server, "java")
    archive = Path(first.archive)
    assert archive.parent.parent == tmp_path and archive.stat().st_size > 1_000_000 and first.warning is None
    made = archive.stat().st_mtime_ns
    building._PREPARED.clear()  # forget this process's memo: the second call must find the archive on disk
    second = building.prepare_cds(server, "java")
    assert second == first and archive.stat().st_mtime_ns == made, "the archive was made again"
    assert len(list(tmp_path.glob("cds-*/app.jsa"))) == 1


def test_a_server_started_from_its_archive_answers_and_loads_its_classes_from_it(jars, tmp_path, no_jvm_left):
    classes = tmp_path / "classes.log"
    launch = backends.Launch(run_id="cds", port=backends.free_port(), cpus=(0,), log_path=tmp_path / "server.log",
                             jvm_opts=(f"-Xlog:class+load=info:file={classes}",))
    instance = LocalBackend().start(servers.get("spring-jetty"), launch)
    try:
        with urllib.request.urlopen(instance.url + "/hello", timeout=10) as answer:
            assert answer.read() == servers.HELLO_BODY
    finally:
        instance.stop()
    argv = instance.metadata["argv"]
    assert building.launch_mode(argv) == "cds" and any(a.startswith("-XX:SharedArchiveFile=") for a in argv)
    # The JVM may silently ignore an archive that does not match; the class log says it did not.
    assert "dev.benchlab.server.BenchController source: shared objects file" in classes.read_text()


def test_another_jdk_gets_its_own_archive(jars, jdk25, tmp_path, no_jvm_left):
    run = benchlab.run("spring-undertow", "hello", java=jdk25, duration="1s", warmup="0s", connections=4,
                       results_dir=tmp_path)
    argv = run.metadata["backend"]["argv"]
    assert argv[0] == jdk25 and building.launch_mode(argv) == "cds"
    ours = next(a.split("=", 1)[1] for a in argv if a.startswith("-XX:SharedArchiveFile="))
    default = building.prepare_cds(servers.get("spring-undertow"), "java").archive
    assert Path(ours).exists() and Path(default).exists() and Path(ours).parent != Path(default).parent


def test_without_an_archive_the_plain_jar_starts_and_a_warning_says_why(tmp_path):
    jar = tmp_path / "benchlab-broken.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr("README", "not a Spring Boot jar: the tools jar mode cannot extract it")
    server = servers.SpringServer(name="spring-broken", jar=str(jar), flavour="broken")
    with pytest.warns(RuntimeWarning, match="no CDS archive for spring-broken"):
        argv = server.argv(8080)
    assert argv == ["java", "-jar", str(jar), "--server.port=8080", "--server.address=127.0.0.1"]
    meta = building.prepare_cds(server).metadata()  # the memo: no second attempt, no second warning
    assert meta["launch"] == "jar" and meta["cds_archive"] is None and "extract" in meta["cds_warning"]
    jetty = servers.get("spring-jetty")
    assert jetty.argv(8080, cds=False)[1:3] == ["-jar", jetty.jar]


def test_a_jvm_starts_on_the_runs_cores_and_then_runs_on_its_own_with_its_own_ergonomics(jars, tmp_path,
                                                                                         no_jvm_left):
    # The run holds the load cores too while the server starts, so the JVM starts on both and is pinned to
    # its own once it answers: every thread, and -XX:ActiveProcessorCount keeps what one core chooses.
    import os

    from benchlab.running.backends.base import Launch

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two cores")
    server = servers.get("spring-jetty")
    launch = Launch(run_id="wide", port=backends.free_port(), cpus=(0,), log_path=tmp_path / "server.log",
                    start_cpus=(1,))
    instance = LocalBackend().start(server, launch)
    try:
        pid = instance.metadata["pid"]
        assert instance.metadata["start_cpus"] == [0, 1] and "-XX:ActiveProcessorCount=1" in instance.argv
        threads = os.listdir(f"/proc/{pid}/task")
        assert len(threads) > 5 and all(os.sched_getaffinity(int(t)) == {0} for t in threads)
        assert instance.counters().collectors[0].startswith("Serial"), "the one-core ergonomics: SerialGC"
    finally:
        instance.stop()
    # A JVM option of the user's own wins: it starts on its own cores, with the option as given.
    launch = Launch(run_id="own", port=backends.free_port(), cpus=(0,), log_path=tmp_path / "own.log",
                    start_cpus=(1,), jvm_opts=("-XX:ActiveProcessorCount=2",))
    instance = LocalBackend().start(server, launch)
    try:
        assert "start_cpus" not in instance.metadata
        assert os.sched_getaffinity(instance.metadata["pid"]) == {0}
    finally:
        instance.stop()
