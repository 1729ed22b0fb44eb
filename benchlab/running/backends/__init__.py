"""Where a server runs: ``local`` (a pinned process) or ``docker`` (a container with a cpuset).

A backend turns a :class:`~benchlab.running.servers.Server` and a :class:`Launch` into a running
:class:`Instance`. Everything after that (verify, warm-up, load, sampling, stop) goes through the
instance, so ``run()`` does not care which backend it has.
"""

from __future__ import annotations

import inspect

from ...errors import UsageError
from ...schema import BACKENDS
from .base import (
    Backend,
    Instance,
    Launch,
    check_port_free,
    free_port,
    holder,
    port_in_use,
    start_failure_hint,
    wait_ready,
)

__all__ = ["NAMES", "get", "Backend", "Instance", "Launch", "check_port_free", "free_port", "holder", "port_in_use",
           "start_failure_hint", "wait_ready"]

NAMES = BACKENDS


def get(name: str, **options) -> Backend:
    """The backend ``name`` with ``options``, each checked against the ones its constructor names.

    >>> get("local").name
    'local'
    >>> get("local", memory="1g")
    Traceback (most recent call last):
    benchlab.errors.UsageError: the local backend has no option memory: it takes none
    """
    cls: type[Backend]
    if name == "local":
        from .local import LocalBackend

        cls = LocalBackend
    elif name == "docker":
        from .docker import DockerBackend

        cls = DockerBackend
    else:
        raise UsageError(f"unknown backend {name!r}: choose one of {', '.join(NAMES)}")
    accepted = list(inspect.signature(cls).parameters)
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        takes = ", ".join(accepted[:-1]) + " and " + accepted[-1] if len(accepted) > 1 else "".join(accepted) or "none"
        raise UsageError(f"the {name} backend has no option {', '.join(unknown)}: it takes {takes}")
    return cls(**options)
