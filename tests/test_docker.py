"""The docker backend against a real engine: servers in containers, wrk local or in a container, cleanup.

The engine is ``$DOCKER_HOST`` when it is set (``.ci/run`` starts one with ``.ci/dockerd.sh``); otherwise
the session starts one itself through ``.ci/dockerd.sh`` and stops it at the end. A missing engine
fails these tests, with the command that starts one: they are never skipped. The "remote" engine is a
second dockerd on its own socket, standing for a second machine.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from docker.errors import NotFound

import benchlab
from benchlab.errors import BuildError, ServerError, ToolMissing, UsageError
from benchlab.running import backends, servers
from benchlab.running.backends import Launch
from benchlab.running.backends.docker import DockerBackend, containers, engine, images
from benchlab.running.measure import measure, new_run_id
from benchlab.running.options import RunOptions
from benchlab.running.spec import prepare

from .conftest import CAPTURES

ROOT = Path(__file__).resolve().parent.parent
DOCKERD = ROOT / ".ci" / "dockerd.sh"
SHORT = dict(connections=32, duration="3s", warmup="1s")


# --- engines --------------------------------------------------------------------------------------------

def _engine(name: str):
    """(docker host url, whether this session started it) for the engine called ``name``."""
    pidfile = Path(f"/run/benchlab-docker/{name}.pid")
    was_running = pidfile.exists() and Path(f"/proc/{pidfile.read_text().strip()}").exists()
    done = subprocess.run(["bash", str(DOCKERD), "start", name], capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.fail(f"could not start docker engine {name!r} with `bash .ci/dockerd.sh start {name}`:\n"
                    f"{done.stderr[-2000:]}", pytrace=False)
    return done.stdout.strip().splitlines()[-1], not was_running


def _stop_engine(name: str) -> None:
    subprocess.run(["bash", str(DOCKERD), "stop", name], capture_output=True, timeout=120)


@pytest.fixture(scope="session")
def docker_host():
    """The engine the tests use: $DOCKER_HOST, or one started here. Fails (never skips) without one."""
    started = False
    host = os.environ.get("DOCKER_HOST")
    if not host:
        host, started = _engine("benchlab")
    try:
        engine.connect(host)
    except ToolMissing as exc:
        pytest.fail(f"the docker tests need a docker engine: {exc}", pytrace=False)
    yield host
    if started:
        _stop_engine("benchlab")


@pytest.fixture(scope="session")
def client(docker_host):
    return engine.connect(docker_host)


@pytest.fixture(scope="session")
def server_images(client, jars):
    """The offline base and the four server images (built only when their inputs changed)."""
    return images.build_servers(client)


@pytest.fixture(scope="session")
def remote_host(jars):
    """A second engine on another socket: the 'remote machine' of the two-machine recipe."""
    host, started = _engine("benchlab-remote")
    yield host
    if started:
        _stop_engine("benchlab-remote")


def labelled(client, run_id: str | None = None) -> list:
    """The benchlab containers on an engine, all of them or those of one run."""
    label = engine.RUN_LABEL + (f"={run_id}" if run_id else "")
    return client.containers.list(all=True, filters={"label": label})


def ours(client) -> list:
    """The labelled containers this test process owns."""
    owner = engine.owner()
    return [c for c in labelled(client) if c.labels.get(engine.OWNER_LABEL) == owner]


def run_watched(spec, directory: Path, client, *, at: str = "verify"):
    """execute() a spec while a thread inspects (through the SDK) every container of the run from phase ``at`` on.

    Returns the run and the inspections, one per container (the load container appears only during load).
    """
    run_id = new_run_id(spec)
    seen: dict[str, dict] = {}
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            try:
                found = labelled(client, run_id)
            except NotFound:  # the SDK inspects each container it lists: one removed in between ends the listing
                found = []
            for container in found:
                if container.id not in seen and container.status == "running":
                    try:
                        seen[container.id] = client.api.inspect_container(container.id)
                    except NotFound:  # removed between the list and the inspect: the run ended
                        pass
            done.wait(0.1)

    watcher = threading.Thread(target=watch, daemon=True)

    def phase(name: str) -> None:
        if name == at:
            watcher.start()

    try:
        record = measure(spec, directory / run_id, run_id=run_id, on_phase=phase)
    finally:
        done.set()
        if watcher.is_alive():
            watcher.join(5)
    return record, list(seen.values())


# --- without an engine: parsers and refusals ---------------------------------------------------------------

def test_parse_stats_of_a_captured_cgroup_v1_sample():
    stats = json.loads((CAPTURES / "docker_stats_cgroup_v1.json").read_text())
    cpu, rss = containers.parse_stats(stats)
    assert cpu == pytest.approx(99.67, abs=0.01)  # one busy core in a cpuset of one
    assert rss == stats["memory_stats"]["stats"]["total_rss"]


def test_parse_stats_without_a_previous_sample_has_no_cpu():
    cpu, rss = containers.parse_stats({"cpu_stats": {"cpu_usage": {"total_usage": 5}, "system_cpu_usage": 9},
                                           "precpu_stats": {"cpu_usage": {"total_usage": 0}},
                                           "memory_stats": {"usage": 100, "stats": {"inactive_file": 40}}})
    assert cpu is None and rss == 60


@pytest.mark.parametrize("text, size", [("512m", 512 * 2**20), ("2g", 2 * 2**30), ("10240k", 10 * 2**20),
                                        (2**30, 2**30)])
def test_parse_memory(text, size):
    assert containers.parse_memory(text) == size


@pytest.mark.parametrize("text", ["lots", "1t", "1m"])
def test_bad_memory_names_the_fix(text):
    with pytest.raises(UsageError, match=r"512m|minimum"):
        containers.parse_memory(text)


def test_engine_off_loopback_needs_allow_remote(tmp_path):
    backend = DockerBackend(docker_host="tcp://192.0.2.10:2375")
    launch = Launch(run_id="remote-test", port=18080, cpus=(0,), log_path=tmp_path / "server.log")
    with pytest.raises(UsageError, match="allow_remote=True"):
        backend.start(servers.get("spring-jetty"), launch)  # refused before any connection is tried
    engine.check_engine("tcp://192.0.2.10:2375", allow_remote=True)
    engine.check_engine("tcp://127.0.0.1:2375", allow_remote=False)
    engine.check_engine("unix:///run/benchlab-docker/benchlab.sock", allow_remote=False)


def test_unreachable_engine_says_how_to_start_one(tmp_path):
    with pytest.raises(ToolMissing, match=r"not reachable at unix:///nonexistent/docker.sock.*dockerd.sh start"):
        engine.connect("unix:///nonexistent/docker.sock")
    launch = Launch(run_id="unreachable-test", port=18080, cpus=(0,), log_path=tmp_path / "server.log")
    with pytest.raises(ToolMissing, match="dockerd.sh start"):
        DockerBackend(docker_host="tcp://127.0.0.1:1").start(servers.get("spring-jetty"), launch)


def test_a_docker_option_given_to_the_local_backend_is_named():
    with pytest.raises(UsageError, match="the local backend takes no docker option: drop docker_host"):
        backends.get("local", backends.DockerOptions(docker_host="unix:///x"))
    assert backends.get("local").load_runner() is None
    docker = backends.get("docker", backends.DockerOptions(load_docker_host="unix:///load.sock"))
    assert docker.load_in_container and docker.load_docker_host == "unix:///load.sock"


def test_the_docker_options_are_the_declared_ones():
    import dataclasses

    from benchlab.running.options import DOCKER_OPTIONS

    assert tuple(f.name for f in dataclasses.fields(backends.DockerOptions)) == DOCKER_OPTIONS


# --- a real engine ------------------------------------------------------------------------------------------

@pytest.mark.docker
@pytest.mark.integration
@pytest.mark.parametrize("server, impl, version, in_container", [
    ("spring-tomcat", "tomcat", "10.1.", False),
    ("spring-jetty", "jetty", "12.0.", False),
    ("spring-undertow", "undertow", "2.3.", True),  # and wrk in its own container, on its own cpuset
    ("spring-webflux", "netty", "1.2.", False),
])
def test_each_server_in_a_container(docker_host, client, server_images, tmp_path, server, impl, version,
                                    in_container):
    spec = prepare(server, "hello", RunOptions(backend="docker", server_cpus="0", load_cpus="1", memory="768m",
                                               docker_host=docker_host, load_in_container=in_container, **SHORT))
    record, containers = run_watched(spec, tmp_path, client, at="measure")

    row = record.to_frame().iloc[0]
    assert row["status"] == "ok" and row["requests"] > 0 and row["rps"] > 0 and row["errors_total"] == 0
    percentiles = [row[p] for p in ("p50", "p75", "p90", "p99", "p999", "p9999")]
    assert all(p > 0 for p in percentiles) and percentiles == sorted(percentiles)
    assert row["server_impl"] == impl and row["server_version"].startswith(version)
    assert row["server_samples"] >= 2 and row["server_cpu_mean"] > 0 and row["server_rss_max"] > 50e6
    assert row["load_samples"] >= 1 and row["startup_ms"] > 0
    assert "Started BenchApplication" in (tmp_path / record.id / "server.log").read_text()

    server_container = next(c for c in containers if c["Config"]["Labels"][engine.ROLE_LABEL] == "server")
    assert server_container["HostConfig"]["CpusetCpus"] == "0"
    assert server_container["HostConfig"]["Memory"] == 768 * 2**20
    assert server_container["HostConfig"]["NetworkMode"] == "host"
    assert server_container["Name"] == f"/benchlab-{record.id}"
    if in_container:
        load_container = next(c for c in containers if c["Config"]["Labels"][engine.ROLE_LABEL] == "load")
        assert load_container["HostConfig"]["CpusetCpus"] == "1"
        assert load_container["Config"]["Cmd"][0] == "wrk"

    backend = record.metadata["backend"]
    assert backend["backend"] == "docker" and backend["engine_version"]
    assert backend["image"] == server_images[server].tag and backend["image_id"].startswith("sha256:")
    assert backend["limits"] == {"cpuset_cpus": "0", "memory": 768 * 2**20, "memory_swap": 768 * 2**20,
                                 "network_mode": "host"}
    assert backend["load_in_container"] is in_container
    assert not labelled(client, record.id), "the run's containers were not removed"


@pytest.mark.docker
@pytest.mark.integration
@pytest.mark.skipif(not shutil.which("nginx"), reason="nginx is not installed: .ci/run installs it")
@pytest.mark.parametrize("server, scenario", [("nginx", "echo"), ("go-nethttp", "sleep")])
def test_each_reference_in_a_container_from_scratch(docker_host, client, tmp_path, server, scenario):
    from benchlab.running.backends.docker import native_images

    image = native_images.build(client, server)
    assert image.size < 30e6, "the binary and what it loads, FROM scratch"
    assert not native_images.build(client, server).built, "tagged by content: built once"
    spec = prepare(server, scenario, RunOptions(backend="docker", server_cpus="0", load_cpus="1",
                                                docker_host=docker_host, **SHORT))
    record, containers = run_watched(spec, tmp_path, client, at="measure")
    row = record.to_frame().iloc[0]
    assert row["status"] == "ok" and row["rps"] > 0 and row["errors_total"] == 0
    assert row["server_impl"] == server and record.metadata["backend"]["image"] == image.tag
    server_container = next(c for c in containers if c["Config"]["Labels"][engine.ROLE_LABEL] == "server")
    assert server_container["HostConfig"]["CpusetCpus"] == "0"
    if server == "nginx":
        assert record.metadata["server"]["worker_processes"] == 1
        assert (tmp_path / record.id / "nginx.conf").is_file(), "its configuration kept beside the run's log"
    else:
        assert record.metadata["server"]["gomaxprocs"] == 1, "GOMAXPROCS follows the container's cpuset"


@pytest.mark.docker
@pytest.mark.integration
@pytest.mark.skipif(not shutil.which("nginx"), reason="nginx is not installed: .ci/run installs it")
@pytest.mark.parametrize("server, protocol, driver", [("spring-undertow", "h2", "h2load"), ("nginx", "https", "wrk")])
def test_a_server_in_a_container_serves_tls_with_the_certificate_copied_in(docker_host, client, server_images,
                                                                             tmp_path, server, protocol, driver):
    """TLS in a container: the comparison's throwaway certificate and key are copied into the container (the engine
    may be another machine's), the server serves them there, and the wire is checked as it is locally."""
    from benchlab.running import protocols
    from benchlab.running.backends.docker import native_images

    if server == "nginx":
        native_images.build(client, server)
    spec = prepare(server, "hello" if server != "nginx" else "echo",
                   RunOptions(backend="docker", protocol=protocol, server_cpus="0", load_cpus="1",
                              docker_host=docker_host, **SHORT))
    record, containers = run_watched(spec, tmp_path, client, at="measure")
    row = record.to_frame().iloc[0]
    assert row["status"] == "ok" and row["requests"] > 0 and row["errors_total"] == 0, row["error"]
    assert record.params["driver"] == driver
    wire = record.metadata["protocol"]
    assert wire["protocol"] == protocol and wire["negotiated"] == ("h2" if protocol == "h2" else "http/1.1"), wire
    assert wire["tls_version"] == "TLSv1.3" and wire["certificate_sha256"] == protocols.certificate()[2], wire
    told = (tmp_path / record.id / "nginx.conf").read_text() if server == "nginx" else \
        " ".join(record.metadata["backend"]["argv"])
    assert "/bench/tls-cert.pem" in told and protocols.certificate()[0] not in told, (
        "the server reads the copy in its container, not this machine's file")
    assert any(c["Config"]["Labels"][engine.ROLE_LABEL] == "server" for c in containers)
    assert not labelled(client, record.id), "the run's containers, and the copies in them, are gone"


