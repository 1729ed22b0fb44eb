"""The docker backend: the server (and, if asked, wrk) in a container with a cpuset and a memory limit.

Everything goes through the docker SDK. Containers use the host's network, so the server binds
127.0.0.1 as it does locally and no port is published. Each container is named ``benchlab-<run id>``
and labelled ``benchlab.run=<run id>`` plus ``benchlab.owner=<hostname>:<pid>:<process start time>``;
a backend that starts removes the labelled containers whose owner process is gone (a killed kernel,
a SIGKILL), and every container it starts itself is removed however the run ends.

The engine is ``docker_host`` (a ``unix://``, ``tcp://`` or ``ssh://`` url), else ``$DOCKER_HOST``,
else the default socket. An engine on another machine runs the server there: the server then binds
that machine's address and the load goes to it, which needs ``allow_remote=True``.
"""

from __future__ import annotations

import ipaddress
import os
import platform
import re
import socket
import threading
import time
import urllib.parse
from pathlib import Path

from .. import images
from ..cores import format_cpus
from ..errors import LoadError, ServerError, ToolMissing, UsageError, tail
from . import Launch, check_port_free, start_failure_hint, wait_ready

RUN_LABEL = "benchlab.run"
OWNER_LABEL = "benchlab.owner"
ROLE_LABEL = "benchlab.role"
DEFAULT_SOCKET = "unix:///var/run/docker.sock"
START_ENGINE = ("start one with `bash .ci/dockerd.sh start` and export the DOCKER_HOST it prints, "
                "or pass docker_host=")
JAR_IN_IMAGE = "/app/server.jar"
MIN_MEMORY = 6 * 2**20  # the engine refuses less


# --- the engine -----------------------------------------------------------------------------------------

def engine_url(docker_host: str | None) -> str:
    return docker_host or os.environ.get("DOCKER_HOST") or DEFAULT_SOCKET


def engine_address(docker_host: str | None) -> str | None:
    """The address of the engine's machine, or None when it is this machine (a socket or loopback)."""
    parts = urllib.parse.urlsplit(engine_url(docker_host))
    if parts.scheme in ("unix", "npipe", "") or not parts.hostname:
        return None
    try:
        address = socket.gethostbyname(parts.hostname)
    except OSError:
        raise UsageError(f"docker_host {engine_url(docker_host)}: cannot resolve {parts.hostname}") from None
    return None if ipaddress.ip_address(address).is_loopback else address


def check_engine(docker_host: str | None, *, allow_remote: bool, role: str = "server") -> None:
    """Refuse an engine on another machine unless ``allow_remote``: load would go off this machine."""
    address = engine_address(docker_host)
    if address and not allow_remote:
        raise UsageError(
            f"the {role} engine {engine_url(docker_host)} is another machine ({address}): load would leave "
            "this machine, so pass allow_remote=True (--allow-remote) if you own both"
        )


def connect(docker_host: str | None = None, *, timeout: float = 120.0):
    """A docker client for ``docker_host`` that has answered a ping, or :class:`ToolMissing` saying how to start one.

    Example
    -------
    >>> connect("unix:///run/benchlab-docker/benchlab.sock").ping()   # doctest: +SKIP
    True
    """
    try:
        import docker
    except ImportError:
        raise ToolMissing("the docker Python SDK is missing: pip install docker") from None
    url = engine_url(docker_host)
    try:
        client = docker.DockerClient(base_url=url, timeout=timeout, use_ssh_client=url.startswith("ssh://"))
        client.ping()
    except Exception as exc:  # the SDK raises DockerException, requests errors or OSError alike here
        reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise ToolMissing(f"docker is not reachable at {url} ({reason}): {START_ENGINE}") from None
    return client


def _owner() -> str:
    import psutil

    return f"{platform.node()}:{os.getpid()}:{psutil.Process().create_time():.2f}"


def _owner_gone(owner: str | None) -> bool:
    """True when the process that labelled a container is not running any more (on this machine)."""
    import psutil

    if not owner:
        return True
    host, _, rest = owner.partition(":")
    pid, _, started = rest.partition(":")
    if host != platform.node():
        return False  # another machine's run on a shared engine: not ours to judge
    try:
        return f"{psutil.Process(int(pid)).create_time():.2f}" != started
    except (psutil.Error, ValueError):
        return True


