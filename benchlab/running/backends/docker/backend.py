"""The docker backend: the server (and, if asked, wrk) in a container with a cpuset and a memory limit."""

from __future__ import annotations

import platform

from ....cores import format_cpus
from ....errors import ServerError, UsageError
from ... import servers
from ..base import Launch, check_port_free
from . import images, native_images
from .containers import ContainerLoad, DockerInstance, parse_memory
from .engine import (
    OWNER_LABEL,
    ROLE_LABEL,
    RUN_LABEL,
    check_engine,
    connect,
    container_name,
    engine_address,
    engine_url,
    owner,
    remove,
    remove_stale,
)


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
                 load_in_container: bool = False, load_docker_host: str | None = None, stop_grace: float = 10.0):
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

        if not server.builtin:
            raise UsageError(f"the docker backend runs the built-in servers ({', '.join(servers.BUILTINS)}); "
                             f"run {server.name} with backend='local'")
        check_engine(self.docker_host, allow_remote=launch.allow_remote)
        if self.load_docker_host:
            check_engine(self.load_docker_host, allow_remote=launch.allow_remote, role="load")
        self.client  # noqa: B018 - connect now, after the checks that need no engine
        self._check_cpus(launch.cpus, "server")
        parse_memory(launch.memory)
        image = native_images.build(self.client, server, base_image=self.base_image)
        remote = engine_address(self.docker_host)
        bind = remote or launch.address
        if remote is None:
            check_port_free(launch.port, launch.address)
        self._run_id = launch.run_id
        labels = {RUN_LABEL: launch.run_id, OWNER_LABEL: owner(), ROLE_LABEL: "server"}
        instance = None
        try:
            url = f"{launch.listener.scheme}://{bind}:{launch.port}"  # https over TLS, as the load must ask
            instance = DockerInstance(self.client, server, launch, image, url=url, bind=bind, labels=labels,
                                      grace=self.stop_grace)
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
            remove(self.client, None, container_name(run_id))

    def load_runner(self):
        """The runner that puts wrk in its own container, or None for a local wrk process."""
        if not self.load_in_container:
            return None
        if self._load_client is None:
            self._load_client = connect(self.load_docker_host) if self.load_docker_host else self.client
            if self.load_docker_host:
                remove_stale(self._load_client)
        labels = {RUN_LABEL: self._run_id or "unknown", OWNER_LABEL: owner()}
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
