"""The docker engine: which one (``docker_host``), connecting to it, and the labels that find stale containers.

Each container is named ``benchlab-<run id>`` and labelled ``benchlab.run=<run id>`` plus
``benchlab.owner=<hostname>:<pid>:<process start time>``; a backend that starts removes the labelled
containers whose owner process is gone (a killed kernel, a SIGKILL).

The engine is ``docker_host`` (a ``unix://``, ``tcp://`` or ``ssh://`` url), else ``$DOCKER_HOST``,
else the default socket. An engine on another machine needs ``allow_remote=True``.
"""

from __future__ import annotations

import io
import ipaddress
import os
import platform
import re
import socket
import tarfile
import time
import urllib.parse

from ....errors import ToolMissing, UsageError

RUN_LABEL = "benchlab.run"
OWNER_LABEL = "benchlab.owner"
ROLE_LABEL = "benchlab.role"
DEFAULT_SOCKET = "unix:///var/run/docker.sock"
START_ENGINE = ("start one with `bash .ci/dockerd.sh start` and export the DOCKER_HOST it prints, "
                "or pass docker_host=")


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
        # tcp:// with DOCKER_TLS_VERIFY and DOCKER_CERT_PATH set: TLS, with that client certificate (docs/scale-out.md)
        tls = docker.utils.kwargs_from_env().get("tls", False) if url.startswith("tcp://") else False
        client = docker.DockerClient(base_url=url, timeout=timeout, tls=tls, use_ssh_client=url.startswith("ssh://"))
        client.ping()
    except Exception as exc:  # the SDK raises DockerException, requests errors or OSError alike here
        reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise ToolMissing(f"docker is not reachable at {url} ({reason}): {START_ENGINE}") from None
    return client


def owner() -> str:
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
    """Remove labelled containers whose owner process is gone; return their names.

    The engine's own list, not the SDK's ``containers.list``, which inspects each container it lists: one that
    another process removes in between raised NotFound out of the listing (seen in CI, in a test's watcher)."""
    import docker

    removed = []
    for found in client.api.containers(all=True, filters={"label": RUN_LABEL}):
        if _owner_gone((found.get("Labels") or {}).get(OWNER_LABEL)):
            try:
                client.api.remove_container(found["Id"], force=True)
                removed.append((found.get("Names") or ["/" + found["Id"][:12]])[0].lstrip("/"))
            except docker.errors.NotFound:
                pass
    return removed


def container_name(run_id: str, suffix: str = "") -> str:
    return "benchlab-" + re.sub(r"[^a-zA-Z0-9_.-]", "_", run_id) + suffix


def is_not_found(exc: Exception) -> bool:
    import docker

    return isinstance(exc, docker.errors.NotFound)


def remove(client, container, name: str) -> None:
    """Remove a container by its id, or by its exact name when an interrupt came before the id was known."""
    try:
        (container or client.containers.get(name)).remove(force=True)
    except Exception as exc:  # only a container already gone, or already being removed, is kept
        if not is_not_found(exc) and "already in progress" not in str(exc):
            raise


def archive(files: dict[str, bytes], *, folder: str) -> bytes:
    """A tar of ``folder`` holding ``files``, as a container's ``put_archive("/", ...)`` takes it: the folder comes
    with them, so an image need not have it."""
    folder = folder.lstrip("/")  # the tar's names are relative to the root it is put in
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        made = tarfile.TarInfo(folder)
        made.type, made.mode, made.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
        tar.addfile(made)
        for name, content in files.items():
            info = tarfile.TarInfo(f"{folder}/{name}")
            info.size, info.mode, info.mtime = len(content), 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()