def remove_stale(client) -> list[str]:
    """Remove labelled containers whose owner process is gone; return their names."""
    import docker

    removed = []
    for container in client.containers.list(all=True, filters={"label": RUN_LABEL}):
        if _owner_gone(container.labels.get(OWNER_LABEL)):
            try:
                container.remove(force=True)
                removed.append(container.name)
            except docker.errors.NotFound:
                pass
    return removed


def container_name(run_id: str, suffix: str = "") -> str:
    return "benchlab-" + re.sub(r"[^a-zA-Z0-9_.-]", "_", run_id) + suffix


def parse_memory(memory: str | int | None) -> int | None:
    """Bytes from ``"512m"``, ``"2g"``, ``"1024k"`` or an int, as docker reads a memory limit."""
    if memory is None:
        return None
    if isinstance(memory, int) and not isinstance(memory, bool):
        size = memory
    else:
        found = re.fullmatch(r"\s*(\d+)\s*([bkmg]?)b?\s*", str(memory).lower())
        if not found:
            raise UsageError(f"bad memory {memory!r}: give a size such as 512m or 2g")
        size = int(found.group(1)) * {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30}[found.group(2)]
    if size < MIN_MEMORY:
        raise UsageError(f"memory {memory!r} is below docker's minimum of 6m; a Spring Boot server needs 256m or more")
    return size


# --- sampling -------------------------------------------------------------------------------------------

def parse_stats(stats: dict) -> tuple[float | None, float | None]:
    """(cpu %, memory bytes) from one sample of the engine's stats stream; 100 % is one busy core.

    CPU is the container's share of the host's CPU time since the previous sample, times the online
    CPUs (as ``docker stats`` computes it); memory is the resident set (cgroup v1 ``total_rss``, v2
    ``anon``), the number psutil's RSS gives for a local process.
    """
    cpu, pre = stats.get("cpu_stats") or {}, stats.get("precpu_stats") or {}
    percent = None
    if pre.get("system_cpu_usage") and cpu.get("system_cpu_usage"):
        used = cpu["cpu_usage"]["total_usage"] - pre["cpu_usage"]["total_usage"]
        system = cpu["system_cpu_usage"] - pre["system_cpu_usage"]
        online = cpu.get("online_cpus") or len(cpu["cpu_usage"].get("percpu_usage") or ()) or 1
        if system > 0:
            percent = used / system * online * 100.0
    memory = stats.get("memory_stats") or {}
    detail = memory.get("stats") or {}
    rss = next((detail[k] for k in ("total_rss", "rss", "anon") if k in detail), None)
    if rss is None and "usage" in memory:
        rss = memory["usage"] - detail.get("total_inactive_file", detail.get("inactive_file", 0))
    return percent, (float(rss) if rss is not None else None)