@pytest.mark.docker
@pytest.mark.integration
def test_images_are_tagged_by_content(client, server_images):
    again = images.build_servers(client)
    assert all(not image.built for image in again.values())
    assert {name: image.id for name, image in again.items()} == {n: i.id for n, i in server_images.items()}
    base = images.build_base(client)
    assert not base.built and base.size < 120e6
    assert all(tag.split(":")[1] for tag in (base.tag, *(i.tag for i in again.values())))


@pytest.mark.docker
@pytest.mark.integration
def test_image_build_failure_shows_the_log_tail(client, tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM scratch\nCOPY no-such-file /x\n")
    with pytest.raises(BuildError, match="no-such-file"):
        images._build(client, tmp_path, "benchlab/broken:test")


@pytest.mark.docker
@pytest.mark.integration
def test_server_failing_to_start_leaves_no_container(docker_host, client, server_images, tmp_path):
    with pytest.raises(ServerError, match="bad JVM option") as info:
        benchlab.run("spring-jetty", backend="docker", docker_host=docker_host, jvm_opts=["-XX:+NoSuchOption"],
                     results_dir=tmp_path, **SHORT)
    assert not ours(client)
    assert "NoSuchOption" in str(info.value), "the error carries the server log's last lines"
    assert not list(tmp_path.iterdir()), "a run that failed leaves no directory"


@pytest.mark.docker
@pytest.mark.integration
def test_memory_too_small_for_the_jvm_names_the_fix(docker_host, client, server_images, tmp_path):
    with pytest.raises(ServerError, match=r"out of memory at memory='40m'.*raise memory="):
        benchlab.run("spring-tomcat", backend="docker", docker_host=docker_host, memory="40m",
                     results_dir=tmp_path, **SHORT)
    assert not ours(client)


@pytest.mark.docker
@pytest.mark.integration
def test_cpuset_that_does_not_exist(docker_host, client, server_images, tmp_path):
    count = client.info()["NCPU"]
    with pytest.raises(UsageError, match=rf"cpuset {count + 5} does not exist.*{count} CPUs"):
        backend = DockerBackend(docker_host=docker_host)
        backend.start(servers.get("spring-jetty"),
                      Launch(run_id="cpuset-test", port=18080, cpus=(count + 5,), log_path=tmp_path / "server.log"))
    with pytest.raises(UsageError, match="does not have"):
        benchlab.run("spring-jetty", backend="docker", docker_host=docker_host, server_cpus=str(count + 5),
                     results_dir=tmp_path, **SHORT)
    assert not ours(client)


@pytest.mark.docker
@pytest.mark.integration
def test_run_refuses_an_engine_off_loopback_and_accepts_it_with_allow_remote(jars, tmp_path):
    with pytest.raises(UsageError, match="allow_remote=True"):
        benchlab.run("spring-jetty", backend="docker", docker_host="tcp://192.0.2.10:2375", results_dir=tmp_path,
                     **SHORT)
    with pytest.raises(ToolMissing, match="not reachable at tcp://127.0.0.1:1"):  # loopback: no allow_remote needed
        benchlab.run("spring-jetty", backend="docker", docker_host="tcp://127.0.0.1:1", results_dir=tmp_path, **SHORT)


@pytest.mark.docker
@pytest.mark.integration
def test_interrupted_run_leaves_no_container(docker_host, client, server_images, tmp_path):
    """A Ctrl-C (a real SIGINT, from a timer) during the measured phase stops and removes the container."""
    spec = prepare("spring-undertow", "hello", RunOptions(backend="docker", connections=32, duration="20s", warmup=0,
                                                          docker_host=docker_host))
    run_id = new_run_id(spec)
    seen = {}

    def phase(name: str) -> None:
        if name == "measure":
            seen["running"] = [c.name for c in labelled(client, run_id)]
            threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()

    with pytest.raises(KeyboardInterrupt):
        measure(spec, tmp_path / run_id, run_id=run_id, on_phase=phase)
    assert seen["running"] == [f"benchlab-{run_id}"]
    assert not labelled(client, run_id) and not ours(client)


@pytest.mark.docker
@pytest.mark.integration
def test_interrupted_compare_leaves_no_container(docker_host, client, server_images, tmp_path):
    timer = threading.Timer(12.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            benchlab.compare(["spring-tomcat", "spring-jetty"], repeats=3, duration="5s", warmup="1s",
                             connections=(16,), backend="docker", docker_host=docker_host, progress=False,
                             results_dir=tmp_path)
    finally:
        timer.cancel()
    assert not ours(client)


@pytest.mark.docker
@pytest.mark.integration
def test_stale_container_of_a_killed_process_is_removed_at_start(docker_host, client, server_images):
    """A process that labelled a container and was killed leaves it; the next backend removes it."""
    wrk = images.build_wrk(client)
    suffix = secrets.token_hex(3)
    script = (
        "import sys, time\n"
        "from benchlab.running.backends.docker import engine as d\n"
        "c = d.connect(sys.argv[1])\n"
        "box = c.containers.create(sys.argv[2], command=['wrk', '-v'], name='benchlab-stale-' + sys.argv[3],\n"
        "                          labels={d.RUN_LABEL: 'stale-' + sys.argv[3], d.OWNER_LABEL: d.owner()})\n"
        "print(box.id, flush=True)\n"
        "time.sleep(600)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script, docker_host, wrk.tag, suffix], stdout=subprocess.PIPE,
                             text=True, cwd=ROOT)
    try:
        stale_id = child.stdout.readline().strip()
    finally:
        child.kill()  # SIGKILL: no cleanup runs in it
        child.wait()
    mine = client.containers.create(wrk.tag, command=["wrk", "-v"], name=f"benchlab-live-{suffix}",
                                    labels={engine.RUN_LABEL: f"live-{suffix}",
                                            engine.OWNER_LABEL: engine.owner()})
    try:
        assert [c.id for c in labelled(client, f"stale-{suffix}")] == [stale_id]
        backend = DockerBackend(docker_host=docker_host)
        backend.client  # noqa: B018 - connecting is the backend's start-up
        assert f"benchlab-stale-{suffix}" in backend.removed_stale
        assert not labelled(client, f"stale-{suffix}")
        assert [c.id for c in labelled(client, f"live-{suffix}")] == [mine.id], "a live process's container was removed"
    finally:
        mine.remove(force=True)


@pytest.mark.docker
@pytest.mark.integration
@pytest.mark.parametrize("load", ["local wrk", "wrk in a container on the first engine"])
def test_server_on_a_second_engine(docker_host, client, remote_host, jars, tmp_path, load):
    """The two-machine recipe on one machine: the server on the 'remote' engine; wrk here, or on the other engine."""
    remote = engine.connect(remote_host)
    images.build_servers(remote)  # the base comes from the jlink cache: no second jlink
    options = {"docker_host": remote_host}
    if load != "local wrk":
        options["load_docker_host"] = docker_host
    spec = prepare("spring-tomcat", "hello", RunOptions.of(backend="docker", server_cpus="0", load_cpus="1",
                                                           **options, **SHORT))
    record, containers = run_watched(spec, tmp_path, remote, at="measure")
    assert record.metrics["rps"] > 0 and record.metrics["server_samples"] >= 2
    assert [c["Name"] for c in containers] == [f"/benchlab-{record.id}"]  # only the server is on that engine
    backend = record.metadata["backend"]
    assert backend["docker_host"] == remote_host
    assert backend["load_in_container"] is (load != "local wrk")
    if load != "local wrk":
        assert backend["load_docker_host"] == docker_host and record.metrics["load_samples"] >= 1
    assert not labelled(remote, record.id) and not labelled(client, record.id)
