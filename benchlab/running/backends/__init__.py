"""Where a server runs: ``local`` (a pinned process) or ``docker`` (a container with a cpuset).

A backend turns a :class:`~benchlab.running.servers.Server` and a :class:`Launch` into a running
:class:`Instance`. Everything after that (verify, warm-up, load, sampling, stop) goes through the
instance, so ``run()`` does not care which backend it has.
"""

from __future__ import annotations

from ...errors import UsageError
from ...schema import BACKENDS
from .base import (
    Backend,
    DockerOptions,
    Instance,
    Launch,
    check_port_free,
    free_port,
    holder,
    port_in_use,
    start_failure_hint,
    wait_ready,
)

__all__ = ["NAMES", "get", "Backend", "DockerOptions", "Instance", "Launch", "check_port_free", "free_port", "holder",
           "port_in_use", "start_failure_hint", "wait_ready"]

NAMES = BACKENDS


def get(name: str, docker: DockerOptions | None = None) -> Backend:
    """The backend ``name``, the docker one with its ``docker`` options; given to another backend they are a mistake.

    >>> get("local").name
    'local'
    >>> get("local", DockerOptions(base_image="eclipse-temurin:17-jre"))
    Traceback (most recent call last):
    benchlab.errors.UsageError: the local backend takes no docker option: drop base_image
    """
    docker = docker or DockerOptions()
    if name == "local":
        from .local import LocalBackend

        if docker.given():
            raise UsageError(f"the local backend takes no docker option: drop {', '.join(docker.given())}")
        return LocalBackend()
    if name == "docker":
        from .docker import DockerBackend

        return DockerBackend(docker_host=docker.docker_host, base_image=docker.base_image,
                             load_in_container=docker.load_in_container, load_docker_host=docker.load_docker_host)
    raise UsageError(f"unknown backend {name!r}: choose one of {', '.join(NAMES)}")