class ContainerStats:
    """A probe on the engine's stats stream (one sample a second, read by a thread).

    Each sample is handed to the monitor once, so the monitor stamps it with its own clock; between
    samples the probe returns ``(None, None)``, which the monitor skips.
    """

    def __init__(self, client, container_id: str):
        self._latest: tuple[float | None, float | None] | None = None
        self._lock = threading.Lock()
        self._stream = client.api.stats(container_id, stream=True, decode=True)
        self._thread = threading.Thread(target=self._read, name="benchlab-docker-stats", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for stats in self._stream:  # ends when the container stops
                sample = parse_stats(stats)
                if sample[0] is not None:
                    with self._lock:
                        self._latest = sample
        except Exception:  # the container was removed under the stream: sampling just ends
            pass

    def __call__(self) -> tuple[float | None, float | None]:
        with self._lock:
            sample, self._latest = self._latest, None
        return sample or (None, None)


# --- the server container -------------------------------------------------------------------------------

def _is_not_found(exc: Exception) -> bool:
    import docker

    return isinstance(exc, docker.errors.NotFound)


class DockerInstance:
    """One server container: created, started, waited for, sampled, stopped and removed."""

    def __init__(self, client, server, launch: Launch, image: images.Image, *, url: str, bind: str,
                 labels: dict, grace: float):
        self.client = client
        self.server = server
        self.launch = launch
        self.image = image
        self.url = url
        self.name = container_name(launch.run_id)
        self.grace = grace
        self.startup_ms = 0.0
        self.container = None
        self._stats: ContainerStats | None = None
        self._exited = threading.Event()
        self._stopped = False
        self.command = [*launch.jvm_opts, "-jar", JAR_IN_IMAGE, f"--server.port={launch.port}",
                        f"--server.address={bind}"]
        memory = parse_memory(launch.memory)
        self.metadata: dict = {"container": self.name, "image": image.tag, "image_id": image.id,
                               "argv": ["java", *self.command], "cpus": list(launch.cpus)}
        self._began = time.monotonic()
        self.container = client.containers.create(
            image.tag, entrypoint=["java"], command=self.command, name=self.name, labels=labels,
            network_mode="host", cpuset_cpus=format_cpus(launch.cpus), mem_limit=memory, memswap_limit=memory,
            detach=True,
        )
        self.metadata["container_id"] = self.container.id
        self.container.start()
        threading.Thread(target=self._watch_exit, name="benchlab-docker-wait", daemon=True).start()

    def _watch_exit(self) -> None:
        # One long-polling wait instead of an inspect every 10 ms while the server starts.
        import requests

        while not self._stopped:
            try:
                self.client.api.wait(self.container.id, timeout=60)
                break
            except requests.exceptions.RequestException:
                time.sleep(0.1)  # the wait timed out (the container still runs) or the engine hiccuped
                continue
            except Exception:
                break
        self._exited.set()

    def wait(self) -> None:
        ready = self.url + (self.server.ready_path or self.server.path)
        wait_ready(ready, timeout=self.launch.startup_timeout, alive=self.alive, on_exit=self._exit_error)
        self.startup_ms = (time.monotonic() - self._began) * 1000.0
        self._stats = ContainerStats(self.client, self.container.id)
        attrs = self.client.api.inspect_container(self.container.id)
        host = attrs["HostConfig"]
        self.metadata.update(limits={"cpuset_cpus": host.get("CpusetCpus"), "memory": host.get("Memory") or None,
                                     "memory_swap": host.get("MemorySwap") or None,
                                     "network_mode": host.get("NetworkMode")},
                             image_digests=self.client.images.get(self.image.tag).attrs.get("RepoDigests") or [],
                             image_digest=self.image.id)

    def probe(self) -> tuple[float | None, float | None]:
        return self._stats() if self._stats else (None, None)

    def alive(self) -> bool:
        return self.container is not None and not self._exited.is_set()

    def _exit_error(self) -> ServerError:
        state = self.client.api.inspect_container(self.container.id)["State"]
        log = self._save_log()
        code, oom = state.get("ExitCode"), state.get("OOMKilled")
        if oom or code == 137 or "OutOfMemoryError" in log or "Could not reserve enough space" in log:
            hint = (f" - out of memory at memory={self.launch.memory!r} (OOM-killed: {bool(oom)}): raise memory= "
                    "(Spring Boot needs about 256m) or leave it unset")
        else:
            hint = start_failure_hint(log)
        return ServerError(
            f"{self.server.name} exited during start in container {self.name} (exit {code}){hint}\n"
            f"  last lines of {self.launch.log_path}:\n{tail(log, 12)}"
        )

    def _save_log(self) -> str:
        try:
            log = self.container.logs(stdout=True, stderr=True).decode(errors="replace")
        except Exception as exc:
            if not _is_not_found(exc):
                raise
            return Path(self.launch.log_path).read_text(errors="replace") if Path(self.launch.log_path).exists() else ""
        Path(self.launch.log_path).write_text(log)
        return log

    def stop(self) -> None:
        """Stop (SIGTERM, SIGKILL after the grace period), keep the log, remove; safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        container = self.container
        try:
            if container is None:
                container = self.client.containers.get(self.name)  # interrupted between create and return
            container.stop(timeout=int(self.grace))
            self._save_log()
            state = self.client.api.inspect_container(container.id)["State"]
            self.metadata.update(exit_code=state.get("ExitCode"), oom_killed=state.get("OOMKilled"))
        except Exception as exc:
            if not _is_not_found(exc):
                raise
        finally:
            _remove(self.client, container, self.name)


# --- load in a container --------------------------------------------------------------------------------

class ContainerLoad:
    """Runs the load tool's argv in its own container with its own cpuset: a ``drivers.execute`` runner.

    Files of the run directory named on the command line (wrk's Lua script) are copied into the
    container, so this works on an engine on another machine too.
    """

    def __init__(self, client, *, run_id: str, labels: dict):
        self.client = client
        self.run_id = run_id
        self.labels = labels
        self.count = 0
        self.image = images.build_wrk(client)

    def __call__(self, argv: list[str], *, cpus, timeout: float, monitor=None, workdir: Path | None = None):
        import requests

        from ..process import Finished

        tool = Path(argv[0]).name
        if tool != "wrk":
            raise UsageError(f"load in a container runs wrk only, not {tool}: use driver='wrk' or a local load tool")
        files: dict[str, bytes] = {}
        command = [tool]
        for arg in argv[1:]:
            path = Path(arg)
            if workdir is not None and path.is_file() and path.resolve().parent == Path(workdir).resolve():
                files[path.name] = path.read_bytes()
                command.append(f"/bench/{path.name}")
            else:
                command.append(arg)
        self.count += 1
        name = container_name(self.run_id, f"-load-{self.count}")
        began = time.monotonic()
        container = None
        try:
            container = self.client.containers.create(
                self.image.tag, command=command, name=name, labels={**self.labels, ROLE_LABEL: "load"},
                network_mode="host", cpuset_cpus=format_cpus(cpus) if cpus else None, detach=True,
            )
            container.put_archive("/bench", _tar(files))
            container.start()
            if monitor is not None:
                monitor.watch("load", ContainerStats(self.client, container.id))
            try:
                status = container.wait(timeout=timeout)["StatusCode"]
            except requests.exceptions.RequestException:
                raise LoadError(f"{tool} in container {name} did not finish within {timeout:.0f} s and was removed: "
                                f"{' '.join(command)}") from None
            stdout = container.logs(stdout=True, stderr=False).decode(errors="replace")
            stderr = container.logs(stdout=False, stderr=True).decode(errors="replace")
        finally:
            _remove(self.client, container, name)
        return Finished(tuple(command), status, stdout, stderr, time.monotonic() - began)


def _remove(client, container, name: str) -> None:
    """Remove a container by its id, or by its exact name when an interrupt came before the id was known."""
    try:
        (container or client.containers.get(name)).remove(force=True)
    except Exception as exc:
        if not _is_not_found(exc) and "already in progress" not in str(exc):
            raise


def _tar(files: dict[str, bytes]) -> bytes:
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(content), 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


# --- the backend ----------------------------------------------------------------------------------------

class DockerBackend:
    """Start the built-in servers in containers on a docker engine, through the SDK.

    Parameters
    ----------
    docker_host : the server's engine (``unix://``, ``tcp://``, ``ssh://``); default ``$DOCKER_HOST``
    base_image : the server images' base, e.g. ``"eclipse-temurin:17-jre"``; default the offline base
                 that ``benchlab image base`` builds (and this builds when it is missing)
    load_in_container : run wrk in its own container (with the load cores as its cpuset)
    load_docker_host : the load container's engine (implies ``load_in_container``); default the server's
    stop_grace : seconds between SIGTERM and SIGKILL when the server stops

    Example
    -------
    >>> import benchlab
    >>> benchlab.run("spring-jetty", backend="docker", memory="1g", duration="5s",
    ...              docker_host="unix:///run/benchlab-docker/benchlab.sock")   # doctest: +SKIP
    """

    name = "docker"

    def __init__(self, *, docker_host: str | None = None, base_image: str | None = None,
                 load_in_container: bool = False, load_docker_host: str | None = None, stop_grace: float = 10.0,
                 **unknown):
        if unknown:
            raise UsageError(f"the docker backend has no option {', '.join(sorted(unknown))}: it takes docker_host, "
                             "base_image, load_in_container, load_docker_host and stop_grace")
        self.docker_host = engine_url(docker_host)
        self.base_image = base_image
        self.load_docker_host = engine_url(load_docker_host) if load_docker_host else None
        self.load_in_container = bool(load_in_container or load_docker_host)
        self.stop_grace = stop_grace
        self.removed_stale: list[str] = []
        self._client = None
        self._load_client = None
        self._version: dict = {}
        self._info: dict = {}
        self._run_id: str | None = None

    @property
    def client(self):
        """The server engine's client, connected on first use: the remote-engine check comes first."""
        if self._client is None:
            self._client = connect(self.docker_host)
            self._version = self._client.version()
            self._info = self._client.info()
            self.removed_stale = remove_stale(self._client)
        return self._client

    def _check_cpus(self, cpus: tuple[int, ...], role: str) -> None:
        count = int(self._info.get("NCPU") or 0)
        missing = sorted(c for c in cpus if count and not 0 <= c < count)
        if missing:
            raise UsageError(
                f"cpuset {format_cpus(missing)} does not exist on the docker engine's machine, which has {count} "
                f"CPUs (0-{count - 1}): pick {role}_cpus among those"
            )

    def start(self, server, launch: Launch) -> DockerInstance:
        import docker

        if server.kind != "spring":
            raise UsageError(f"the docker backend runs the built-in servers ({', '.join(('spring-tomcat', 'spring-jetty', 'spring-undertow'))}); "
                             f"run {server.name} with backend='local'")
        check_engine(self.docker_host, allow_remote=launch.allow_remote)
        if self.load_docker_host:
            check_engine(self.load_docker_host, allow_remote=launch.allow_remote, role="load")
        self.client  # noqa: B018 - connect now, after the checks that need no engine
        self._check_cpus(launch.cpus, "server")
        parse_memory(launch.memory)
        image = images.build_server(self.client, server, base_image=self.base_image)
        remote = engine_address(self.docker_host)
        bind = remote or launch.host
        if remote is None:
            check_port_free(launch.port, launch.host)
        self._run_id = launch.run_id
        labels = {RUN_LABEL: launch.run_id, OWNER_LABEL: _owner(), ROLE_LABEL: "server"}
        instance = None
        try:
            instance = DockerInstance(self.client, server, launch, image, url=f"http://{bind}:{launch.port}",
                                      bind=bind, labels=labels, grace=self.stop_grace)
            instance.wait()
        except docker.errors.APIError as exc:
            self._remove_by_name(instance, launch.run_id)
            explanation = str(exc.explanation or exc)
            if "cpuset" in explanation.lower() or "Requested CPUs are not available" in explanation:
                raise UsageError(f"cpuset {format_cpus(launch.cpus)} is not available on the docker engine: "
                                 f"{explanation}; pick server_cpus among the engine's CPUs") from None
            if "memory" in explanation.lower():
                raise UsageError(f"memory={launch.memory!r} refused by the docker engine: {explanation}") from None
            raise ServerError(f"docker could not start {server.name}: {explanation}") from None
        except BaseException:
            self._remove_by_name(instance, launch.run_id)
            raise
        return instance

    def _remove_by_name(self, instance: DockerInstance | None, run_id: str) -> None:
        if instance is not None:
            instance.stop()
        else:  # interrupted before the instance existed: its container may exist all the same
            _remove(self.client, None, container_name(run_id))

    def load_runner(self):
        """The runner that puts wrk in its own container, or None for a local wrk process."""
        if not self.load_in_container:
            return None
        if self._load_client is None:
            self._load_client = connect(self.load_docker_host) if self.load_docker_host else self.client
            if self.load_docker_host:
                remove_stale(self._load_client)
        labels = {RUN_LABEL: self._run_id or "unknown", OWNER_LABEL: _owner()}
        return ContainerLoad(self._load_client, run_id=self._run_id or "unknown", labels=labels)

    def metadata(self) -> dict:
        self.client  # noqa: B018
        version, info = self._version, self._info
        return {
            "backend": "docker",
            "docker_host": self.docker_host,
            "engine_version": version.get("Version"),
            "engine_api_version": version.get("ApiVersion"),
            "engine_os": info.get("OperatingSystem"),
            "engine_kernel": info.get("KernelVersion"),
            "engine_cpus": info.get("NCPU"),
            "engine_memory": info.get("MemTotal"),
            "engine_cgroup": info.get("CgroupVersion"),
            "storage_driver": info.get("Driver"),
            "base_image": self.base_image or images.BASE_REPOSITORY,
            "load_in_container": self.load_in_container,
            "load_docker_host": self.load_docker_host,
            "hostname": platform.node(),
            "removed_stale": self.removed_stale,
        }
